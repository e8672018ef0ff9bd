"""The dashboard's own SVG charts, drawn from hand-made series: every price is a point titled
with its value and time (what the browser shows on hover), a withdrawn stretch breaks the line,
the axis covers every price, and text from the store is escaped."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from storage.reads.series import Interval, Window
from tracker.web import charts

T = datetime(2026, 11, 1, tzinfo=UTC)


def at(day: int, hour: int = 0) -> datetime:
    return T.replace(day=day, hour=hour)


def test_each_price_is_a_titled_point_and_a_gap_breaks_the_line() -> None:
    steps = [
        Interval(at(2), at(4), 2.5),
        Interval(at(4), at(5, 12), 3.25),  # contiguous: the line goes on
        Interval(at(7), at(9), 1.75),  # after a gap (withdrawn on the 5th): a new line
    ]
    svg = charts.history_svg(
        [charts.Series("aws/us-east-1/p5 <spot>", steps)],
        "USD",
        Window(at(1), at(10)),
        0,
        "GPU-hour",
    )
    titles = re.findall(r"<title>(.*?)</title>", svg, re.S)
    assert titles == [
        "aws/us-east-1/p5 &lt;spot&gt;\n2026-11-02 00:00 UTC: 2.5000 USD per GPU-hour",
        "aws/us-east-1/p5 &lt;spot&gt;\n2026-11-04 00:00 UTC: 3.2500 USD per GPU-hour",
        "aws/us-east-1/p5 &lt;spot&gt;\n2026-11-07 00:00 UTC: 1.7500 USD per GPU-hour",
    ]
    line = re.search(r'<path d="(M[^"]*)" clip-path', svg)
    assert line is not None and line[1].count("M") == 2 and line[1].count("L") == 1
    ticks = [float(t) for t in re.findall(r'text-anchor="end">([\d.]+)</text>', svg)]
    assert ticks[0] <= 1.75 and ticks[-1] >= 3.25  # the axis holds every price
    assert "<spot>" not in svg  # escaped wherever it is shown


def test_the_index_points_say_their_day_value_and_interval() -> None:
    from storage.reads.index.read import IndexRow

    rows = [
        IndexRow(T.date(), "H100", 80.0, "on_demand", "all", 2.0, 7, 1.5, 2.5, False),
        IndexRow(at(2).date(), "H100", 80.0, "on_demand", "all", 2.2, 2, None, None, True),
    ]
    svg = charts.index_svg(rows, "H100 80GB on-demand")
    titles = re.findall(r"<title>(.*?)</title>", svg)
    assert titles == [
        "all, 2026-11-01: 2.0000 USD per GPU-hour (95%: 1.5000 to 2.5000), 7 providers",
        "all, 2026-11-02: 2.2000 USD per GPU-hour, 2 providers",
    ]
    assert svg.count("<polygon") == 1  # the interval's band, where it is known


def test_a_point_the_previous_one_would_hide_is_not_drawn_but_its_step_is() -> None:
    # Nine days across 856 px: an hour is about 4 px. Two prices half an hour and a tenth of a
    # cent apart would sit one under the other: the first stands for both; the line has both
    # steps.
    half_past = at(2).replace(minute=30)
    steps = [
        Interval(at(2, 0), half_past, 2.50),
        Interval(half_past, at(2, 2), 2.501),  # under the first point
        Interval(at(2, 2), at(3), 3.50),  # far above it: drawn
    ]
    svg = charts.history_svg(
        [charts.Series("s", steps)], "USD", Window(at(1), at(10)), 0, "GPU-hour"
    )
    titles = re.findall(r"<title>(.*?)</title>", svg, re.S)
    assert [t.split(": ")[1] for t in titles] == [
        "2.5000 USD per GPU-hour",
        "3.5000 USD per GPU-hour",
    ]
    line = re.search(r'<path d="(M[^"]*)" clip-path', svg)
    assert line is not None and line[1].count("H") == 3  # every price's step


def test_a_month_of_hourly_prices_keeps_each_columns_lowest_and_highest() -> None:
    # 30 days of hourly spot prices over 856 px: about 1.2 px an hour, so a point-wide column
    # (7 px) holds six prices. Each column keeps its cheapest and its dearest, titled with their
    # own value and time; the line still steps through every price.
    start = T.replace(day=1)
    prices = [2.0 + ((h * 37) % 101) / 100 for h in range(30 * 24)]
    steps = [
        Interval(start + timedelta(hours=h), start + timedelta(hours=h + 1), price)
        for h, price in enumerate(prices)
    ]
    window = Window(start, start + timedelta(days=30))
    svg = charts.history_svg([charts.Series("s", steps)], "USD", window, 0, "GPU-hour")
    points = re.findall(
        r'<circle class="point" cx="([\d.]+)".*?<title>.*?: ([\d.]+) USD', svg, re.S
    )
    assert 2 * 120 <= len(points) <= 2 * 124  # two per column, not 720
    line = re.search(r'<path d="(M[^"]*)" clip-path', svg)
    assert line is not None and line[1].count("H") == len(prices)
    width = 2 * charts.Figure("").radius
    columns: dict[int, list[float]] = {}
    for h, price in enumerate(prices):
        x = charts.LEFT + (charts.WIDTH - charts.RIGHT - charts.LEFT) * h / len(prices)
        columns.setdefault(int(x // width), []).append(price)
    kept = sorted(float(p) for _, p in points)
    assert kept == sorted(round(v, 4) for c in columns.values() for v in {min(c), max(c)})
