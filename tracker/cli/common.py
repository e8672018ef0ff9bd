"""What every `gpu-tracker` subcommand module shares: the consoles, loading the config with the
global options, failing clearly."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, NoReturn

import click

from collectors.common import ConfigError
from tracker import config as config_mod
from tracker.cli.options import chosen
from tracker.config.lazy import given

if TYPE_CHECKING:
    from rich.console import Console

EXIT_FAILED, EXIT_USAGE = 1, 2


def load_config(ctx: click.Context) -> config_mod.Config:
    """The config named by --config, its store replaced by --db or $GPU_TRACKER_DB (exit 2
    naming the key when it is wrong); its [gpus] entries installed for this process."""
    try:
        config = config_mod.load(chosen(ctx, "config_path"), store=chosen(ctx, "db"))
    except ConfigError as exc:
        fail(ctx, str(exc), EXIT_USAGE)
    # The user's [gpus] entries count in every command, not only in a collector's parse: the
    # read commands and the dashboard name the user's GPU models and memory variants too.
    # Without any (nothing read the default yet), the bundled table stands, and `sql` need
    # not import it to start.
    if given(config, "gpus"):
        from collectors import gpus

        gpus.install(config.gpus)
    elif "collectors.gpus" in sys.modules:  # another config's entries, earlier in this process
        sys.modules["collectors.gpus"].install(None)
    return config


def verbose(ctx: click.Context) -> bool:
    return bool(chosen(ctx, "verbose"))


def out(ctx: click.Context) -> Console:
    """Where results go: standard output."""
    return _consoles(ctx)["out"]


def err(ctx: click.Context) -> Console:
    """Where progress, notes and errors go: standard error."""
    return _consoles(ctx)["err"]


def fail(ctx: click.Context, message: str, code: int) -> NoReturn:
    """Print `message` as one error line and exit with `code`; exit 2 whatever `code` when the
    error being handled is a store file that cannot be used at all (damaged, not a store,
    unreadable): nothing was written and only the user can fix it, whichever command met it."""
    from rich.markup import escape

    if sys.exc_info()[1] is not None:
        from storage.connection import StoreDamaged

        code = EXIT_USAGE if isinstance(sys.exc_info()[1], StoreDamaged) else code

    # Messages quote config keys like [providers.aws]: not markup.
    err(ctx).print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    sys.exit(code)


def read_failed(ctx: click.Context, exc: Exception, command: str) -> NoReturn:
    """Fail a read of the store: a query stopped at its time limit says so in the one line
    every read command shares, naming the setting (exit 1); any other error as it is."""
    from storage.reads.sandbox import QueryStopped

    if isinstance(exc, QueryStopped):
        fail(ctx, stopped_words(exc.seconds, command), EXIT_FAILED)
    fail(ctx, str(exc), EXIT_FAILED)


def stopped_words(seconds: float, command: str, *, option: bool = False) -> str:
    """The line of a read stopped after `seconds` (`option`: the command has --timeout)."""
    raise_it = "--timeout or [storage] query_timeout" if option else "[storage] query_timeout"
    return f"query stopped after {seconds:g} s ({command} timeout; raise it with {raise_it})"


def say(console: Console, text: str) -> None:
    """A line of plain text: brackets in names and messages are not markup, and a long line
    (a command to copy) is never wrapped."""
    console.print(text, markup=False, highlight=False, soft_wrap=True)


def _consoles(ctx: click.Context) -> dict[str, Console]:
    consoles: dict[str, Console] = ctx.ensure_object(dict)
    if "out" not in consoles:
        consoles["out"], consoles["err"] = _console(), _console(stderr=True)
    return consoles


def _console(stderr: bool = False) -> Console:
    from rich.console import Console

    # Piped or captured output has no terminal width; rich would squeeze tables into 80
    # columns. Lines that long are fine in a file or a pager. No emoji codes: ":smile:" in a
    # price's data (or a CSV cell) is text, never a picture.
    stream = sys.stderr if stderr else sys.stdout
    return Console(stderr=stderr, width=None if stream.isatty() else 160, emoji=False)
