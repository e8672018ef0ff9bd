"""The options every `gpu-tracker` command shares: `--config`, `--db` and `-v`, accepted before
or after the command, and the logging they set up.

Each global option is declared on the group and on every subcommand; their values land in
`ctx.meta`, which all the contexts of one invocation share. The command line is parsed left to
right, so a value given after the command (the subcommand's) replaces one given before it.
The filter types (`--gpu`, `--kind`, ranges) are the questions' (`tracker.questions.types`),
shared with the web dashboard.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import click

_META_KEY = "gpu_tracker.options"
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def chosen(ctx: click.Context, name: str) -> Any:
    """The value of global option `name` (`config_path`, `db`, `verbose`), None when not given."""
    return ctx.meta.get(_META_KEY, {}).get(name)


def _remember(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    if value is None or value is False:  # not given here: keep what an earlier place gave
        return value
    ctx.meta.setdefault(_META_KEY, {})[param.name] = value
    if param.name == "verbose" and ctx.parent is not None:
        setup_logging(verbose=True)  # given after the command: the group has set up already
    return value


def _global_options() -> list[click.Option]:
    path = click.Path(dir_okay=False, path_type=Path)
    return [
        click.Option(
            ["--config", "config_path"],
            type=path,
            metavar="PATH",
            expose_value=False,
            callback=_remember,
            help="config.toml to use (default: ./config.toml, else built-in defaults).",
        ),
        click.Option(
            ["--db", "db"],
            type=path,
            metavar="PATH",
            expose_value=False,
            callback=_remember,
            help="The store (a DuckDB file). Overrides $GPU_TRACKER_DB and [storage] path.",
        ),
        click.Option(
            ["-v", "--verbose"],
            is_flag=True,
            expose_value=False,
            callback=_remember,
            help="Log what each provider does; errors in full.",
        ),
    ]


def add_global_options(command: click.Command, *, below: bool = True) -> None:
    """Declare the global options on `command` and, for a group, on every command below it
    (`below=False`: on the group only, its lazy commands get them as they load)."""
    command.params.extend(_global_options())
    if below and isinstance(command, click.Group):
        for sub in command.commands.values():
            add_global_options(sub)


def setup_logging(*, verbose: bool) -> None:
    """Warnings only, unless -v. urllib3 warns of every retry of a connection it cannot make:
    without -v the run summary says how each provider ended, in one line."""
    from tracker.collecting.logs import SafeText  # control characters escaped in every line

    handler = logging.StreamHandler()
    handler.setFormatter(SafeText(LOG_FORMAT))
    logging.basicConfig(handlers=[handler])  # a no-op where handlers exist (a test's capture)
    logging.getLogger().setLevel(logging.INFO if verbose else logging.WARNING)
    logging.getLogger("urllib3").setLevel(logging.NOTSET if verbose else logging.ERROR)
