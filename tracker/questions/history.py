"""`history`: the window --since and --until mean (their moments are `types.When`), and the
series the filters describe (docs/decide.md, "History")."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import click

from storage.reads.gpu_filter import GpuChoice
from storage.reads.series import SeriesFilters, Window
from tracker.questions.types import gpu_again

DEFAULT_SINCE = timedelta(days=30)


def filters_from(given: dict[str, Any]) -> SeriesFilters:
    """The series the filter options of `history` describe (the web API builds them so too)."""
    gpu: GpuChoice | None = gpu_again(given.get("gpu"))
    names = ("provider", "region", "zone", "instance_type", "kind", "term")
    return SeriesFilters(
        gpu=gpu.model if gpu else None,
        gpu_memory_gib=gpu.memory_gib if gpu else None,
        min_memory_gib=given.get("memory"),
        **{name: given.get(name) for name in names},
    )


def window_of(
    since: datetime | timedelta | None, until: datetime | timedelta | None, now: datetime
) -> Window:
    """The window [since, until) the options mean at `now` (an end later than now is now: an
    open interval would count hours not lived yet); click.UsageError when it is empty."""
    end = min(now - until if isinstance(until, timedelta) else until or now, now)
    start = now - since if isinstance(since, timedelta) else since or end - DEFAULT_SINCE
    if start >= end:
        raise click.UsageError(
            f"--since ({start:%Y-%m-%d %H:%M} UTC) must come before --until "
            f"({end:%Y-%m-%d %H:%M} UTC)"
        )
    return Window(start, end)
