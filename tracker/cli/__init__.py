"""The `gpu-tracker` command: a thin click layer over the pipeline, the store and the demo.

Exit codes (docs/commands.md): 0 all asked work succeeded; 1 some provider failed (what succeeded is
stored); 2 usage or configuration error (nothing written).

Start-up is kept light: a command's module is imported when the command runs (or when help
lists it), and imports what it needs (the pipeline, the alerts, the daemon, the SDKs), so
`gpu-tracker sql` costs little more than DuckDB itself (docs/performance.md, "Start-up of a
query"). This is click's lazy group pattern: the group's `commands` is a mapping that knows
every name from the start and imports a command's module the first time the command is looked
up, so click's own `get_command` and `list_commands` work unchanged (names list without
importing).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping, MutableMapping

import click

from tracker.cli.options import add_global_options, chosen, setup_logging


class LazyCommands(MutableMapping[str, click.Command]):
    """Subcommands by name: `"module:attribute"` until first looked up, the command after.
    `prepare` runs once on each command loaded (the global options are declared on it)."""

    def __init__(self, where: Mapping[str, str], prepare: Callable[[click.Command], None]) -> None:
        self._where = dict(where)
        self._loaded: dict[str, click.Command] = {}
        self._prepare = prepare

    def __getitem__(self, name: str) -> click.Command:
        if name not in self._loaded:
            module, _, attribute = self._where[name].partition(":")  # KeyError: no such command
            command = getattr(importlib.import_module(module), attribute)
            if not isinstance(command, click.Command):
                raise TypeError(f"{self._where[name]} is not a click command")
            self._prepare(command)
            self._loaded[name] = command
        return self._loaded[name]

    def __setitem__(self, name: str, command: click.Command) -> None:
        self._where.pop(name, None)
        self._loaded[name] = command

    def __delitem__(self, name: str) -> None:
        found = self._where.pop(name, None) or self._loaded.get(name)
        self._loaded.pop(name, None)
        if found is None:
            raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys([*self._where, *self._loaded]))

    def __len__(self) -> int:
        return len(set(self._where) | set(self._loaded))

    def __contains__(self, name: object) -> bool:
        return name in self._where or name in self._loaded


# Each subcommand: the module that declares it and its name there, imported on first use.
COMMANDS = {
    "collect": "tracker.cli.collect:collect",
    "sql": "tracker.cli.query:sql",
    "runs": "tracker.cli.query:runs",
    "latest": "tracker.cli.history:latest",
    "demo": "tracker.cli.collect:demo",
    "alerts": "tracker.cli.alerts:alerts",
    "daemon": "tracker.cli.daemon:daemon",
    "status": "tracker.cli.daemon:status_command",
    "review": "tracker.cli.review:review",
    "export": "tracker.cli.export:export",
    "history": "tracker.cli.history:history",
    "tco": "tracker.cli.tco:tco",
    "serve": "tracker.cli.serve:serve",
    "mcp": "tracker.cli.serve:mcp",
    "gpus": "tracker.cli.gpus:gpus",
    "reparse": "tracker.cli.collect:reparse",
    "compact": "tracker.cli.collect:compact",
    "config": "tracker.cli.settings.commands:config",
    "index": "tracker.cli.market.index:index",
}


@click.group(
    commands=LazyCommands(COMMANDS, prepare=add_global_options),
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.version_option(
    package_name="gpu-price-tracker", prog_name="gpu-tracker", message="%(prog)s %(version)s"
)
@click.pass_context
def cli(ctx: click.Context) -> None:
    """Track cloud GPU prices (on-demand, spot, reserved) in a change-only DuckDB history.

    --config, --db and -v go before or after the command."""
    setup_logging(verbose=bool(chosen(ctx, "verbose")))
    ctx.ensure_object(dict)


add_global_options(cli, below=False)


def main() -> None:
    cli(prog_name="gpu-tracker")
