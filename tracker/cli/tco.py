"""`gpu-tracker tco`: the total cost of ownership of a GPU need over a horizon, per rental
strategy (on-demand, spot, each reserved term), and the blended plan with `--baseline`.

The formulas live in `storage.reads.tco`; this module asks, and says the answer plainly: the
best option per strategy with its distance to the best, the offers left out and why.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from collectors.common import ConfigError, StoreError, parse_duration
from storage.reads import tco as tco_mod
from tracker.cli import common, documents, render, tco_table
from tracker.cli.common import EXIT_FAILED, EXIT_USAGE, fail, load_config, say
from tracker.cli.options import (
    GPU,
    GPU_HELP,
    MAX_GPUS,
    MAX_MEMORY_GIB,
    MAX_MIGRATION_USD,
    MAX_MONTHS,
    MAX_OVERHEAD_PCT,
    MAX_ROWS,
    MEMORY_HELP,
    PROVIDER,
    Count,
    Number,
    gpu_again,
)

if TYPE_CHECKING:  # generic for the type checker; older click is not at run time
    _IntType = click.ParamType[int]
else:
    _IntType = click.ParamType


class Duration(_IntType):
    """A duration as config.toml writes one (`30d`, `12h`), in seconds."""

    name = "duration"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        try:
            return parse_duration(value, f"--{param.name if param else 'duration'}")
        except ConfigError as exc:
            self.fail(str(exc).split(": ", 1)[-1], param, ctx)


class SpotOverhead(click.ParamType):  # type: ignore[type-arg]
    """A percent (0 or more), or `advisor` (None: the offer's Spot Advisor band)."""

    name = "PCT|advisor"

    def convert(self, value: Any, param: Any, ctx: Any) -> float | None:
        if value is None or (isinstance(value, str) and value.strip().lower() == "advisor"):
            return None
        try:
            return Number(0, MAX_OVERHEAD_PCT).convert(value, param, ctx)
        except click.BadParameter:
            self.fail(
                f"{value!r} is not a percent from 0 to {MAX_OVERHEAD_PCT:g}, nor `advisor`",
                param,
                ctx,
            )


@click.command()
@click.option("--gpu", type=GPU, required=True, help=GPU_HELP)
@click.option(
    "--gpus", type=Count(1, MAX_GPUS), default=8, show_default=True, help="GPUs needed (N)."
)
@click.option(
    "--months",
    type=Count(1, MAX_MONTHS),
    default=36,
    show_default=True,
    help="The horizon in months (M); a month is 730 hours.",
)
@click.option(
    "--utilization",
    type=Number(0, 1, low_open=True),
    default=1.0,
    show_default=True,
    help="Share of the hours the GPUs run (U), in (0, 1].",
)
@click.option(
    "--memory",
    type=Number(0, MAX_MEMORY_GIB, low_open=True),
    help=MEMORY_HELP,
)
@click.option(
    "--provider",
    "providers",
    type=PROVIDER,
    multiple=True,
    help="Only these providers (repeat the option for more).",
)
@click.option(
    "--spot-overhead",
    type=SpotOverhead(),
    default="10",
    show_default=True,
    help="Percent of spot hours lost to interruptions and run again, or `advisor`: per offer,"
    " the upper bound of its AWS Spot Advisor interruption band (10 where none is known).",
)
@click.option(
    "--spot-basis",
    type=click.Choice(tco_mod.SPOT_BASES),
    default="current",
    show_default=True,
    help="The spot price to plan with: the current one, or the "
    "series' time-weighted mean or p95 over --spot-window.",
)
@click.option(
    "--spot-window",
    type=Duration(),
    default="30d",
    show_default=True,
    help="The look-back of --spot-basis mean and p95.",
)
@click.option(
    "--migration-cost",
    type=Number(0, MAX_MIGRATION_USD),
    default=0.0,
    show_default=True,
    help="One-off USD cost of moving, added to options away from --current (to "
    "every option without --current).",
)
@click.option("--current", type=PROVIDER, help="The provider you rent from now.")
@click.option(
    "--baseline",
    type=Count(1, MAX_GPUS),
    help="Price a blend too: this many GPUs reserved, the rest on-demand or spot.",
)
@click.option(
    "--limit",
    type=Count(1, MAX_ROWS),
    help="Table: options shown per strategy (default 1); CSV/JSON: the cheapest "
    "this many (default every candidate).",
)
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
    **options: Any,
) -> None:
    """Total cost of ownership of a GPU need over a horizon, per rental strategy."""
    config = load_config(ctx)  # first: its [gpus.models] may name the --gpu asked for
    need = need_from(options)
    if (problem := baseline_problem(baseline, need)) is not None:
        fail(ctx, problem, EXIT_USAGE)
    if chart is not None and chart.suffix.lower() != ".png":  # as `history --chart` says it
        fail(ctx, f"--chart {chart}: the chart is a PNG file (name it *.png)", EXIT_USAGE)
    try:
        limit_s = config.store.query_timeout_s
        answer = tco_mod.read(config.store_path, need, baseline=baseline, timeout_s=limit_s)
        unknown = [] if answer.rows else unknown_gpu(config.store_path, need, limit_s)
    except StoreError as exc:
        common.read_failed(ctx, exc, "tco")
    if unknown:
        fail(ctx, "; ".join(unknown), EXIT_USAGE)
    err = common.err(ctx)
    if not answer.rows:
        say(err, tco_table.no_candidate(answer))
    if fmt == "table":
        _print_tables(ctx, answer, limit or 1)
    else:
        _print_document(ctx, answer, fmt, limit)
    if chart is not None and answer.rows:
        _draw(ctx, answer, chart)
    elif chart is not None:
        say(err, f"no chart written to {chart}: no candidate to draw")


