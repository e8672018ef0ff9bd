"""The time-weighted statistics of price series, checked against values worked out by hand from
the intervals of `series_support` (its docstring draws them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from storage.connection import connect
from storage.reads.series import (
    Interval,
    OfferKey,
    SeriesFilters,
    SeriesStats,
    Window,
    intervals,
    matching_series,
    statistics,
    statistics_sql,
)
from tests.storage.reads.series_support import SINCE, UNTIL, build, day

SPOT_KEY = OfferKey("aws", "us-east-1", "us-east-1a", "p4d.24xlarge", "spot", None, None, None)
TENCENT_KEY = OfferKey(
    "tencent", "ap-guangzhou", None, "GT4.41XLARGE948", "on_demand", None, None, None
)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("series") / "prices.duckdb")


def by_key(rows: list[SeriesStats]) -> dict[OfferKey, SeriesStats]:
    return {row.key: row for row in rows}


def test_spot_series_over_a_window_with_edges_a_gap_and_an_open_interval(store: Path) -> None:
    found = by_key(statistics(store, SeriesFilters(), Window(SINCE, UNTIL), below=11))
    spot = found[SPOT_KEY]
    # Inside [11-01, 11-11): 10 for 24 h (clipped at 11-01), 14 for 24 h, the 24 h gap not
    # counted, 12 for 96 h, 8 for 72 h (open, held to the window's end).
    assert spot.covered_hours == 24 + 24 + 96 + 72 == 216
    assert (spot.min, spot.max) == (8, 14)
    # (10*24 + 14*24 + 12*96 + 8*72) / 216 = (240 + 336 + 1152 + 576) / 216 = 2304 / 216
    assert spot.mean == round(2304 / 216, 6) == 10.666667
    # Time at or below each price: 8 -> 72 h, 10 -> 96 h, 12 -> 192 h, 14 -> 216 h.
    # Half is 108 h: 96 < 108 <= 192, so p50 = 12; 95 % is 205.2 h: 192 < 205.2, so p95 = 14.
    assert (spot.p50, spot.p95) == (12, 14)
    # Intervals starting strictly inside: 11-02 (14), 11-04 (12), 11-08 (8); not the one from
    # 10-31, nor the reappearance counted twice.
    assert spot.changes == 3
    assert spot.current == 8
    # Below 11: 8 for 72 h and 10 for 24 h -> 96 / 216.
    assert spot.below_share == round(96 / 216, 6) == 0.444444
    assert spot.currency == "USD"
    assert spot.mean_usd == spot.mean


def test_cny_series_in_its_own_currency_with_a_usd_mean_at_dated_rates(store: Path) -> None:
    tencent = by_key(statistics(store, SeriesFilters(), Window(SINCE, UNTIL)))[TENCENT_KEY]
    # 100 CNY from 11-01 (the window's start) for 120 h, then 120 CNY for 120 h (open).
    assert tencent.currency == "CNY"
    assert tencent.covered_hours == 240
    assert (tencent.min, tencent.max, tencent.mean) == (100, 120, 110)
    # Exactly half the time at 100: the lowest price with at least 50 % at or below it is 100.
    assert (tencent.p50, tencent.p95) == (100, 120)
    assert tencent.changes == 1  # 11-06; the first began at the window's start, not inside it
    assert tencent.current == 120
    assert tencent.below_share is None
    below = statistics(store, SeriesFilters(provider="tencent"), Window(SINCE, UNTIL), below=110)
    assert below[0].below_share == 0.5  # 100 CNY for 120 of 240 h; 120 is not below 110
    none_below = statistics(
        store, SeriesFilters(provider="tencent"), Window(SINCE, UNTIL), below=100
    )
    assert none_below[0].below_share == 0  # strictly below: 100 is not below 100
    # The closed interval ends 11-06: rate of 10-01, 0.14 -> 14 USD; the open one is dated
    # today: rate of 11-07, 0.15 -> 18 USD. (14*120 + 18*120) / 240 = 16.
    assert tencent.mean_usd == 16


def test_a_window_ending_before_the_last_changes(store: Path) -> None:
    found = by_key(statistics(store, SeriesFilters(kind="spot"), Window(SINCE, day(3))))
    spot = found[SPOT_KEY]
    # [11-01, 11-03): 10 for 24 h, 14 for 24 h. Exactly half at 10 -> p50 = 10.
    assert (spot.covered_hours, spot.mean, spot.p50, spot.p95) == (48, 12, 10, 14)
    assert spot.changes == 1
    assert spot.current == 8  # the series' open interval, though it opened after the window
    assert list(found) == [SPOT_KEY]


def test_an_interval_starting_at_since_is_not_a_change(store: Path) -> None:
    spot = by_key(statistics(store, SeriesFilters(kind="spot"), Window(day(2), UNTIL)))[SPOT_KEY]
    assert spot.changes == 2  # 11-04 and 11-08; 11-02 is the window's start
    # 14 for 24 h, 12 for 96 h, 8 for 72 h: 192 h; (336 + 1152 + 576) / 192 = 10.75
    assert (spot.covered_hours, spot.mean) == (192, 10.75)


def test_only_the_gap_in_the_window_gives_no_series(store: Path) -> None:
    window = Window(day(3), day(4))
    assert statistics(store, SeriesFilters(provider="aws"), window) == []
    assert matching_series(store, SeriesFilters(provider="aws")) == 1


def test_filters_and_exact_keys(store: Path) -> None:
    window = Window(SINCE, UNTIL)
    assert [r.key for r in statistics(store, SeriesFilters(gpu="a100"), window)] == [
        SPOT_KEY,  # cheapest mean in USD first: 10.67 < 16
        TENCENT_KEY,
    ]
    assert [r.key for r in statistics(store, SeriesFilters(zone="US-EAST-1A"), window)] == [
        SPOT_KEY
    ]
    assert [r.key for r in statistics(store, SeriesFilters(keys=(TENCENT_KEY,)), window)] == [
        TENCENT_KEY
    ]
    assert statistics(store, SeriesFilters(keys=()), window) == []
    assert statistics(store, SeriesFilters(gpu="H100"), window) == []
    assert statistics(store, SeriesFilters(term=12), window) == []
    assert matching_series(store, SeriesFilters(gpu="H100")) == 0


def test_usd_prices_as_a_relation_for_a_larger_query(store: Path) -> None:
    sql, params = statistics_sql(SeriesFilters(), Window(SINCE, UNTIL), price="price_per_hour_usd")
    with connect(store, read_only=True) as con:
        rows = con.execute(
            f"WITH s AS ({sql}) SELECT provider, currency, mean, p95 FROM s ORDER BY provider",
            params,
        ).fetchall()
    # Tencent in USD: 14 for 120 h, 18 for 120 h -> mean 16, p95 18.
    assert rows == [("aws", "USD", 10.666667, 14), ("tencent", "USD", 16, 18)]


def test_intervals_clipped_to_the_window_for_a_chart(store: Path) -> None:
    series = intervals(store, SeriesFilters(kind="spot"), Window(SINCE, UNTIL))
    assert series == {
        (SPOT_KEY, "USD"): [
            Interval(SINCE, day(2), 10),
            Interval(day(2), day(3), 14),
            Interval(day(4), day(8), 12),
            Interval(day(8), UNTIL, 8),
        ]
    }
