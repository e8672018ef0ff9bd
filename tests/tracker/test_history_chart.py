"""The history step chart: the plotted points are the intervals, held until each ends, with a
break where no interval covers the time."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path

from PIL import Image

from storage.reads.series import Interval
from tracker.charts import history
from tracker.charts.base import save


def at(day: int) -> datetime:
    return datetime(2026, 11, day, tzinfo=UTC)


INTERVALS = [
    Interval(at(1), at(2), 10.0),
    Interval(at(2), at(3), 14.0),  # contiguous: 14 takes over at 11-02
    Interval(at(4), at(8), 12.0),  # after a gap of a day
    Interval(at(8), at(11), 8.0),
]


def test_step_points_hold_each_price_until_its_end_and_break_at_gaps() -> None:
    xs, ys = history.step_points(INTERVALS)
    assert xs == [at(1), at(2), at(3), at(3), at(4), at(8), at(11)]
    assert ys[:3] == [10.0, 14.0, 14.0]
    assert math.isnan(ys[3])
    assert ys[4:] == [12.0, 8.0, 8.0]


def test_the_drawn_lines_are_the_series_steps(tmp_path: Path) -> None:
    lines = [
        history.Series("aws/us-east-1/us-east-1a/p4d.24xlarge spot", INTERVALS),
        history.Series("aws/us-east-1/us-east-1b/p4d.24xlarge spot", INTERVALS[2:]),
    ]
    fig = history.draw(lines, currency="USD", since=at(1), until=at(11), left_out=3)
    ax = fig.axes[0]
    drawn = ax.get_lines()
    assert [line.get_label() for line in drawn] == [s.label for s in lines]
    assert all(line.get_drawstyle() == "steps-post" for line in drawn)
    ys = list(drawn[1].get_ydata())  # type: ignore[arg-type]
    assert ys == [12.0, 8.0, 8.0]
    assert ax.get_ylabel() == "USD per instance-hour"
    assert "2 series shown, 3 left out" in ax.get_title()
    target = save(fig, tmp_path / "h.png")
    with Image.open(target) as image:
        assert image.format == "PNG"


def test_fifteen_lines_have_fifteen_distinct_colour_and_dash_pairs() -> None:
    # matplotlib's own cycle repeats after ten colours: the 11th line looked like the 1st.
    lines = [history.Series(f"series {n}", INTERVALS) for n in range(15)]
    fig = history.draw(lines, currency="USD", since=at(1), until=at(11))
    drawn = fig.axes[0].get_lines()
    pairs = {(line.get_color(), line.get_linestyle()) for line in drawn}
    assert len(drawn) == len(pairs) == 15
    # The legend shows each line as drawn, so it tells them apart too.
    legend = fig.axes[0].get_legend()
    assert legend is not None
    keys = {(h.get_color(), h.get_linestyle()) for h in legend.get_lines()}
    assert keys == pairs
    assert len({line.get_color() for line in drawn}) == 15  # colours alone differ up to 20
