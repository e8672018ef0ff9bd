"""What every `gpu-tracker` subcommand module shares: loading the config, failing clearly."""

from __future__ import annotations

import sys
from typing import NoReturn

import click
from rich.markup import escape

from collectors.common import ConfigError
from tracker import config as config_mod

EXIT_FAILED, EXIT_USAGE = 1, 2


def load_config(ctx: click.Context) -> config_mod.Config:
    """The config named by --config (exit 2 naming the key when it is wrong)."""
    try:
        return config_mod.load(ctx.obj["config_path"])
    except ConfigError as exc:
        fail(ctx, str(exc), EXIT_USAGE)


def fail(ctx: click.Context, message: str, code: int) -> NoReturn:
    # Messages quote config keys like [providers.aws]: not markup.
    ctx.obj["err"].print(f"[bold red]error:[/] {escape(message)}", highlight=False)
    sys.exit(code)
