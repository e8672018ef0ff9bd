"""The parameters of `latest`, `history` and `tco`, declared once: the commands build their
options from them and the web dashboard checks its query strings with them (docs/web.md), so a
bad value is refused in the same words on both. The options that choose the output (--format,
--chart) and the global ones are the command line's own."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import click

from collectors.common import PRICE_KINDS
from storage import latest as latest_mod
from storage.reads.gpu_filter import GpuChoice
from tracker.questions.types import (
    GPU,
    GPU_HELP,
    MAX_DATA_TB,
    MAX_GPUS,
    MAX_MEMORY_GIB,
    MAX_MIGRATION_USD,
    MAX_MONTHS,
    MAX_PRICE,
    MAX_ROWS,
    MEMORY_HELP,
    PRICE_KIND,
    PROVIDER,
    WHEN,
    Count,
    Duration,
    Number,
    SpotOverhead,
)

WORKLOAD_HELP = (
    "A named unit of work with a throughput per GPU ([workloads] in config.toml, or a bundled "
    "MLPerf one: resnet50-train, bert-train, llama2-70b-lora-train, llama2-70b-inference)."
)
MAX_AMOUNT = 1e15  # units of work: bounded so the horizon's arithmetic stays finite


def opt(*declarations: str, **attributes: Any) -> click.Option:
    """One option, as `@click.option` declares it."""
    return click.Option(list(declarations), **attributes)


def latest() -> list[click.Parameter]:
    """The parameters of `latest` (fresh objects: each command owns its own)."""
    return [
        opt("--gpu", type=GPU, help=GPU_HELP),
        opt("--memory", type=Number(0, MAX_MEMORY_GIB, low_open=True), help=MEMORY_HELP),
        opt(
            "--kind", type=PRICE_KIND, help="Price kind: on-demand (or on_demand), spot, reserved."
        ),
        opt(
            "--provider",
            type=PROVIDER,
            help="Provider name, e.g. aws, azure, lambda (any case; aliases accepted).",
        ),
        opt("--region", help="Provider-native region code, e.g. us-east-1, eastus."),
        opt("--instance-type", help="Provider-native instance type."),
        opt(
            "--sort",
            type=click.Choice(list(latest_mod.SORTS)),
            default="gpu-hour",
            show_default=True,
            help="Rank by price per GPU-hour, per instance-hour, by PFLOP of FP16 per US dollar "
            "(most first), or by USD per unit of --workload's work (least first).",
        ),
        opt("--workload", help=WORKLOAD_HELP + " Adds usd_per_unit."),
        opt(
            "--limit",
            type=Count(1, MAX_ROWS),
            default=20,
            show_default=True,
            help="At most this many offers per currency; the rest are counted, not shown.",
        ),
        opt(
            "--per-gpu",
            is_flag=True,
            help="Only the cheapest offer per GPU model, memory variant and kind (A100 40GB and "
            "80GB apart).",
        ),
        opt(
            "--usd",
            is_flag=True,
            help="One USD ranking across currencies, converted with the [fx] rates; offers "
            "without a rate are left out (and counted).",
        ),
        opt(
            "--include-sold-out",
            is_flag=True,
            help="Also the offers the provider says cannot be rented now (marked sold out).",
        ),
    ]


def history() -> list[click.Parameter]:
    """The parameters of `history`."""
    return [
        opt("--gpu", type=GPU, help=GPU_HELP),
        opt("--memory", type=Number(0, MAX_MEMORY_GIB, low_open=True), help=MEMORY_HELP),
        opt(
            "--provider",
            type=PROVIDER,
            help="Provider name, e.g. aws, azure, lambda (any case; aliases accepted).",
        ),
        opt("--region", help="Provider-native region code, e.g. us-east-1, eastus."),
        opt("--zone", help="Zone, where prices are per zone (e.g. us-east-1a)."),
        opt("--instance-type", help="Provider-native instance type."),
        opt(
            "--kind", type=PRICE_KIND, help="Price kind: on-demand (or on_demand), spot, reserved."
        ),
        opt("--term", type=Count(1, MAX_MONTHS), help="Reserved term in months (12, 36, ...)."),
        opt(
            "--since",
            type=WHEN,
            help="Start of the window: a duration back from now (30d), a date or a timestamp "
            "[default: 30 days before --until].",
        ),
        opt("--until", type=WHEN, help="End of the window (excluded), same forms [default: now]."),
        opt(
            "--below",
            type=Number(0, MAX_PRICE),
            help="A budget per instance-hour (per GPU-hour with --per-gpu) in each series' "
            "currency (USD with --usd): adds the share of time below it.",
        ),
        opt(
            "--limit",
            type=Count(1, MAX_ROWS),
            default=20,
            show_default=True,
            help="At most this many series, cheapest mean first; the rest are counted, not shown.",
        ),
        opt(
            "--per-gpu",
            is_flag=True,
            help="Every price per GPU-hour (the instance's price over its GPU count), ranked so; "
            "series whose GPU count is unknown are left out.",
        ),
        opt(
            "--usd",
            is_flag=True,
            help="Every price in USD, each interval at its own dated [fx] rate, one ranking "
            "across currencies; intervals without a rate are left out.",
        ),
    ]


def tco() -> list[click.Parameter]:
    """The parameters of `tco`."""
    from storage.reads import tco as tco_mod  # the formulas: not for `sql` and `latest`

    return [
        opt("--gpu", type=GPU, required=True, help=GPU_HELP),
        opt(
            "--gpus", type=Count(1, MAX_GPUS), default=8, show_default=True, help="GPUs needed (N)."
        ),
        opt(
            "--per-node",
            type=Count(1, MAX_GPUS),
            default=1,
            show_default=True,
            help="GPUs each machine must have at least (K): only offers of K or more GPUs per "
            "instance are candidates (a job that needs NVLink across K GPUs).",
        ),
        opt(
            "--months",
            type=Count(1, MAX_MONTHS),
            default=36,
            show_default=True,
            help="The horizon in months (M); a month is 730 hours.",
        ),
        opt(
            "--utilization",
            type=Number(0, 1, low_open=True),
            default=1.0,
            show_default=True,
            help="Share of the hours the GPUs run (U), in (0, 1].",
        ),
        opt(
            "--memory",
            type=Number(0, MAX_MEMORY_GIB, low_open=True),
            help=MEMORY_HELP,
        ),
        opt(
            "--provider",
            "providers",
            type=PROVIDER,
            multiple=True,
            help="Only these providers (repeat the option for more).",
        ),
        opt(
            "--spot-overhead",
            type=SpotOverhead(),
            default="10",
            show_default=True,
            help="Percent of spot hours lost to interruptions and run again, or `advisor`: per "
            "offer, the upper bound of its AWS Spot Advisor interruption band (10 where none is "
            "known).",
        ),
        opt(
            "--spot-basis",
            type=click.Choice(tco_mod.SPOT_BASES),
            default="current",
            show_default=True,
            help="The spot price to plan with: the current one, or the "
            "series' time-weighted mean or p95 over --spot-window.",
        ),
        opt(
            "--spot-window",
            type=Duration(),
            default="30d",
            show_default=True,
            help="The look-back of --spot-basis mean and p95.",
        ),
        opt(
            "--migration-cost",
            type=Number(0, MAX_MIGRATION_USD),
            default=0.0,
            show_default=True,
            help="One-off USD cost of moving, added to options away from --current (to "
            "every option without --current).",
        ),
        opt("--current", type=PROVIDER, help="The provider you rent from now."),
        opt(
            "--data-tb",
            type=Number(0, MAX_DATA_TB),
            help="TiB of data to move out of --current (1 TiB = 1024 GiB): what its published "
            "internet egress tiers charge for it is added to every option elsewhere, as "
            "transfer_usd.",
        ),
        opt(
            "--current-region",
            help="Your region at --current, whose transfer tiers price --data-tb (default: "
            "its dearest region, so that leaving is never priced too low).",
        ),
        opt("--workload", help=WORKLOAD_HELP + " Adds units and usd_per_unit to every option."),
        opt(
            "--amount",
            type=Number(0, MAX_AMOUNT, low_open=True),
            help="Units of --workload's work to get done: the horizon is the time N GPUs take "
            "for them (replaces --months).",
        ),
        opt(
            "--baseline",
            type=Count(1, MAX_GPUS),
            help="Price a blend too: this many GPUs reserved, the rest on-demand or spot.",
        ),
        opt(
            "--limit",
            type=Count(1, MAX_ROWS),
            help="Table: options shown per strategy (default 1); CSV/JSON: the cheapest "
            "this many (default every candidate).",
        ),
    ]


class Checked(NamedTuple):
    """Filter values as stored: the GPU (model, and memory for a variant), provider, kind."""

    gpu: GpuChoice | None
    provider: str | None
    kind: str | None


def check_filters(
    store: Path,
    *,
    gpu: str | GpuChoice | None = None,
    provider: str | None = None,
    kind: str | None = None,
    kinds: Sequence[str] = PRICE_KINDS,
    timeout_s: float | None = None,
) -> Checked:
    """The one error rule of the questions (docs/commands.md, "Errors"): a GPU, provider or
    price kind nobody knows is a usage error, one line naming the accepted values
    (click.UsageError: exit 2 on the command line, HTTP 400 in the API). A GPU counts as known
    when a current offer or the GPU table (with the user's [gpus.models]) has it; `kinds`
    narrows the kinds a question takes (`index` has no reserved)."""
    from storage import latest as latest_mod
    from tracker.questions.latest import unknown
    from tracker.questions.types import gpu_again

    checked_provider = None if provider is None else PROVIDER.convert(provider, None, None)
    checked_kind = None if kind is None else PRICE_KIND.convert(kind, None, None)
    if checked_kind is not None and checked_kind not in kinds:
        words = ", ".join(k.replace("_", "-") for k in kinds)
        raise click.UsageError(f"unknown price kind {kind!r} here (accepted: {words})")
    choice = GPU.convert(gpu, None, None) if isinstance(gpu, str) else gpu
    choice = gpu_again(choice)
    if choice is not None:
        filters = latest_mod.Filters(gpu=choice.model, gpu_memory_gib=choice.memory_gib)
        if problems := unknown(store, filters, timeout_s):
            raise click.UsageError("; ".join(problems))
    return Checked(choice, checked_provider, checked_kind)
