"""The price history as step charts: one line per series, each price held until its interval
ends, a gap where no interval covers the time (the offer was withdrawn).

One chart holds one currency: prices in two currencies never share an axis (the caller refuses
or narrows the choice first). At most `MAX_SERIES` lines, so the legend stays readable; the
title says how many were left out. Each line has its own colour and dash (`palette`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import NamedTuple

from matplotlib.figure import Figure

from storage.reads.series import Interval
from tracker.charts.base import date_axis, figure, legend, save
from tracker.charts.palette import line_styles

MAX_SERIES = 12


class Series(NamedTuple):
    label: str
    intervals: list[Interval]


def step_points(intervals: Sequence[Interval]) -> tuple[list[datetime], list[float]]:
    """x and y for `drawstyle="steps-post"`: each point's price holds until the next point; the
    last interval ends with a point of its own, and a gap is a point with no price (NaN), which
    breaks the line."""
    xs: list[datetime] = []
    ys: list[float] = []
    for interval in intervals:
        if xs and xs[-1] == interval.start:
            xs.pop()  # contiguous: the next price takes over at the boundary
            ys.pop()
        elif xs:
            xs.append(xs[-1])
            ys.append(math.nan)
        xs += [interval.start, interval.until]
        ys += [interval.price, interval.price]
    return xs, ys


def draw(
    series: Sequence[Series],
    *,
    currency: str,
    since: datetime,
    until: datetime,
    left_out: int = 0,
    unit: str = "instance-hour",
) -> Figure:
    """The step chart of `series` (all in `currency` per `unit`) over [since, until)."""
    title = f"Price history, {since:%Y-%m-%d %H:%M} to {until:%Y-%m-%d %H:%M} UTC"
    if left_out:
        title += f"\n{len(series)} series shown, {left_out} left out"
    fig, ax = figure(title, f"{currency} per {unit}")
    for one, style in zip(series, line_styles(len(series)), strict=True):
        xs, ys = step_points(one.intervals)
        ax.plot(
            xs,  # type: ignore[arg-type]
            ys,
            drawstyle="steps-post",
            label=one.label,
            linewidth=1.6,
            color=style.colour,
            linestyle=style.dash,
        )
    ax.set_xlim(since, until)  # type: ignore[arg-type]
    date_axis(ax)
    legend(ax)
    return fig


def write(
    path: str | Path,
    series: Sequence[Series],
    *,
    currency: str,
    since: datetime,
    until: datetime,
    left_out: int = 0,
    unit: str = "instance-hour",
) -> Path:
    """Draw `series` and write the PNG to `path`."""
    fig = draw(series, currency=currency, since=since, until=until, left_out=left_out, unit=unit)
    return save(fig, path)
