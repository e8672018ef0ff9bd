"""The dashboard's charts as SVG, drawn here rather than by matplotlib (whose import alone cost
the first chart of a process 0.4 s): the step chart of `history`, the bars of `tco` and the
market index's lines. Each is a `Figure` of plain shapes in pixels that `templates/chart.svg`
renders (autoescaped); every point and bar carries a `<title>`, which the browser shows on
hover: the value and its time. The styles are the `--chart` ones (`tracker.charts.palette`).
"""

from __future__ import annotations

import html
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import NamedTuple

from markupsafe import Markup

from storage.reads.index.read import SEGMENTS, IndexRow
from storage.reads.series import Interval, Window
from storage.reads.tco import Tco
from tracker.charts.palette import COLOURS, line_styles

MAX_SERIES = 12  # lines on one history chart, so the legend stays readable
WIDTH, HEIGHT = 960, 420
LEFT, RIGHT, TOP, BOTTOM = 80, 24, 44, 40  # the plot's margins
_DASHES = {"solid": "", "dashed": "6,4", "dotted": "1.5,3", "dashdot": "6,3,1.5,3"}
_BARS = {"on-demand": "#1f77b4", "spot": "#ff7f0e", "reserved": "#2ca02c", "blend": "#9467bd"}


class Series(NamedTuple):
    label: str
    intervals: list[Interval]


@dataclass
class Figure:
    """What `chart.svg` draws: text, axes ticks, lines (`d` path data), points and bars (with
    their hover titles), bands and a legend; every coordinate in pixels."""

    title: str
    ylabel: str = ""
    xlabel: str = ""
    height: int = HEIGHT
    left: int = LEFT
    xticks: list[tuple[float, str]] = field(default_factory=list)
    yticks: list[tuple[float, str]] = field(default_factory=list)
    lines: list[dict[str, str]] = field(default_factory=list)
    points: list[tuple[float, float, str, str]] = field(default_factory=list)  # x, y, colour
    bands: list[tuple[str, str]] = field(default_factory=list)  # polygon points, colour
    bars: list[dict[str, object]] = field(default_factory=list)
    legend: list[tuple[str, str, str]] = field(default_factory=list)  # colour, dash, label
    radius: float = 3.5  # of a point

    @property
    def bottom(self) -> int:
        return self.height - BOTTOM - 18 * math.ceil(len(self.legend) / 3)


def render(fig: Figure) -> Markup:
    """The figure as an `<svg>` element (its clip path named apart from other charts')."""
    from tracker.web.pages import environment

    chart = environment().get_template("chart.svg")
    return Markup(chart.render(fig=fig, width=WIDTH, right=WIDTH - RIGHT, top=TOP,
                               clip=f"plot{next(_CLIPS)}", points=_points(fig)))  # fmt: skip


def _points(fig: Figure) -> Markup:
    """The figure's points with their titles, each title escaped: built here in one pass, as a
    chart of a month of hourly prices has thousands (the template's loop, or markupsafe's own
    formatting, took a third of the page). Coordinates are numbers, colours the palette's."""
    r = fig.radius
    return Markup(
        "\n".join(
            f'<circle class="point" cx="{x:.1f}" cy="{y:.1f}" r="{r}" style="fill: {colour}">'
            f"<title>{html.escape(tip)}</title></circle>"
            for x, y, colour, tip in fig.points
        )
    )


_CLIPS = itertools.count()


