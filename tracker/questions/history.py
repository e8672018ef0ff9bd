"""`history`: the window --since and --until mean (their moments are `types.When`), and the
series the filters describe (docs/decide.md, "History")."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import click

from storage.reads.gpu_filter import GpuChoice
from storage.reads.series import SeriesFilters, Window, price_column
from tracker.questions.types import gpu_again

DEFAULT_SINCE = timedelta(days=30)
# Seconds the statistics take per million intervals in the window, measured with
# bench/bench_history.py on a 2-core machine, idle and busy (docs/performance.md): they grow
# with the intervals read, so the count in the window foretells the wait before it starts.
SECONDS_PER_MILLION = (1.0, 8.0)


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


def price_from(given: dict[str, Any]) -> str:
    """The price the statistics are of: per instance-hour or per GPU-hour (--per-gpu), in each
    series' currency or in USD (--usd)."""
    return price_column(per_gpu=bool(given.get("per_gpu")), usd=bool(given.get("usd")))


def slow_words(rows: int, limit_s: float, write_wait_s: float) -> str | None:
    """What to say before statistics over `rows` intervals start, when they may run past the
    time limit `limit_s`: how long they may take and how to allow it; None when they fit."""
    low, high = (rows / 1e6 * rate for rate in SECONDS_PER_MILLION)
    if high < limit_s:
        return None
    return (
        f"{rows:,} price intervals lie in the window: their statistics may take about "
        f"{_seconds(low)} on an idle machine and up to {_seconds(high)} on a busy one, past the "
        f"{limit_s:g} s time limit ([storage] query_timeout); allow longer with --timeout "
        f"(below [storage] write_wait, {write_wait_s:g} s) or raise query_timeout and "
        "write_wait, or narrow the window (--since) or the series (--gpu, --provider, --kind)"
    )


def too_long_words(limit_s: float, write_wait_s: float) -> str:
    """Why a time limit is refused: a read that long would outlast a collection's wait."""
    return (
        f"--timeout: {limit_s:g} s is not shorter than [storage] write_wait ({write_wait_s:g} "
        "s), the longest a collection waits for a reader; give a shorter --timeout or raise "
        "write_wait"
    )


def _seconds(value: float) -> str:
    return f"{max(1, round(value)):,} s" if value < 120 else f"{value / 60:,.0f} min"


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


def empty_window_words(matching: int, window: Window) -> str:
    """Why series that match the filters give no statistics: none covers the window."""
    return (
        f"{matching} series matched, but none has a price covering any time between "
        f"{window.since:%Y-%m-%d %H:%M} and {window.until:%Y-%m-%d %H:%M} UTC (widen --since)"
    )
