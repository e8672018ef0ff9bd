"""The `gpu-tracker` command: a thin click layer over the pipeline, the store and the demo.

Exit codes (docs/commands.md): 0 all asked work succeeded; 1 some provider failed (what succeeded is
stored); 2 usage or configuration error (nothing written).

Start-up is kept light: each command imports what it needs when it runs (the pipeline, the
alerts, the daemon, the SDKs), so `gpu-tracker sql` costs little more than DuckDB itself.
"""

from __future__ import annotations

import click

from tracker.cli import alerts as cli_alerts
from tracker.cli import collect as cli_collect
from tracker.cli import daemon as cli_daemon
from tracker.cli import export as cli_export
from tracker.cli import gpus as cli_gpus
from tracker.cli import history as cli_history
from tracker.cli import query as cli_query
from tracker.cli import review as cli_review
from tracker.cli import serve as cli_serve
from tracker.cli import tco as cli_tco
from tracker.cli.options import add_global_options, chosen, setup_logging


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(
    package_name="gpu-price-tracker", prog_name="gpu-tracker", message="%(prog)s %(version)s"
)
@click.pass_context
def cli(ctx: click.Context) -> None:
    """Track cloud GPU prices (on-demand, spot, reserved) in a change-only DuckDB history.

    --config, --db and -v go before or after the command."""
    setup_logging(verbose=bool(chosen(ctx, "verbose")))
    ctx.ensure_object(dict)


for _command in (
    cli_collect.collect,
    cli_query.sql,
    cli_query.latest,
    cli_collect.demo,
    cli_alerts.alerts,
    cli_daemon.daemon,
    cli_daemon.status_command,
    cli_review.review,
    cli_export.export,
    cli_history.history,
    cli_tco.tco,
    cli_serve.serve,
    cli_gpus.gpus,
):
    cli.add_command(_command)
add_global_options(cli)


def main() -> None:
    cli(prog_name="gpu-tracker")
