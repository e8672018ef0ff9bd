"""`gpu-tracker index`: the daily market index per GPU, price kind and segment, as a table, CSV
or one JSON array, and optionally its chart (docs/decide.md, "Market index").

The values come from `storage.reads.index`; this module parses the window, prints the answer
and says why it is empty."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from collectors.common import StoreError, kind_label
from storage.query import QueryResult
from storage.reads.index import read
from storage.reads.index.read import COLUMNS, IndexFilters, IndexRow
from tracker.cli import common
from tracker.cli.common import EXIT_FAILED, EXIT_USAGE, fail, load_config, say
from tracker.cli.screen import render
from tracker.questions import documents
from tracker.questions import index as index_q


@click.command(params=index_q.parameters())
@click.option(
    "--format", "fmt", type=click.Choice(render.FORMATS), default="table", show_default=True
)
@click.option(
    "--chart",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE.png",
    help="Also draw the index over time: one line per segment, the 95% interval as a band "
    "(one GPU and kind: give --gpu and --kind when the answer holds more).",
)
@click.pass_context
def index(ctx: click.Context, /, fmt: str, chart: Path | None, **given: Any) -> None:
    """The market index: per day, GPU model and memory and price kind, the median over
    providers of each provider's median price per GPU-hour in USD, with the providers behind
    it, a 95% interval and a low-confidence flag (fewer than 3 providers)."""
    config = load_config(ctx)
    filters = index_q.filters_from(given)
    try:
        days = index_q.days_from(given)
    except click.UsageError as exc:
        fail(ctx, exc.message, EXIT_USAGE)
    if chart is not None and chart.suffix.lower() != ".png":
        fail(ctx, f"--chart {chart}: the chart is a PNG file (name it *.png)", EXIT_USAGE)
    limit_s = config.store.query_timeout_s
    try:
        rows = read.index(config.store_path, filters, days, timeout_s=limit_s)
        problems = [] if rows else index_q.unknown_gpu(config.store_path, filters, limit_s)
    except StoreError as exc:
        common.read_failed(ctx, exc, "index")
    if problems:
        fail(ctx, "; ".join(problems), EXIT_USAGE)
    if not rows:
        say(
            common.err(ctx),
            f"no offer counts for the index from {days.first} to {days.last} "
            "(widen --since, or check --gpu, --kind, --segment; run `gpu-tracker collect`?)",
        )
    _print(ctx, rows, fmt)
    if chart is not None:
        _draw(ctx, config.store_path, rows, filters, days, chart, limit_s)


def _print(ctx: click.Context, rows: list[IndexRow], fmt: str) -> None:
    if fmt == "json":
        text = documents.dumps(index_q.document(rows))
        common.out(ctx).print(text, markup=False, highlight=False, soft_wrap=True)
    elif fmt == "csv":
        result = QueryResult(list(COLUMNS), [], [tuple(r.flat().values()) for r in rows])
        say(common.out(ctx), render.to_csv(result).rstrip("\n"))
    elif rows:
        common.out(ctx).print(_table(rows))


def _table(rows: list[IndexRow]) -> Any:
    from rich.table import Table

    table = Table(title="Market index, USD per GPU-hour (median over providers)")
    for name in ("date", "GPU", "kind", "segment", "index", "providers", "95% interval", "note"):
        justify = "right" if name in ("index", "providers") else "left"
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for r in rows:
        table.add_row(
            r.date.isoformat(),
            _gpu(r),
            kind_label(r.kind),
            r.segment,
            f"{r.index_usd_per_gpu_hour:.4f}",
            str(r.providers),
            "-" if r.ci_low is None else f"{r.ci_low:.4f} to {r.ci_high:.4f}",
            "low confidence" if r.low_confidence else "",
        )
    return table


def _gpu(row: IndexRow) -> str:
    memory = row.gpu_memory_gib
    return row.gpu_model if memory is None else f"{row.gpu_model} {memory:g}GB"


def _draw(
    ctx: click.Context,
    store: Path,
    rows: list[IndexRow],
    filters: IndexFilters,
    days: read.Days,
    chart: Path,
    timeout_s: float | None,
) -> None:
    from tracker.charts import index as index_chart

    pairs = sorted({(_gpu(r), r.kind) for r in rows})
    if len(pairs) > 1:
        some = ", ".join(" ".join(pair) for pair in pairs[:4]) + (" ..." if len(pairs) > 4 else "")
        fail(
            ctx,
            f"--chart: the answer holds {len(pairs)} GPUs and kinds ({some}); a chart is of "
            'one: give --gpu (a variant, "H100 80GB", where there are several) and --kind',
            EXIT_USAGE,
        )
    if not pairs:
        say(common.err(ctx), f"no chart written to {chart}: nothing to draw")
        return
    every = IndexFilters(filters.gpu, rows[0].kind, None)  # one line per segment
    try:
        lines = [
            r for r in read.index(store, every, days, timeout_s=timeout_s) if _gpu(r) == pairs[0][0]
        ]
        title = (
            f"{pairs[0][0]} {kind_label(rows[0].kind)} market index, {days.first} to {days.last}"
        )
        index_chart.write(chart, lines, title)
    except StoreError as exc:
        common.read_failed(ctx, exc, "index")
    except OSError as exc:
        fail(ctx, f"--chart {chart}: cannot write it: {exc}", EXIT_FAILED)
    say(common.err(ctx), f"chart written to {chart}")
