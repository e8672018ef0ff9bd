"""`history`: the moments --since and --until take, the window they mean, and the series the
filters describe (docs/decide.md, "History")."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Any

import click

from collectors.common import ConfigError, parse_duration
from storage.reads.gpu_filter import GpuChoice
from storage.reads.series import SeriesFilters, Window
from tracker.questions.types import gpu_again

if TYPE_CHECKING:  # generic for the type checker; older click is not at run time
    _WhenType = click.ParamType[datetime | timedelta]
else:
    _WhenType = click.ParamType

DEFAULT_SINCE = timedelta(days=30)


class When(_WhenType):
    """A moment: a duration back from now (`30d`), an ISO date (00:00 UTC that day) or an ISO
    timestamp (UTC unless it says otherwise). A duration stays a timedelta until the command
    knows `now`, so --since and --until count back from the same moment."""

    name = "when"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> datetime | timedelta:
        if isinstance(value, datetime | timedelta):
            return value
        option = param.opts[0] if param else "the moment"
        try:
            return timedelta(seconds=parse_duration(value, option))
        except ConfigError:
            pass
        try:
            if len(value) == 10:
                return datetime.combine(date.fromisoformat(value), datetime.min.time(), UTC)
            moment = datetime.fromisoformat(value)
        except ValueError:
            self.fail(
                f"{value!r} is neither a duration back from now (30d, 12h), an ISO date "
                "(2026-11-01) nor an ISO timestamp (2026-11-01T06:00Z)",
                param,
                ctx,
            )
        return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


WHEN = When()


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
