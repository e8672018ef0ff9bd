"""What the measures read, on a real DuckDB file at explicit times: stale and sold-out offers,
a history with overlapping intervals, when a collection counts as done.

AWS's real p4d.24xlarge prices as in test_evaluate (on-demand 21.957642, spot 8.0468 in
use1-az1); the H100 spot prices are invented: 24.00 (3.00 per GPU-hour), 22.00 (2.75), 26.40
(3.30), 16.00 (2.00).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import duckdb
import pytest

from collectors.base import PriceRecord
from tests.alerts.support import DAY, T0, Bench, H, offer, rules

MIN = timedelta(minutes=1)
H100_LOW = {"name": "h100-low", "kind": "new_low", "window": "7d", "currency": "USD",
            "gpu_model": "H100", "price_kind": "spot"}  # fmt: skip
CHEAP = {"name": "cheap-a100-spot", "kind": "spot_price_below", "threshold": 1.10,
         "currency": "USD", "gpu_model": "A100"}  # fmt: skip
AZ1 = "aws/us-east-1/use1-az1/p4d.24xlarge/spot/USD"


@pytest.fixture
def bench(tmp_path: Path) -> Bench:
    return Bench(tmp_path / "prices.duckdb")


def h100(price: str, zone: str = "use1-az4", region: str = "us-east-1") -> PriceRecord:
    return offer(price, itype="p5.48xlarge", kind="spot", zone=zone, region=region)


def sold_out(record: PriceRecord) -> PriceRecord:
    return replace(record, available=False)


def test_new_low_keeps_its_state_while_the_low_is_stale(bench: Bench) -> None:
    rule = rules(H100_LOW)
    west = h100("26.40", zone="usw2-az1", region="us-west-2")
    bench.collect([h100("24.00"), west], T0, regions=None)
    assert bench.fired(rule, T0) == []
    bench.collect([h100("22.00"), west], T0 + H, regions=None)
    assert bench.fired(rule, T0 + H) == ["H100/spot/USD"]  # 2.75 under 3.00
    # Only us-west-2 is collected: the 2.75 in us-east-1 is stale, not gone. The fresh low
    # (3.30) is no low at all while it may be back at the next collection.
    bench.collect([west], T0 + 2 * H, regions=["us-west-2"])
    assert bench.fired(rule, T0 + 2 * H) == []
    assert bench.sql("SELECT active, last_value FROM alert_state") == [(True, 2.75)]
    # Back, the same 2.75: nothing new to say.
    bench.collect([h100("22.00"), west], T0 + 3 * H, regions=None)
    assert bench.fired(rule, T0 + 3 * H) == []


def test_new_low_ignores_a_price_left_stale_for_months(bench: Bench) -> None:
    # us-west-2 had 2.00 sixty days ago and is collected no more: its interval stays open,
    # last confirmed then. It was not seen in the last 7 days.
    west = h100("16.00", zone="usw2-az1", region="us-west-2")
    bench.collect([west, h100("24.00")], T0 - 60 * DAY, regions=None)
    bench.collect([h100("24.00")], T0 - 2 * DAY, regions=["us-east-1"])
    bench.collect([h100("22.00")], T0, regions=["us-east-1"])
    (event,) = bench.check(rules(H100_LOW), T0).fired
    assert (event.subject, event.value, event.threshold) == ("H100/spot/USD", 2.75, 3.0)


def overlap(bench: Bench, sql: str) -> None:
    """Writes what the store itself must never write: a second interval of an offer over the
    time of another (the alerts must survive it all the same)."""
    with duckdb.connect(str(bench.path)) as con:
        con.execute(sql)


def test_overlapping_history_measures_one_past_price(bench: Bench) -> None:
    od = offer("21.957642")
    bench.collect([od, offer("10.00", kind="spot", zone="use1-az1")], T0 - 2 * H)
    bench.collect([od, offer("8.00", kind="spot", zone="use1-az1")], T0)
    # 9.00 from T0 - 90 min to T0, over the 10.00 of T0 - 2 h to T0.
    overlap(bench, """
        INSERT INTO price_intervals
        SELECT * REPLACE (9.00 AS price_per_hour, valid_from + INTERVAL 30 MINUTE AS valid_from,
                          NULL AS price_per_gpu_hour)  -- not stored: the view computes it
        FROM price_intervals WHERE price_kind = 'spot' AND price_per_hour = 10
    """)  # fmt: skip
    change = {"name": "chg", "kind": "price_change", "threshold": 10, "window": "80m"}
    report = bench.check(rules(change, CHEAP), T0)
    # The price in force 80 minutes ago is the one that took effect last: 8 / 9 - 1.
    assert [(e.rule, e.subject, e.value) for e in report.fired] == [
        ("cheap-a100-spot", AZ1, 1.0),
        ("chg", AZ1, -11.111111),
    ]
    assert bench.check(rules(change, CHEAP), T0 + MIN).fired == []  # and later runs work


def test_a_subject_measured_twice_fires_once(bench: Bench) -> None:
    bench.collect([offer("21.957642"), offer("8.0468", kind="spot", zone="use1-az1")], T0)
    overlap(bench, "INSERT INTO price_intervals SELECT * FROM price_intervals "
                   "WHERE price_kind = 'spot'")  # fmt: skip
    assert bench.fired(rules(CHEAP), T0) == [AZ1]
    assert bench.sql("SELECT count(*) FROM alert_events") == [(1,)]
    assert bench.fired(rules(CHEAP), T0 + MIN) == []


def test_stale_data_counts_from_the_end_of_the_last_collection(bench: Bench) -> None:
    rule = rules({"name": "stale", "kind": "stale_data", "window": "6h"})
    # A collection that took six hours: started at T0 - 7 h, done at T0 - 1 h.
    records = [offer("21.957642")]
    bench.collect(records, T0 - 7 * H, finished_at=T0 - H)
    assert bench.fired(rule, T0) == []
    assert bench.fired(rule, T0 + 5 * H) == []  # 6.0 h since it was done: not over
    (event,) = bench.check(rule, T0 + 6 * H).fired
    assert event.detail == "aws: no successful collection for 7.0 h (limit 6h)"


def test_price_rules_leave_sold_out_offers_out(bench: Bench) -> None:
    od = offer("21.957642")
    az1, az2 = (offer("8.0468", kind="spot", zone=z) for z in ("use1-az1", "use1-az2"))
    reserved = offer("8.159056", kind="reserved", term=36, payment="all_upfront")
    # az1 and the reservation are sold out; az2 does not say (NULL): available.
    bench.collect([od, sold_out(az1), replace(az2, available=None), sold_out(reserved)], T0)
    rule_set = rules(
        CHEAP,
        {"name": "deep-spot", "kind": "spot_discount_above", "threshold": 60},
        {"name": "3y-deal", "kind": "reserved_discount_above", "threshold": 60},
    )
    az2_id = "aws/us-east-1/use1-az2/p4d.24xlarge/spot/USD"
    report = bench.check(rule_set, T0)
    assert sorted((e.rule, e.subject) for e in report.fired) == [
        ("cheap-a100-spot", az2_id),
        ("deep-spot", az2_id),
    ]
    assert all(e.facts["alternatives"] == [] for e in report.fired)  # az1 is no alternative


def test_a_capacity_flicker_never_alerts_twice_for_one_crossing(bench: Bench) -> None:
    # Found in review: sold out for one reading, then back at the same price, fired again.
    od, az1 = offer("21.957642"), offer("8.0468", kind="spot", zone="use1-az1")
    bench.collect([od, az1], T0)
    assert bench.fired(rules(CHEAP), T0) == [AZ1]
    bench.collect([od, sold_out(az1)], T0 + H)
    assert bench.fired(rules(CHEAP), T0 + H) == []
    assert bench.sql("SELECT active FROM alert_state") == [(True,)]  # no reading: kept
    bench.collect([od, az1], T0 + 2 * H)  # capacity again, the same price: the same crossing
    assert bench.fired(rules(CHEAP), T0 + 2 * H) == []
    assert bench.fired(rules(CHEAP), T0 + 9 * H) == []  # nor once any cooldown is over


def test_price_change_announces_one_cut_once_across_a_flicker(bench: Bench) -> None:
    change = rules({"name": "cut", "kind": "price_change", "threshold": 10, "window": "7d"})
    bench.collect([offer("32.7726")], T0 - 10 * DAY)
    bench.collect([offer("21.957642")], T0)
    assert len(bench.check(change, T0).fired) == 1  # -33.0 %
    bench.collect([sold_out(offer("21.957642"))], T0 + H)
    bench.collect([offer("21.957642")], T0 + 2 * H)
    assert bench.check(change, T0 + 2 * H).fired == []


def test_price_change_of_a_sold_out_offer_is_not_measured(bench: Bench) -> None:
    change = rules({"name": "cut", "kind": "price_change", "threshold": 10, "window": "7d"})
    bench.collect([sold_out(offer("32.7726"))], T0 - 10 * DAY)
    bench.collect([sold_out(offer("21.957642"))], T0)
    assert bench.fired(change, T0) == []
    # Available again: the cut against the price a week ago, sold out then or not.
    bench.collect([offer("21.957642")], T0 + H)
    (event,) = bench.check(change, T0 + H).fired
    assert (event.subject, event.value) == ("aws/us-east-1/p4d.24xlarge/on_demand/USD", -33.0)


def test_new_low_is_among_offers_one_can_get(bench: Bench) -> None:
    rule = rules(H100_LOW)
    west = h100("16.00", zone="usw2-az1", region="us-west-2")
    bench.collect([h100("24.00"), sold_out(west)], T0, regions=None)
    assert bench.fired(rule, T0) == []
    # 2.75 is the lowest price one could get this week: the sold-out 2.00 does not count.
    bench.collect([h100("22.00"), sold_out(west)], T0 + H, regions=None)
    (event,) = bench.check(rule, T0 + H).fired
    assert (event.value, event.threshold, event.facts["alternatives"]) == (2.75, 3.0, [])