def history_svg(
    lines: Sequence[Series], currency: str, window: Window, left_out: int, unit: str
) -> Markup:
    """The step chart of `lines` (one currency, prices per `unit`): each price held until its
    interval ends, a gap where none covers the time; titled points for the prices a reader
    hovers for (`_thinned`)."""
    title = f"Price history, {window.since:%Y-%m-%d %H:%M} to {window.until:%Y-%m-%d %H:%M} UTC"
    if left_out:
        title += f" ({len(lines)} series shown, {left_out} left out)"
    fig = Figure(title, f"{currency} per {unit}")
    fig.legend = [(s.colour, _DASHES[s.dash], one.label)
                  for one, s in zip(lines, line_styles(len(lines)), strict=True)]  # fmt: skip
    prices = [i.price for one in lines for i in one.intervals] or [0.0]
    x = _time_scale(fig, window.since, window.until)
    y = _value_scale(fig, min(prices), max(prices))
    for one, (colour, dash, _label) in zip(lines, fig.legend, strict=True):
        path, end, end_x, marks = [], None, 0.0, []
        for i in one.intervals:
            start, until = max(i.start, window.since), min(i.until, window.until)
            if until < start:
                continue
            # Contiguous with the last step (most are): it starts where that one ended.
            move, px = ("L", end_x) if end == i.start else ("M", x(start))
            py, end, end_x = y(i.price), i.until, x(until)
            path.append(f"{move}{px:.1f},{py:.1f}H{end_x:.1f}")
            marks.append((px, py, i))
        for px, py, i in _thinned(marks, fig.radius):
            when = f"{i.start.astimezone(UTC):%Y-%m-%d %H:%M} UTC"
            tip = f"{one.label}\n{when}: {i.price:,.4f} {currency} per {unit}"
            fig.points.append((px, py, colour, tip))
        fig.lines.append({"d": "".join(path), "colour": colour, "dash": dash})
    return render(fig)


Mark = tuple[float, float, Interval]  # a price's point: x, y in pixels, and its interval


