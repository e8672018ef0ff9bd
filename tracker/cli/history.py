"""`gpu-tracker latest`, the cheapest current offers, and `gpu-tracker history`: time-weighted
statistics of price series over a window, and their step chart (docs/decide.md, "History").

The statistics are computed in SQL by `storage.reads.series`; this module parses the window,
prints the answer (a table per currency, CSV or one JSON array) and says why an answer is empty.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from collectors.common import StoreError
from storage import latest as latest_mod
from storage.query import QueryResult
from storage.reads.series import COLUMNS, SeriesFilters, SeriesStats, Window
from tracker.cli import common
from tracker.cli.common import EXIT_FAILED, EXIT_USAGE, fail, load_config, say
from tracker.cli.screen import render
from tracker.questions import documents, emptied, params
from tracker.questions.history import empty_window_words, filters_from, window_of
from tracker.questions.latest import filters_from as latest_filters
from tracker.questions.latest import unknown
from tracker.questions.types import Duration

if TYPE_CHECKING:  # generic for the type checker; older click is not at run time
    _WhenType = click.ParamType[datetime | timedelta]
else:
    _WhenType = click.ParamType

_DECIMALS = 4


@dataclass(frozen=True)
class Shown:
    """The series to print, and how many the limit left out."""

    rows: list[SeriesStats]
    left_out: int


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
    workload: str | None,
    **filters: Any,
) -> None:
    """The cheapest current offers, one table per currency (or one in USD with --usd)."""
    from tracker.questions.workloads import chosen

    config = load_config(ctx)
    try:  # the work's throughputs per GPU: usd_per_unit
        work = chosen(config.workloads, workload, sort)
    except ValueError as exc:
        fail(ctx, str(exc), EXIT_USAGE)
    options = {"sort": sort, "limit": limit, "per_gpu": per_gpu, "usd": usd}
    options["per_gpu_hour"] = work.by_gpu() if work else ()
    print_latest(
        ctx,
        config.store_path,
        options,
        fmt,
        latest_filters(filters),
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
        # With --usd, offers without a rate are what emptied it: the lines below say so.
        why = None if found.result.rows or unrated else emptied.latest(store, filters, timeout_s)
    except StoreError as exc:
        common.read_failed(ctx, exc, "latest")
    if problems:
        fail(ctx, "; ".join(problems), EXIT_USAGE)
    if why:
        say(err, why)
    for currency, count in unrated.items():
        say(err, f"left out {count} offers priced in {currency}: no rate for it in [fx]")
    if fmt != "table":  # one document; the currency column keeps the groups apart
        render.print_result(common.out(ctx), documents.latest_result(found), fmt)
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


@click.command(params=params.history())
@click.option(
    "--format", "fmt", type=click.Choice(render.FORMATS), default="table", show_default=True
)
@click.option(
    "--chart",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE.png",
    help="Also draw the series shown as a step chart (at most 12 lines, one currency).",
)
@click.option(
    "--timeout",
    type=Duration(),
    help="Stop the statistics after this long, e.g. 90s (default: [storage] query_timeout, 60s; "
    "shorter than [storage] write_wait).",
)
@click.pass_context
def history(
    ctx: click.Context,
    /,
    since: datetime | timedelta | None,
    until: datetime | timedelta | None,
    below: float | None,
    limit: int,
    fmt: str,
    chart: Path | None,
    timeout: int | None,
    **filters: Any,
) -> None:
    """Time-weighted statistics of each price series (one offer) over a window: covered hours,
    min, max, mean, p50, p95, changes, current price, share of time below --below."""
    from storage.reads import series
    from storage.reads.sandbox import QueryStopped
    from tracker.questions.history import price_from, slow_words, too_long_words

    config = load_config(ctx)
    window = _window(ctx, since, until)
    chosen, price = filters_from(filters), price_from(filters)
    why = ""
    limit_s = config.store.query_timeout_s if timeout is None else timeout
    if limit_s >= config.store.write_wait_s:  # it would outlast a collection's wait for the store
        fail(ctx, too_long_words(limit_s, config.store.write_wait_s), EXIT_USAGE)
    try:
        rows = series.window_rows(config.store_path, chosen, window, timeout_s=limit_s)
        if (slow := slow_words(rows, limit_s, config.store.write_wait_s)) is not None:
            say(common.err(ctx), slow)  # before the wait: how long, and how to allow it
        found = series.statistics(
            config.store_path, chosen, window, below=below, price=price, timeout_s=limit_s
        )
        matching = (
            0 if found else series.matching_series(config.store_path, chosen, timeout_s=limit_s)
        )
        if not found and not matching:  # a GPU nobody knows is a usage error, as in latest
            params.check_filters(config.store_path, gpu=filters.get("gpu"), timeout_s=limit_s)
            why = emptied.history(config.store_path, chosen, limit_s)
    except StoreError as exc:
        if isinstance(exc, QueryStopped):
            fail(ctx, common.stopped_words(exc.seconds, "history", option=True), EXIT_FAILED)
        common.read_failed(ctx, exc, "history")
    except click.UsageError as exc:
        fail(ctx, exc.format_message(), EXIT_USAGE)
    shown = Shown(found[:limit], max(0, len(found) - limit))
    if chart is not None:
        _check_chart(ctx, shown.rows, chart)
    if not found:
        say(common.err(ctx), why if not matching else empty_window_words(matching, window))
    _print(ctx, shown, fmt, window, below, limit, per_gpu=bool(filters.get("per_gpu")))
    if chart is not None and shown.rows:
        _draw(ctx, config.store_path, shown, window, chart, limit_s, price)
    elif chart is not None:
        say(common.err(ctx), f"no chart written to {chart}: no series to draw")


def _window(
    ctx: click.Context, since: datetime | timedelta | None, until: datetime | timedelta | None
) -> Window:
    now = datetime.now(UTC)
    if isinstance(until, datetime) and until > now:
        say(common.err(ctx), "--until is later than now: the window ends now")
    try:
        return window_of(since, until, now)
    except click.UsageError as exc:
        fail(ctx, exc.message, EXIT_USAGE)


def _check_chart(ctx: click.Context, rows: list[SeriesStats], chart: Path) -> None:
    currencies = sorted({row.currency for row in rows})
    if len(currencies) > 1:
        fail(
            ctx,
            f"--chart: the series shown are priced in {', '.join(currencies)} and a chart never "
            "puts two currencies on one axis; narrow the choice (--provider, --region, --gpu)",
            EXIT_USAGE,
        )
    if chart.suffix.lower() != ".png":
        fail(ctx, f"--chart {chart}: the chart is a PNG file (name it *.png)", EXIT_USAGE)


def _print(
    ctx: click.Context,
    shown: Shown,
    fmt: str,
    window: Window,
    below: float | None,
    limit: int,
    *,
    per_gpu: bool,
) -> None:
    cut = (
        f"showing {len(shown.rows)} of {len(shown.rows) + shown.left_out} series, "
        f"{shown.left_out} left out (--limit {limit}; raise it to see more)"
        if shown.left_out
        else None
    )
    if fmt == "json":
        text = documents.dumps(documents.history(shown.rows))
        common.out(ctx).print(text, markup=False, highlight=False, soft_wrap=True)
    elif fmt == "csv":
        flat = [tuple(r.flat().values()) for r in shown.rows]
        result = QueryResult(list(COLUMNS), [], flat)
        say(common.out(ctx), render.to_csv(result).rstrip("\n"))
    else:
        from tracker.cli.screen.history_table import tables

        for table in tables(shown.rows, window, below, cut, per_gpu=per_gpu):
            common.out(ctx).print(table)
        return
    if cut:
        say(common.err(ctx), cut)


def _draw(
    ctx: click.Context,
    store: Path,
    shown: Shown,
    window: Window,
    chart: Path,
    timeout_s: float | None,
    price: str,
) -> None:
    from storage.reads import series
    from tracker.charts import history as history_chart

    drawn = shown.rows[: history_chart.MAX_SERIES]
    keys = tuple(row.key for row in drawn)
    try:
        steps = series.intervals(
            store, SeriesFilters(keys=keys), window, price=price, timeout_s=timeout_s
        )
    except StoreError as exc:
        common.read_failed(ctx, exc, "history")
    lines = [
        history_chart.Series(row.key.label, steps.get((row.key, row.currency), [])) for row in drawn
    ]
    left_out = shown.left_out + len(shown.rows) - len(drawn)
    try:
        history_chart.write(
            chart,
            lines,
            currency=drawn[0].currency,
            since=window.since,
            until=window.until,
            left_out=left_out,
            unit="GPU-hour" if "gpu" in price else "instance-hour",
        )
    except OSError as exc:
        fail(ctx, f"--chart {chart}: cannot write it: {exc}", EXIT_FAILED)
    say(common.err(ctx), f"chart written to {chart} ({len(drawn)} series)")
