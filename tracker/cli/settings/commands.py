"""`gpu-tracker config schema` prints config.toml's JSON Schema for editors; `gpu-tracker config
check [FILE]` reads a config the way every command does, and runs nothing (docs/configuration.md,
"Editors and the schema")."""

from __future__ import annotations

import json
from pathlib import Path

import click

from collectors.common import ConfigError
from tracker import config as config_mod
from tracker.cli.common import EXIT_USAGE, fail, out
from tracker.cli.options import chosen


@click.group("config")
def config() -> None:
    """The configuration file: its JSON Schema, and a check that runs nothing."""


@config.command("schema")
def schema() -> None:
    """Print the JSON Schema of config.toml (for editors: docs/configuration.md)."""
    from tracker.config.schema import config_schema

    click.echo(json.dumps(config_schema(), indent=2, ensure_ascii=False))


@config.command("check")
@click.argument("file", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.pass_context
def check(ctx: click.Context, file: Path | None) -> None:
    """Check FILE (default: --config, else ./config.toml) as every command reads it: exit 0, or
    exit 2 with one line naming the file and the key. Nothing is collected, sent or written."""
    path = file or chosen(ctx, "config_path")
    if path is None and not config_mod.DEFAULT_CONFIG.exists():
        fail(ctx, f"no {config_mod.DEFAULT_CONFIG} here: name the file to check", EXIT_USAGE)
    path = Path(path or config_mod.DEFAULT_CONFIG)
    if not path.is_file():
        fail(ctx, f"{path}: no such file", EXIT_USAGE)
    try:
        loaded = config_mod.load(path)
    except ConfigError as exc:
        fail(ctx, str(exc), EXIT_USAGE)
    enabled = [p.name for p in loaded.enabled()]
    rules = len(loaded.alerts.rules)
    out(ctx).print(
        f"{path}: ok ({len(enabled)} providers enabled: {', '.join(enabled) or 'none'}; "
        f"{rules} alert rules)",
        highlight=False,
        soft_wrap=True,
    )
