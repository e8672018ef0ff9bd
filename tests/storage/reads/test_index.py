"""The market index's values, worked by hand from `index_support`'s store (its docstring has
the numbers): one vote per provider, lower medians, the segments, the sold-out offer left out,
CNY through the dated rate, and the interval's order statistics for n = 5, 6 and 9."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from storage.reads.gpu_filter import GpuChoice
from storage.reads.index import read
from storage.reads.index.read import IndexFilters
from tests.storage.reads import index_support
from tests.storage.reads.index_support import NOW


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return index_support.build(tmp_path_factory.mktemp("index") / "prices.duckdb")


def values(store: Path, gpu: str, segment: str | None = "all") -> dict[tuple[date, str], tuple]:
    days = read.days_of(datetime(2026, 10, 30, tzinfo=UTC), NOW, NOW)
    rows = read.index(store, IndexFilters(GpuChoice(gpu), "on_demand", segment), days)
    return {
        (r.date, r.segment): (r.index_usd_per_gpu_hour, r.providers, r.ci_low, r.ci_high)
        for r in rows
    }


def test_an_even_count_of_providers_takes_the_lower_middle(store: Path) -> None:
    found = values(store, "H100", None)
    # aws: median of 2.0, 4.0, 9.0 = 4.0; tencent 160 CNY / 8 GPUs * 0.14 = 2.8; lambdalabs
    # 2.5; vastai 1.6 (its sold-out 1.0 would make its vote 1.0). Sorted: 1.6 2.5 2.8 4.0.
    assert found[(date(2026, 11, 2), "all")] == (2.5, 4, None, None)
    assert found[(date(2026, 11, 2), "hyperscaler")] == (2.8, 2, None, None)
    assert found[(date(2026, 11, 2), "neocloud")] == (2.5, 1, None, None)
    assert found[(date(2026, 11, 2), "marketplace")] == (1.6, 1, None, None)


def test_today_counts_what_holds_now_and_no_day_without_offers(store: Path) -> None:
    found = values(store, "H100")
    # Today lambdalabs is at 2.0 (since 06:00; its 18:00 price is after now): 1.6 2.0 2.8 4.0.
    assert found[(date(2026, 11, 3), "all")] == (2.0, 4, None, None)
    assert found[(date(2026, 11, 1), "all")] == (2.5, 4, None, None)
    assert sorted(d for d, _ in found) == [date(2026, 11, d) for d in (1, 2, 3)]


def test_runpods_community_offers_are_marketplace_its_others_neocloud(store: Path) -> None:
    found = values(store, "L40S", None)
    day = date(2026, 11, 2)
    assert found[(day, "all")] == (0.5, 2, None, None)
    assert found[(day, "marketplace")] == (0.5, 2, None, None)
    assert found[(day, "neocloud")] == (1.2, 1, None, None)
    assert (day, "hyperscaler") not in found


def test_low_confidence_under_three_providers(store: Path) -> None:
    days = read.days_of(datetime(2026, 11, 2, tzinfo=UTC), NOW, NOW)
    rows = read.index(store, IndexFilters(GpuChoice("H100"), None, None), days)
    flags = {(r.segment, r.date): r.low_confidence for r in rows}
    assert flags[("all", date(2026, 11, 2))] is False
    assert flags[("hyperscaler", date(2026, 11, 2))] is True


def test_the_interval_is_order_statistics_of_the_provider_values(store: Path) -> None:
    day = (date(2026, 11, 2), "all")
    # n = 5: P(X < 1) = 1/32 = 0.031 > 0.025: no k >= 1, no interval; median the 3rd.
    assert values(store, "A10")[day] == (3.0, 5, None, None)
    # n = 6: P(X < 1) = 1/64 = 0.016 <= 0.025, P(X < 2) = 7/64 = 0.109: k = 1, the 1st and
    # 6th; the lower middle of 1..6 is 3.
    assert values(store, "L4")[day] == (3.0, 6, 1.0, 6.0)
    # n = 9: P(X < 2) = (1 + 9)/512 = 0.0195, P(X < 3) = (1 + 9 + 36)/512 = 0.090: k = 2, the
    # 2nd and 8th.
    assert values(store, "A100")[day] == (5.0, 9, 2.0, 8.0)


def test_the_window_ends_today_and_a_date_until_is_excluded() -> None:
    days = read.days_of(datetime(2026, 11, 1, tzinfo=UTC), NOW + timedelta(days=9), NOW)
    assert (days.first, days.last) == (date(2026, 11, 1), date(2026, 11, 3))
    days = read.days_of(
        datetime(2026, 11, 1, 5, tzinfo=UTC), datetime(2026, 11, 3, tzinfo=UTC), NOW
    )
    assert (days.first, days.last) == (date(2026, 11, 1), date(2026, 11, 2))


def test_the_offers_behind_a_value_carry_their_provider_median(store: Path) -> None:
    day = date(2026, 11, 2)
    offers = read.behind(
        store, IndexFilters(GpuChoice("H100"), "on_demand"), read.Days(day, day, NOW)
    )
    medians = {(o["provider"], o["instance_type"]): o["provider_median"] for o in offers}
    assert medians == {
        ("vastai", "v1"): 1.6,
        ("lambdalabs", "l"): 2.5,
        ("tencent", "t"): 2.8,
        ("aws", "a"): 4.0,
        ("aws", "b"): 4.0,
        ("aws", "c"): 4.0,
    }