def need_from(options: dict[str, Any]) -> tco_mod.Need:
    """The need the options describe (the web API builds it the same way)."""
    gpu = gpu_again(options["gpu"])
    assert gpu is not None  # --gpu is required
    return tco_mod.Need(
        gpu=gpu.model,
        gpu_memory_gib=gpu.memory_gib,
        gpus=options["gpus"],
        months=options["months"],
        utilization=options["utilization"],
        memory_gib=options["memory"],
        providers=tuple(dict.fromkeys(options["providers"])),
        spot_overhead_pct=10.0 if options["spot_overhead"] is None else options["spot_overhead"],
        spot_overhead_advisor=options["spot_overhead"] is None,
        spot_basis=options["spot_basis"],
        spot_window_s=options["spot_window"],
        migration_usd=options["migration_cost"],
        current_provider=options["current"],
    )


def baseline_problem(baseline: int | None, need: tco_mod.Need) -> str | None:
    """Why `--baseline` cannot be had with this need, or None (the web API refuses the same)."""
    if baseline is not None and baseline > need.gpus:
        return f"--baseline {baseline}: more than --gpus {need.gpus}"
    return None


def _print_tables(ctx: click.Context, answer: tco_mod.Tco, per_strategy: int) -> None:
    if not answer.rows:
        return
    out = common.out(ctx)
    out.print(tco_table.strategies(answer, per_strategy))
    if answer.blends:
        out.print(tco_table.blends(answer))
    elif answer.baseline:
        say(common.err(ctx), tco_table.no_blend(answer))


def _print_document(ctx: click.Context, answer: tco_mod.Tco, fmt: str, limit: int | None) -> None:
    # With --baseline the question is the blend: the document is the plans.
    rows = answer.blends if answer.baseline else answer.rows
    shown = documents.tco_rows(answer, limit)
    render.print_result(common.out(ctx), tco_table.as_result(shown, answer.columns), fmt)
    if len(shown) < len(rows):  # a document has no caption: the note goes to stderr
        say(
            common.err(ctx),
            f"showing {len(shown)} of {len(rows)} {'plans' if answer.baseline else 'candidates'}, "
            f"{len(rows) - len(shown)} left out (--limit {limit}; raise it to see more)",
        )
    for line in tco_table.left_out_lines(answer):
        say(common.err(ctx), line)
    if answer.baseline and answer.rows and not answer.blends:
        say(common.err(ctx), tco_table.no_blend(answer))


def _draw(ctx: click.Context, answer: tco_mod.Tco, chart: Path) -> None:
    from tracker.charts import tco as tco_chart

    try:
        tco_chart.save_chart(answer, chart)
    except OSError as exc:
        fail(ctx, f"--chart {chart}: cannot write it: {exc}", EXIT_FAILED)
    say(common.err(ctx), f"chart written to {chart}")


def unknown_gpu(store: Path, need: tco_mod.Need, timeout_s: float | None) -> list[str]:
    """Why no candidate came (a GPU model or variant the store and the GPU table do not know),
    or none; the web API answers the same words."""
    from storage import latest as latest_mod
    from tracker.cli.query import unknown

    filters = latest_mod.Filters(gpu=need.gpu, gpu_memory_gib=need.gpu_memory_gib)
    return unknown(store, filters, timeout_s)
