"""`gpu-tracker tco`: the total cost of ownership of a GPU need over a horizon, per rental
strategy (on-demand, spot, each reserved term), and the blended plan with `--baseline`.

The formulas live in `storage.reads.tco`; this module asks, and says the answer plainly: the
best option per strategy with its distance to the best, the offers left out and why.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from collectors.common import StoreError
from storage.reads import tco as tco_mod
from tracker.cli import common
from tracker.cli.common import EXIT_FAILED, EXIT_USAGE, fail, load_config, say
from tracker.cli.screen import render, tco_table
from tracker.questions import documents, params, tco_words
from tracker.questions import workloads as workloads_q
from tracker.questions.tco import (
    baseline_problem,
    need_from,
    transfer_words,
    unknown_gpu,
    why_no_offer,
)

if TYPE_CHECKING:  # generic for the type checker; older click is not at run time
    _IntType = click.ParamType[int]
else:
    _IntType = click.ParamType


@click.command(params=params.tco())
@click.option(
    "--format", "fmt", type=click.Choice(render.FORMATS), default="table", show_default=True
)
@click.option(
    "--chart",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also draw the best option per strategy as a bar chart (PNG).",
)
@click.pass_context
def tco(
    ctx: click.Context,
    /,
    baseline: int | None,
    limit: int | None,
    fmt: str,
    chart: Path | None,
    workload: str | None,
    amount: float | None,
    **options: Any,
) -> None:
    """Total cost of ownership of a GPU need over a horizon, per rental strategy."""
    config = load_config(ctx)  # first: its [gpus.models] may name the --gpu asked for
    need = need_from(options)
    try:  # the work priced per unit, and the horizon --amount of it takes
        work = workloads_q.chosen(config.workloads, workload)
        need, amount_words = workloads_q.for_amount(need, work, amount)
    except ValueError as exc:
        fail(ctx, str(exc), EXIT_USAGE)
    if (problem := baseline_problem(baseline, need)) is not None:
        fail(ctx, problem, EXIT_USAGE)
    if chart is not None and chart.suffix.lower() != ".png":  # as `history --chart` says it
        fail(ctx, f"--chart {chart}: the chart is a PNG file (name it *.png)", EXIT_USAGE)
    try:
        limit_s = config.store.query_timeout_s
        answer = tco_mod.read(config.store_path, need, baseline=baseline, timeout_s=limit_s)
        unknown = [] if answer.rows else unknown_gpu(config.store_path, need, limit_s)
        why = None if answer.offers else why_no_offer(config.store_path, need, limit_s)
    except StoreError as exc:
        common.read_failed(ctx, exc, "tco")
    if unknown:
        fail(ctx, "; ".join(unknown), EXIT_USAGE)
    err = common.err(ctx)
    answer = workloads_q.with_units(answer, work) if work else answer
    if amount_words:
        say(err, amount_words)
    if answer.rows and (moving := transfer_words(answer)):
        say(err, moving)
    if not answer.rows:
        say(err, why or tco_words.no_candidate(answer))
    if fmt == "table":
        _print_tables(ctx, answer, limit or 1)
    else:
        _print_document(ctx, answer, fmt, limit)
    if chart is not None and answer.rows:
        _draw(ctx, answer, chart)
    elif chart is not None:
        say(err, f"no chart written to {chart}: no candidate to draw")


def _print_tables(ctx: click.Context, answer: tco_mod.Tco, per_strategy: int) -> None:
    if not answer.rows:
        return
    out = common.out(ctx)
    out.print(tco_table.strategies(answer, per_strategy))
    if answer.blends:
        out.print(tco_table.blends(answer))
    elif answer.baseline:
        say(common.err(ctx), tco_words.no_blend(answer))


def _print_document(ctx: click.Context, answer: tco_mod.Tco, fmt: str, limit: int | None) -> None:
    # With --baseline the question is the blend: the document is the plans.
    rows = answer.blends if answer.baseline else answer.rows
    shown = documents.tco_rows(answer, limit)
    render.print_result(common.out(ctx), tco_words.as_result(shown, answer.columns), fmt)
    if len(shown) < len(rows):  # a document has no caption: the note goes to stderr
        say(
            common.err(ctx),
            f"showing {len(shown)} of {len(rows)} {'plans' if answer.baseline else 'candidates'}, "
            f"{len(rows) - len(shown)} left out (--limit {limit}; raise it to see more)",
        )
    for line in tco_words.left_out_lines(answer):
        say(common.err(ctx), line)
    if answer.baseline and answer.rows and not answer.blends:
        say(common.err(ctx), tco_words.no_blend(answer))


def _draw(ctx: click.Context, answer: tco_mod.Tco, chart: Path) -> None:
    from tracker.charts import tco as tco_chart

    try:
        tco_chart.save_chart(answer, chart)
    except OSError as exc:
        fail(ctx, f"--chart {chart}: cannot write it: {exc}", EXIT_FAILED)
    say(common.err(ctx), f"chart written to {chart}")