def _thinned(marks: list[Mark], radius: float) -> list[Mark]:
    """The points of one series worth drawing, in time order. Two points closer than a point's
    width overlap, so a month of hourly spot prices (thousands of points, most of a page's
    bytes) keeps per point-wide column of the plot only its lowest and its highest price, the
    ones a reader looks for; and a point within the radius of the one drawn before it, hidden
    under it, is not drawn. The line still steps through every price."""
    columns: dict[int, list[Mark]] = {}
    for mark in marks:
        columns.setdefault(int(mark[0] // (2 * radius)), []).append(mark)
    kept: list[Mark] = []
    last = (-math.inf, -math.inf)
    for column in columns.values():
        low = min(column, key=lambda m: m[2].price)
        high = max(column, key=lambda m: m[2].price)
        for mark in [low] if low is high else sorted((low, high), key=lambda m: m[0]):
            if abs(mark[0] - last[0]) < radius and abs(mark[1] - last[1]) < radius:
                continue
            kept.append(mark)
            last = (mark[0], mark[1])
    return kept


def tco_svg(answer: Tco) -> Markup:
    """The bars of the best option per strategy (and per blended plan), cheapest on top."""
    from tracker.charts import labels
    from tracker.charts.tco import bars

    shown = bars(answer)
    fig = Figure(labels.title(answer), xlabel=f"total cost over {answer.need.months:g} months "
                 "(USD)", height=TOP + BOTTOM + 30 * len(shown) + 10, left=330)  # fmt: skip
    x = _value_scale(fig, 0.0, max((b.total_usd for b in shown), default=1.0) * 1.15, across=True)
    for n, bar in enumerate(shown):
        top = TOP + 5 + 30 * n
        fig.bars.append({"x": fig.left, "y": top, "w": max(x(bar.total_usd) - fig.left, 1.0),
                         "h": 22, "colour": _BARS.get(bar.kind, "#7f7f7f"), "label": bar.label,
                         "value": f"{bar.total_usd:,.0f}",
                         "tip": f"{bar.label}: {bar.total_usd:,.2f} USD"})  # fmt: skip
    return render(fig)


def index_svg(rows: Sequence[IndexRow], title: str) -> Markup:
    """The market index per segment over its days, its 95% interval as a band; a point per
    day, titled with the value, the interval and the providers behind it."""
    fig = Figure(title, "USD per GPU-hour (median over providers)")
    days = [r.date for r in rows] or [datetime.now(UTC).date()]
    values = [v for r in rows for v in (r.index_usd_per_gpu_hour, r.ci_low, r.ci_high) if v]
    drawn = [s for s in SEGMENTS if any(r.segment == s for r in rows)]
    per = {s: sorted((r for r in rows if r.segment == s), key=lambda r: r.date) for s in drawn}
    fig.legend = [(COLOURS[n % len(COLOURS)], "", f"{s} ({per[s][-1].providers} providers)")
                  for n, s in enumerate(drawn)]  # fmt: skip
    fig.radius = 3.5 if len(days) <= 30 * len(drawn) else 2.0
    x_of = _time_scale(fig, _midnight(min(days)), _midnight(max(days)) + timedelta(days=1))
    y = _value_scale(fig, min(values, default=0.0), max(values, default=1.0))

    def x(day: date) -> float:
        return x_of(_midnight(day) + timedelta(hours=12))

    for (colour, _dash, _label), segment in zip(fig.legend, drawn, strict=True):
        mine = per[segment]
        steps = [f"{x(r.date):.1f},{y(r.index_usd_per_gpu_hour):.1f}" for r in mine]
        fig.lines.append({"d": "M" + "L".join(steps), "colour": colour, "dash": ""})
        sure = [r for r in mine if r.ci_low is not None and r.ci_high is not None]
        if sure:
            edge = [f"{x(r.date):.1f},{y(r.ci_high or 0):.1f}" for r in sure]
            edge += [f"{x(r.date):.1f},{y(r.ci_low or 0):.1f}" for r in reversed(sure)]
            fig.bands.append((" ".join(edge), colour))
        for r in mine:
            interval = "" if r.ci_low is None else f" (95%: {r.ci_low:.4f} to {r.ci_high:.4f})"
            tip = (f"{segment}, {r.date}: {r.index_usd_per_gpu_hour:.4f} USD per GPU-hour"
                   f"{interval}, {r.providers} providers")  # fmt: skip
            fig.points.append((x(r.date), y(r.index_usd_per_gpu_hour), colour, tip))
    return render(fig)


def _midnight(day: date) -> datetime:
    return datetime.combine(day, time(), tzinfo=UTC)


def _time_scale(fig: Figure, since: datetime, until: datetime) -> Callable[[datetime], float]:
    """x of a time in [since, until]; ticks at whole days (or hours) the span calls for."""
    span = max((until - since).total_seconds(), 1.0)
    right = WIDTH - RIGHT

    def x(moment: datetime) -> float:
        return fig.left + (right - fig.left) * (moment - since).total_seconds() / span

    step = next((s for s in _TIME_STEPS if span / s.total_seconds() <= 8), _TIME_STEPS[-1])
    first = datetime.combine(since.astimezone(UTC).date(), time(), tzinfo=UTC)
    tick = first + step * math.ceil((since - first) / step)
    shape = "%Y-%m-%d" if step >= timedelta(days=1) else "%m-%d %H:%M"
    while tick <= until:
        fig.xticks.append((x(tick), f"{tick:{shape}}"))
        tick += step
    return x


_TIME_STEPS = [timedelta(hours=h) for h in (1, 3, 6, 12)] + [
    timedelta(days=d) for d in (1, 2, 7, 14, 30, 61, 91, 182, 365)
]


def _value_scale(
    fig: Figure, low: float, high: float, *, across: bool = False
) -> Callable[[float], float]:
    """y (or, `across`, x) of a value, the axis from a round number under `low` (0 when the
    values are all positive and not far from it) to one over `high`; five or so ticks."""
    if high <= low:
        low, high = low - 1.0, high + 1.0
    low = 0.0 if 0 <= low < (high - low) else low
    step = _round_step((high - low) / 5)
    low, high = math.floor(low / step) * step, math.ceil(high / step) * step
    near, far = (fig.left, WIDTH - RIGHT) if across else (fig.bottom, TOP)

    def at(value: float) -> float:
        return near + (far - near) * (value - low) / (high - low)

    places = len(f"{step:.6g}".partition(".")[2])  # 0.25: two places; 5: none
    ticks = [(at(low + k * step), f"{low + k * step:,.{places}f}")
             for k in range(round((high - low) / step) + 1)]  # fmt: skip
    if across:
        fig.xticks = ticks
    else:
        fig.yticks = ticks
    return at


def _round_step(raw: float) -> float:
    power = 10.0 ** math.floor(math.log10(raw))
    return next(m * power for m in (1.0, 2.0, 2.5, 5.0, 10.0) if m * power >= raw)
