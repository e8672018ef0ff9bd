"""`index`: the parameters of the market index (the command line and `/api/index` check them
alike), the window they mean and the values nothing knows (docs/decide.md, "Market index").

The kinds and segments are refused with the accepted values named, as the other questions'
parameters are (`tracker.questions.types`)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from collectors.common import ConfigError, parse_kind
from storage import latest as latest_mod
from storage.reads.gpu_filter import GpuChoice
from storage.reads.index.read import KINDS, SEGMENTS, Days, IndexFilters, IndexRow, days_of
from tracker.questions.documents import plain
from tracker.questions.params import opt
from tracker.questions.types import GPU, GPU_HELP, WHEN, gpu_again

if TYPE_CHECKING:  # generic for the type checker; older click is not at run time
    _TextType = click.ParamType[str]
else:
    _TextType = click.ParamType

DEFAULT_SINCE = timedelta(days=30)


class IndexKind(_TextType):
    """A price kind the index covers: `on-demand` (or `on_demand`) or `spot`; reserved is not
    indexed."""

    name = "kind"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        try:
            kind = str(parse_kind(value, "--kind"))
        except ConfigError:
            kind = ""
        if kind not in KINDS:
            self.fail(
                f"unknown price kind {value!r} for the index (accepted: on-demand (or "
                "on_demand), spot; reserved is not indexed)",
                param,
                ctx,
            )
        return kind


class Segment(_TextType):
    """A segment of the market: all, hyperscaler, neocloud or marketplace (any case)."""

    name = "segment"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        found = str(value).strip().lower()
        if found not in SEGMENTS:
            self.fail(f"unknown segment {value!r} (accepted: {', '.join(SEGMENTS)})", param, ctx)
        return found


def parameters() -> list[click.Parameter]:
    """The parameters of `index` (fresh objects: each command owns its own)."""
    return [
        opt("--gpu", type=GPU, help=GPU_HELP + " Default: every model."),
        opt("--kind", type=IndexKind(), help="on-demand (or on_demand) or spot [default: both]."),
        opt(
            "--segment",
            type=Segment(),
            default="all",
            show_default=True,
            help="all, hyperscaler, neocloud or marketplace.",
        ),
        opt(
            "--since",
            type=WHEN,
            help="First day: a duration back from now (30d), a date or a timestamp "
            "[default: 30 days before --until].",
        ),
        opt(
            "--until",
            type=WHEN,
            help="End of the window (a date given is excluded), same forms [default: now].",
        ),
    ]


def filters_from(given: dict[str, Any]) -> IndexFilters:
    """The values the options of `index` ask for (the web API builds them so too)."""
    gpu: GpuChoice | None = gpu_again(given.get("gpu"))
    return IndexFilters(gpu=gpu, kind=given.get("kind"), segment=given.get("segment") or "all")


def days_from(given: dict[str, Any], now: datetime | None = None) -> Days:
    """The days --since and --until mean at `now` (default: the clock); click.UsageError when
    the window is empty."""
    now = now or datetime.now(UTC)
    until, since = given.get("until"), given.get("since")
    end = min(now - until if isinstance(until, timedelta) else until or now, now)
    start = now - since if isinstance(since, timedelta) else since or end - DEFAULT_SINCE
    if start >= end:
        raise click.UsageError(
            f"--since ({start:%Y-%m-%d %H:%M} UTC) must come before --until "
            f"({end:%Y-%m-%d %H:%M} UTC)"
        )
    return days_of(start, end, now)


def unknown_gpu(store: Path, filters: IndexFilters, timeout_s: float | None) -> list[str]:
    """Why an answer is empty when neither the store nor the GPU table knows --gpu (the words
    of `latest`)."""
    if filters.gpu is None:
        return []
    from collectors import gpus
    from tracker.config import gpu_names

    chosen = latest_mod.Filters(gpu=filters.gpu.model, gpu_memory_gib=filters.gpu.memory_gib)
    return latest_mod.unknown_values(store, chosen, gpu_names(gpus.models()), timeout_s)


def document(rows: list[IndexRow]) -> list[dict[str, Any]]:
    """What `index --format json` prints and `/api/index` answers: one object per row."""
    return [{name: plain(value) for name, value in row.flat().items()} for row in rows]
