"""The market index over time: one line per segment, its 95% interval as a band around it
(docs/decide.md, "Market index"). One chart is one GPU (model and memory) and one price kind;
the caller picks them."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from matplotlib.figure import Figure

from storage.reads.index.read import SEGMENTS, IndexRow
from tracker.charts.base import date_axis, figure, legend, save


def draw(rows: Sequence[IndexRow], title: str) -> Figure:
    """The chart of `rows` (one GPU and kind, any segments), titled `title`."""
    fig, ax = figure(title, "USD per GPU-hour (median over providers)")
    for segment in SEGMENTS:
        mine = sorted((r for r in rows if r.segment == segment), key=lambda r: r.date)
        if not mine:
            continue
        xs = [r.date for r in mine]
        (line,) = ax.plot(
            xs,  # type: ignore[arg-type]
            [r.index_usd_per_gpu_hour for r in mine],
            label=f"{segment} ({mine[-1].providers} providers)",
            linewidth=1.6,
            marker="o" if len(mine) < 3 else None,
        )
        low = [math.nan if r.ci_low is None else r.ci_low for r in mine]
        high = [math.nan if r.ci_high is None else r.ci_high for r in mine]
        ax.fill_between(xs, low, high, color=line.get_color(), alpha=0.15, linewidth=0)  # type: ignore[arg-type]
    date_axis(ax)
    legend(ax, title="segment (95% interval shaded)")
    return fig


def write(path: str | Path, rows: Sequence[IndexRow], title: str) -> Path:
    """Draw `rows` and write the PNG to `path`."""
    return save(draw(rows, title), path)
