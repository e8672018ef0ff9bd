"""The `gpu-tracker` command: a thin click layer over the pipeline, the store and the demo.

Exit codes (docs/commands.md): 0 all asked work succeeded; 1 some provider failed (what succeeded is
stored); 2 usage or configuration error (nothing written).

Start-up is kept light: a command's module is imported when the command runs (or when help
lists it), and imports what it needs (the pipeline, the alerts, the daemon, the SDKs), so
`gpu-tracker sql` costs little more than DuckDB itself (docs/performance.md, "Start-up").
"""

from __future__ import annotations

import click

from tracker.cli.lazy import LazyCommands
from tracker.cli.options import add_global_options, chosen, setup_logging

# Each subcommand: the module that declares it and its name there, imported on first use.
COMMANDS = {
    "collect": "tracker.cli.collect:collect",
    "sql": "tracker.cli.query:sql",
    "latest": "tracker.cli.query:latest",
    "demo": "tracker.cli.collect:demo",
    "alerts": "tracker.cli.alerts:alerts",
    "daemon": "tracker.cli.daemon:daemon",
    "status": "tracker.cli.daemon:status_command",
    "review": "tracker.cli.review:review",
    "export": "tracker.cli.export:export",
    "history": "tracker.cli.history:history",
    "tco": "tracker.cli.tco:tco",
    "serve": "tracker.cli.serve:serve",
    "gpus": "tracker.cli.gpus:gpus",
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
