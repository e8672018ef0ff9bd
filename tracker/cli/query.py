"""`gpu-tracker sql` and `gpu-tracker latest`: read-only questions to the store.

These are the commands a script calls again and again, so they import only DuckDB, click and
rich (no pipeline, no alerts, no SDKs).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from collectors.common import ConfigError, StoreError
from storage import latest as latest_mod
from tracker.cli import common
from tracker.cli.common import EXIT_FAILED, EXIT_USAGE, fail, load_config, say
from tracker.cli.screen import render
from tracker.config.store import duration
from tracker.questions import params
from tracker.questions.latest import filters_from, unknown


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


@click.command(params=params.latest())
@click.option(
    "--format", "fmt", type=click.Choice(render.FORMATS), default="table", show_default=True
)
@click.pass_context
def latest(
    ctx: click.Context,
    /,
    sort: str,
    limit: int,
    per_gpu: bool,
    usd: bool,
    fmt: str,
    **filters: Any,
) -> None:
    """The cheapest current offers, one table per currency (or one in USD with --usd)."""
    config = load_config(ctx)
    options = {"sort": sort, "limit": limit, "per_gpu": per_gpu, "usd": usd}
    print_latest(
        ctx,
        config.store_path,
        options,
        fmt,
        filters_from(filters),
        timeout_s=config.store.query_timeout_s,
    )


def print_latest(
    ctx: click.Context,
    store: Path,
    options: dict[str, Any],
    fmt: str,
    filters: latest_mod.Filters | None = None,
    *,
    timeout_s: float | None,
) -> None:
    """The `latest` tables (or one CSV/JSON document) for `filters`, saying what was cut; the
    reads stop after `timeout_s` seconds."""
    filters = filters or latest_mod.Filters()
    err = common.err(ctx)
    try:
        found = latest_mod.cheapest(store, filters, timeout_s=timeout_s, **options)
        unrated = latest_mod.unrated(store, filters, timeout_s) if options.get("usd") else {}
        problems = [] if found.result.rows else unknown(store, filters, timeout_s)
    except StoreError as exc:
        common.read_failed(ctx, exc, "latest")
    if problems:
        fail(ctx, "; ".join(problems), EXIT_USAGE)
    if not found.result.rows:
        say(err, "no current prices match (run `gpu-tracker collect` first?)")
    for currency, count in unrated.items():
        say(err, f"left out {count} offers priced in {currency}: no rate for it in [fx]")
    if fmt != "table":  # one document; the currency column keeps the groups apart
        render.print_result(common.out(ctx), found.result, fmt)
        for currency in found.matching:  # a document has no caption: the note goes to stderr
            if found.left_out(currency):
                say(err, _cut_words(found, currency, options["limit"]))
        return
    for currency, table in latest_mod.by_currency(found.result).items():
        cut = _cut_words(found, currency, options["limit"]) if found.left_out(currency) else None
        common.out(ctx).print(render.latest_table(table, currency, cut=cut))


def _cut_words(found: latest_mod.Cheapest, currency: str, limit: int) -> str:
    total = found.matching[currency]
    return (
        f"{currency}: showing {total - found.left_out(currency)} of {total} offers, "
        f"{found.left_out(currency)} left out (--limit {limit}; raise it to see more)"
    )
