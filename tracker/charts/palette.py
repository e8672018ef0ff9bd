"""The line styles of the charts with one line per series: a colour and a dash pattern per
line, distinct for every line a chart draws.

matplotlib's default cycle has ten colours, so an eleventh line took the first one's colour
and two series read as one. Here the first ten lines take the ten strong colours of `tab20`,
solid; the next ten their light partners, dashed (a light colour alone is close to its strong
partner on screen and in print); past twenty the colours come round again with dotted, then
dash-dotted lines. So (colour, style) is distinct for the first forty lines, far more than
a chart draws (`tracker.charts.history.MAX_SERIES`).
"""

from __future__ import annotations

from typing import NamedTuple

# tab20, strong colours first, then their light partners in the same order.
_STRONG = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
           "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")  # fmt: skip
_LIGHT = ("#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5",
          "#c49c94", "#f7b6d2", "#c7c7c7", "#dbdb8d", "#9edae5")  # fmt: skip
COLOURS = _STRONG + _LIGHT
DASHES = ("solid", "dashed", "dotted", "dashdot")


class LineStyle(NamedTuple):
    colour: str
    dash: str


def line_style(index: int) -> LineStyle:
    """The style of the `index`-th line (from 0) of a chart."""
    group, place = divmod(index, len(_STRONG))
    colour = (_STRONG, _LIGHT)[group % 2][place]
    return LineStyle(colour, DASHES[group % len(DASHES)])


def line_styles(count: int) -> list[LineStyle]:
    """The styles of a chart's `count` lines, in drawing order."""
    return [line_style(i) for i in range(count)]
