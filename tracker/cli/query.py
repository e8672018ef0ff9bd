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
from storage.reads.gpu_filter import GpuChoice
from tracker.cli import common, render
from tracker.cli.common import EXIT_FAILED, EXIT_USAGE, fail, load_config, say
from tracker.cli.options import (
    GPU,
    GPU_HELP,
    MAX_MEMORY_GIB,
    MAX_ROWS,
    MEMORY_HELP,
    PRICE_KIND,
    PROVIDER,
    Count,
    Number,
    gpu_again,
)
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


@click.command()
@click.option("--gpu", type=GPU, help=GPU_HELP)
@click.option("--memory", type=Number(0, MAX_MEMORY_GIB, low_open=True), help=MEMORY_HELP)
@click.option(
    "--kind", type=PRICE_KIND, help="Price kind: on-demand (or on_demand), spot, reserved."
)
@click.option(
    "--provider",
    type=PROVIDER,
    help="Provider name, e.g. aws, azure, lambda (any case; aliases accepted).",
)
@click.option("--region", help="Provider-native region code, e.g. us-east-1, eastus.")
@click.option("--instance-type", help="Provider-native instance type.")
@click.option(
    "--sort",
    type=click.Choice(list(latest_mod.SORTS)),
    default="gpu-hour",
    show_default=True,
    help="Rank by price per GPU-hour, per instance-hour, or by PFLOP of FP16 per US dollar "
    "(most first).",
)
@click.option(
    "--limit",
    type=Count(1, MAX_ROWS),
    default=20,
    show_default=True,
    help="At most this many offers per currency; the rest are counted, not shown.",
)
@click.option(
    "--per-gpu",
    is_flag=True,
    help="Only the cheapest offer per GPU model, memory variant and kind (A100 40GB and 80GB "
    "apart).",
)
@click.option(
    "--usd",
    is_flag=True,
    help="One USD ranking across currencies, converted with the [fx] rates; offers without a "
    "rate are left out (and counted).",
)
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


def filters_from(given: dict[str, Any]) -> latest_mod.Filters:
    """The filters the options of `latest` describe (the web API builds them the same way)."""
    gpu: GpuChoice | None = gpu_again(given.get("gpu"))
    return latest_mod.Filters(
        gpu=gpu.model if gpu else None,
        kind=given.get("kind"),
        provider=given.get("provider"),
        region=given.get("region"),
        instance_type=given.get("instance_type"),
        gpu_memory_gib=gpu.memory_gib if gpu else None,
        min_memory_gib=given.get("memory"),
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


def unknown(store: Path, filters: latest_mod.Filters, timeout_s: float | None) -> list[str]:
    """The filter values nothing in the store or the GPU table knows (`--gpu H1000`), said in
    the command's words; `tco` and the web API refuse with the same."""
    from collectors import gpus
    from tracker.config import gpu_names

    return latest_mod.unknown_values(store, filters, gpu_names(gpus.models()), timeout_s)


def _cut_words(found: latest_mod.Cheapest, currency: str, limit: int) -> str:
    total = found.matching[currency]
    return (
        f"{currency}: showing {total - found.left_out(currency)} of {total} offers, "
        f"{found.left_out(currency)} left out (--limit {limit}; raise it to see more)"
    )
