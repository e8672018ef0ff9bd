"""`gpu-tracker sql`: a read-only query to the store.

The command a script calls again and again, so it imports only DuckDB, click, rich and the
config (no pipeline, no alerts' delivery, no SDKs, not `latest`'s reads): its start-up is
measured against DuckDB's own (docs/performance.md, "Start-up of a query").
"""

from __future__ import annotations

import click

from collectors.common import ConfigError, StoreError
from tracker.cli import common
from tracker.cli.common import EXIT_FAILED, EXIT_USAGE, fail, load_config
from tracker.cli.screen import render
from tracker.config.store import duration


@click.command()
@click.argument("sql")
@click.option(
    "--format", "fmt", type=click.Choice(render.FORMATS), default="table", show_default=True
)
@click.option(
    "--timeout",
    metavar="DURATION",
    help="Stop the query after this long, e.g. 90s, 5m (default: [storage] query_timeout, 60s).",
)
@click.pass_context
def sql(ctx: click.Context, sql: str, fmt: str, timeout: str | None) -> None:
    """Run a read-only SQL query over the store (views: prices, latest_prices, collection_runs).

    The query reads the store and nothing else: no other file, no network, no extension, no
    setting changes."""
    from storage.query import QueryRefused, QueryStopped, query

    config = load_config(ctx)
    try:
        limit = config.store.query_timeout_s if timeout is None else duration(timeout, "--timeout")
        # A longer query would outlast a collection's wait for the store and cost its prices.
        if limit >= config.store.write_wait_s:
            raise ConfigError(
                f"--timeout: {limit} s is not shorter than [storage] write_wait "
                f"({config.store.write_wait_s} s), the longest a collection waits for a reader; "
                "give a shorter --timeout or raise write_wait"
            )
    except ConfigError as exc:
        fail(ctx, str(exc), EXIT_USAGE)
    try:
        result = query(config.store_path, sql, timeout_s=limit)
    except QueryRefused as exc:
        fail(ctx, str(exc), EXIT_USAGE)
    except QueryStopped:
        fail(ctx, common.stopped_words(limit, "sql", option=True), EXIT_FAILED)
    except StoreError as exc:
        fail(ctx, str(exc), EXIT_FAILED)
    render.print_result(common.out(ctx), result, fmt)
