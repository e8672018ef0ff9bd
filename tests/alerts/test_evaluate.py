"""Rule evaluation on a real DuckDB file: each kind, edge triggering, re-arming, hysteresis,
cooldown, stale data, currencies.

Prices are AWS's real p4d.24xlarge us-east-1 figures (shared/api-notes/aws-gcp-azure.md §7):
on-demand 21.957642 (32.7726 before the mid-2025 cut), spot 8.0468 - 9.1506 across zones,
3-year standard All Upfront effective 8.159056, 1-year standard No Upfront 13.921094. Anything
else (H100 spot prices, the CNY offer) is invented and says so where it is used.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

from collectors.base import PriceRecord
from storage.fx import FxRate
from storage.store import Store
from tests.alerts.support import DAY, T0, Bench, H, offer, rules

OD = "21.957642"
SPOT_RULE = {
    "name": "cheap-a100-spot",
    "kind": "spot_price_below",
    "threshold": 1.10,
    "currency": "USD",
    "gpu_model": "A100",
}
AZ1 = "aws/us-east-1/use1-az1/p4d.24xlarge/spot/USD"


@pytest.fixture
def bench(tmp_path: Path) -> Bench:
    return Bench(tmp_path / "prices.duckdb")


def spot(price: str, zone: str = "use1-az1") -> list[PriceRecord]:
    return [offer(OD), offer(price, kind="spot", zone=zone)]


def test_spot_price_below_fires_on_the_crossing_not_while_it_holds(bench: Bench) -> None:
    rule = rules(SPOT_RULE)
    bench.collect(spot("9.1506"), T0)  # 9.1506 / 8 = 1.143825 per GPU-hour: above 1.10
    assert bench.fired(rule, T0) == []
    bench.collect(spot("8.0468"), T0 + H)  # 8.0468 / 8 = 1.00585: at or under 1.10
    report = bench.check(rule, T0 + H)
    (event,) = report.fired
    assert (event.rule, event.subject, event.value, event.threshold) == (
        "cheap-a100-spot",
        AZ1,
        1.00585,
        1.1,
    )
    assert event.detail == (
        "spot price 1.00585 USD/GPU-h is at or under 1.10 USD/GPU-h: "
        "aws us-east-1 (use1-az1) p4d.24xlarge, 8x A100, spot"
    )
    assert event.channel == "console" and "cheap-a100-spot: spot price 1.00585" in (
        bench.console.getvalue()
    )
    bench.collect(spot("8.0468"), T0 + 2 * H)
    assert bench.fired(rule, T0 + 2 * H) == []  # still holds: no second alert
    bench.collect(spot("9.1506"), T0 + 3 * H)
    assert bench.fired(rule, T0 + 3 * H) == []  # cleared: re-armed
    bench.collect(spot("8.0468"), T0 + 4 * H)
    assert bench.fired(rule, T0 + 4 * H) == [AZ1]  # crossed again
    assert bench.sql("SELECT count(*), count(DISTINCT fired_at) FROM alert_events") == [(2, 2)]


def test_a_price_exactly_at_the_threshold_fires(bench: Bench) -> None:
    bench.collect(spot("8.80"), T0)  # 8.80 / 8 = 1.10 exactly
    assert bench.fired(rules(SPOT_RULE), T0) == [AZ1]


def test_a_threshold_per_instance_hour(bench: Bench) -> None:
    rule = rules({**SPOT_RULE, "per": "instance", "threshold": 8.10})
    bench.collect(spot("8.0468"), T0)  # the whole p4d.24xlarge, under 8.10 an hour
    (event,) = bench.check(rule, T0).fired
    assert (event.value, event.threshold) == (8.0468, 8.1)
    assert event.detail.startswith("spot price 8.0468 USD/h is at or under 8.10 USD/h: ")


def test_hysteresis_keeps_the_alert_quiet_near_the_threshold(bench: Bench) -> None:
    rule = rules({**SPOT_RULE, "hysteresis": 0.05})  # re-arms only above 1.15
    bench.collect(spot("8.0468"), T0)  # 1.00585
    assert bench.fired(rule, T0) == [AZ1]
    bench.collect(spot("9.04"), T0 + H)  # 1.13: over the threshold, inside the band
    assert bench.fired(rule, T0 + H) == []
    bench.collect(spot("8.0468"), T0 + 2 * H)
    assert bench.fired(rule, T0 + 2 * H) == []  # never re-armed: no new alert
    bench.collect(spot("9.1506"), T0 + 3 * H)  # 1.143825: still inside the band
    bench.check(rule, T0 + 3 * H)
    bench.collect(spot("9.60"), T0 + 4 * H)  # 1.20: out of the band, re-armed
    assert bench.fired(rule, T0 + 4 * H) == []
    bench.collect(spot("8.0468"), T0 + 5 * H)
    assert bench.fired(rule, T0 + 5 * H) == [AZ1]


def test_cooldown_holds_back_a_second_crossing_until_it_ends(bench: Bench) -> None:
    rule = rules({**SPOT_RULE, "cooldown": "6h"})
    bench.collect(spot("8.0468"), T0)
    assert bench.fired(rule, T0) == [AZ1]
    bench.collect(spot("9.1506"), T0 + H)
    assert bench.fired(rule, T0 + H) == []  # cleared
    bench.collect(spot("8.0468"), T0 + 2 * H)
    assert bench.fired(rule, T0 + 2 * H) == []  # crossed again inside the cooldown
    bench.collect(spot("8.0468"), T0 + 5 * H)
    assert bench.fired(rule, T0 + 5 * H) == []
    bench.collect(spot("8.0468"), T0 + 6 * H)
    assert bench.fired(rule, T0 + 6 * H) == [AZ1]  # the cooldown is over and it still holds


def test_state_survives_a_restart(bench: Bench, tmp_path: Path) -> None:
    rule = rules(SPOT_RULE)
    bench.collect(spot("8.0468"), T0)
    assert bench.fired(rule, T0) == [AZ1]
    # A new process: nothing is carried over but the file.
    again = Bench(tmp_path / "prices.duckdb")
    again.collect(spot("8.0468"), T0 + H)
    assert again.fired(rule, T0 + H) == []
    assert again.sql("SELECT rule, subject, active, last_value FROM alert_state") == [
        ("cheap-a100-spot", AZ1, True, 1.00585)
    ]


def test_spot_discount_against_on_demand_of_the_same_instance(bench: Bench) -> None:
    rule = rules({"name": "deep-spot", "kind": "spot_discount_above", "threshold": 60})
    # 1 - 8.0468 / 21.957642 = 63.353078 %; 1 - 9.1506 / 21.957642 = 58.326126 % (under 60)
    records = [offer(OD), offer("8.0468", kind="spot", zone="use1-az1")]
    records.append(offer("9.1506", kind="spot", zone="use1-az2"))
    # Spot in another region has no on-demand price there to compare with: never compared.
    records.append(offer("7.0", kind="spot", zone="usw2-az1", region="us-west-2"))
    bench.collect(records, T0, regions=None)
    (event,) = bench.check(rule, T0).fired
    assert (event.subject, event.value, event.threshold) == (AZ1, 63.353078, 60.0)
    assert event.facts["reference"] == 2.744705  # on-demand per GPU-hour, 21.957642 / 8
    assert event.detail == (
        "spot is 63.4% under on-demand (1.00585 vs 2.744705 USD/GPU-h), at least 60%: "
        "aws us-east-1 (use1-az1) p4d.24xlarge, 8x A100, spot"
    )


def test_reserved_discounts_by_term_and_payment_option(bench: Bench) -> None:
    three_all = offer("8.159056", kind="reserved", term=36, payment="all_upfront")
    one_none = offer("13.921094", kind="reserved", term=12, payment="no_upfront")
    one_all = offer("12.993037", kind="reserved", term=12, payment="all_upfront")
    bench.collect([offer(OD), three_all, one_none, one_all], T0)
    rule_set = rules(
        # 1 - 8.159056 / 21.957642 = 62.841839 %
        {"name": "3y-deal", "kind": "reserved_discount_above", "threshold": 60, "term_months": 36},
        # 1 - 13.921094 / 21.957642 = 36.600232 % (at most 40: fires); 1 - 12.993037 / 21.957642
        # = 40.826811 % (more than 40: not)
        {"name": "1y-poor", "kind": "reserved_discount_below", "threshold": 40, "term_months": 12},
        {
            "name": "1y-all",
            "kind": "reserved_discount_above",
            "threshold": 40,
            "term_months": 12,
            "payment_option": "all_upfront",
        },
    )
    got = {(e.rule, e.subject, e.value) for e in bench.check(rule_set, T0).fired}
    assert got == {
        ("3y-deal", "aws/us-east-1/p4d.24xlarge/reserved/36mo/all_upfront/standard/USD", 62.841839),
        ("1y-poor", "aws/us-east-1/p4d.24xlarge/reserved/12mo/no_upfront/standard/USD", 36.600232),
        ("1y-all", "aws/us-east-1/p4d.24xlarge/reserved/12mo/all_upfront/standard/USD", 40.826811),
    }


def test_price_change_catches_a_list_price_cut(bench: Bench) -> None:
    # AWS's mid-2025 cut: p4d.24xlarge on-demand 32.7726 -> 21.957642, which is exactly -33 %.
    down = rules({"name": "cut", "kind": "price_change", "threshold": 10, "window": "7d"})
    up = rules({"name": "rise", "kind": "price_change", "threshold": 10, "window": "7d",
                "direction": "up"})  # fmt: skip
    bench.collect([offer("32.7726")], T0 - 10 * DAY)
    bench.collect([offer("32.7726")], T0 - 3 * DAY)
    assert bench.fired(down, T0 - 3 * DAY) == []
    bench.collect([offer(OD)], T0)
    (event,) = bench.check(down, T0 + H).fired
    assert (event.subject, event.value, event.threshold) == (
        "aws/us-east-1/p4d.24xlarge/on_demand/USD",
        -33.0,
        10.0,
    )
    assert event.detail.startswith(
        "on-demand price fell 33.0% in 7d (4.096575 -> 2.744705 USD/GPU-h), at least 10%"
    )
    assert bench.fired(up, T0 + H) == []
    # A week later the old price is out of the window: cleared, and nothing fires again.
    bench.collect([offer(OD)], T0 + 8 * DAY)
    assert bench.fired(down, T0 + 8 * DAY) == []
    assert bench.sql("SELECT active FROM alert_state WHERE rule = 'cut'") == [(False,)]


def test_new_low_of_a_gpu_model(bench: Bench) -> None:
    # Invented H100 spot prices per instance-hour: 24.00 (3.00/GPU) and 26.40 (3.30/GPU).
    rule = rules({"name": "h100-low", "kind": "new_low", "window": "7d", "currency": "USD",
                  "gpu_model": "H100", "price_kind": "spot"})  # fmt: skip
    h100 = {"itype": "p5.48xlarge", "kind": "spot"}
    first = [offer("24.00", zone="use1-az4", **h100), offer("26.40", zone="use1-az6", **h100)]
    bench.collect(first, T0)
    assert bench.fired(rule, T0) == []  # nothing to compare with yet
    cut = [offer("22.00", zone="use1-az4", **h100), offer("26.40", zone="use1-az6", **h100)]
    bench.collect(cut, T0 + H)  # 22.00 / 8 = 2.75 < 3.00, the lowest before
    (event,) = bench.check(rule, T0 + H).fired
    assert (event.subject, event.value, event.threshold) == ("H100/spot/USD", 2.75, 3.0)
    assert event.detail == (
        "new 7d low for H100 spot: 2.75 USD/GPU-h (lowest before: 3.00): "
        "aws us-east-1 (use1-az4) p5.48xlarge, 8x H100, spot"
    )
    assert event.facts["alternatives"] == [
        {"provider": "aws", "region": "us-east-1", "zone": "use1-az6",
         "instance_type": "p5.48xlarge", "price": 3.3, "converted_from": None}
    ]  # fmt: skip
    bench.collect(cut, T0 + 2 * H)
    assert bench.fired(rule, T0 + 2 * H) == []  # the same low: no second alert
    lower = [offer("22.00", zone="use1-az4", **h100), offer("20.80", zone="use1-az6", **h100)]
    bench.collect(lower, T0 + 3 * H)  # 2.60: lower again while the last one still holds
    assert bench.fired(rule, T0 + 3 * H) == ["H100/spot/USD"]
    back_up = [offer("24.00", zone="use1-az4", **h100), offer("26.40", zone="use1-az6", **h100)]
    bench.collect(back_up, T0 + 4 * H)
    assert bench.fired(rule, T0 + 4 * H) == []  # 3.00 again is no new low


def test_stale_data_per_provider(bench: Bench) -> None:
    rule = rules({"name": "stale", "kind": "stale_data", "window": "6h"})
    bench.collect(spot("8.0468"), T0, finished_at=T0)
    store = Store(bench.path)
    store.record_run("azure", "failed", started_at=T0, error="HTTP 503")  # never succeeded
    store.record_run("lambdalabs", "skipped", started_at=T0, error="no credentials")
    # Failing since T0 without ever succeeding: not news until it has tried for the window.
    assert bench.fired(rule, T0 + 5 * H) == []
    report = bench.check(rule, T0 + 7 * H)
    by_subject = {e.subject: e for e in report.fired}
    assert sorted(by_subject) == ["aws", "azure"]
    assert by_subject["azure"].value is None
    assert by_subject["azure"].detail == "azure: no successful collection yet (limit 6h)"
    event = by_subject["aws"]
    assert (event.value, event.threshold) == (7.0, 6.0)
    assert event.detail == "aws: no successful collection for 7.0 h (limit 6h)"
    assert bench.fired(rule, T0 + 8 * H) == []
    bench.collect(spot("8.0468"), T0 + 9 * H, finished_at=T0 + 9 * H)
    assert bench.fired(rule, T0 + 9 * H) == []  # fresh again: re-armed
    assert bench.fired(rule, T0 + 16 * H) == ["aws"]


def test_stale_prices_are_never_compared_and_keep_their_state(bench: Bench) -> None:
    rule = rules(SPOT_RULE)
    bench.collect([*spot("8.0468"), offer(OD, region="eu-west-1")], T0, regions=None)
    assert bench.fired(rule, T0) == [AZ1]
    # The next collection covers eu-west-1 only: us-east-1's prices are the last seen, stale.
    bench.collect([offer(OD, region="eu-west-1")], T0 + H, regions=["eu-west-1"])
    assert bench.sql("SELECT DISTINCT stale FROM latest_prices WHERE region = 'us-east-1'") == [
        (True,)
    ]
    assert bench.fired(rule, T0 + H) == []
    assert bench.sql("SELECT active FROM alert_state") == [(True,)]  # not re-armed by staleness
    bench.collect(spot("8.0468"), T0 + 2 * H)
    assert bench.fired(rule, T0 + 2 * H) == []  # fresh again, same price: no duplicate


def test_a_withdrawn_offer_keeps_its_state_until_a_reading_clears_it(bench: Bench) -> None:
    rule = rules(SPOT_RULE)
    bench.collect(spot("8.0468"), T0)
    assert bench.fired(rule, T0) == [AZ1]
    bench.collect([offer(OD)], T0 + H)  # the spot offer is gone
    assert bench.fired(rule, T0 + H) == []
    assert bench.sql("SELECT active FROM alert_state") == [(True,)]  # no reading: no re-arm
    bench.collect(spot("8.0468"), T0 + 2 * H)  # back at the same price: the same crossing
    assert bench.fired(rule, T0 + 2 * H) == []
    bench.collect(spot("9.50"), T0 + 3 * H)  # 1.1875 per GPU-hour: cleared, re-armed
    assert bench.fired(rule, T0 + 3 * H) == []
    assert bench.sql("SELECT active FROM alert_state") == [(False,)]
    bench.collect(spot("8.0468"), T0 + 4 * H)  # a new crossing
    assert bench.fired(rule, T0 + 4 * H) == [AZ1]


def test_currencies_compare_natively_or_in_usd_through_a_known_rate(tmp_path: Path) -> None:
    # An invented CNY spot price (no real Tencent/Alibaba GPU price is known): 56.00 CNY/h for
    # 8 A100s = 7.00 CNY per GPU-hour; at 7.0 CNY per USD that is 1.00 USD per GPU-hour.
    cny = offer("56.00", kind="spot", zone="ap-guangzhou-3", region="ap-guangzhou",
                provider="tencent", currency="CNY")  # fmt: skip
    usd_rule = rules(SPOT_RULE)
    cny_rule = rules({**SPOT_RULE, "name": "cny", "currency": "CNY", "threshold": 7.5})
    no_rate = Bench(tmp_path / "a.duckdb")
    no_rate.collect([cny], T0, provider="tencent", regions=None)
    assert no_rate.fired(usd_rule, T0) == []  # no rate: never compared, never a guess
    assert no_rate.fired(cny_rule, T0) == [
        "tencent/ap-guangzhou/ap-guangzhou-3/p4d.24xlarge/spot/CNY"
    ]

    rate = FxRate.per_usd("CNY", T0.date(), Decimal("7.0"), "test")
    rated = Bench(tmp_path / "b.duckdb", fx=[rate])
    rated.collect([cny], T0, provider="tencent", regions=None)
    rated.collect(spot("9.1506"), T0)
    (event,) = rated.check(usd_rule, T0).fired
    assert event.value == 1.0
    assert event.detail.endswith("(priced in CNY, converted to USD)")
    # The alternatives are in USD too: AWS's 9.1506 / 8 = 1.143825 per GPU-hour.
    assert [a["price"] for a in event.facts["alternatives"]] == [1.143825]


def test_alternatives_are_the_three_cheapest_other_fresh_offers(bench: Bench) -> None:
    zones = {"use1-az1": "8.0468", "use1-az2": "9.1506", "use1-az4": "8.50", "use1-az6": "9.00"}
    records = [offer(OD)] + [offer(p, kind="spot", zone=z) for z, p in zones.items()]
    records.append(offer("8.20", kind="spot", zone="euw1-az1", region="eu-west-1"))
    bench.collect(records, T0, regions=None)
    bench.collect(records[:-1], T0 + H, regions=["us-east-1"])  # eu-west-1 is now stale
    (event,) = bench.check(rules({**SPOT_RULE, "threshold": 1.05}), T0 + H).fired
    assert event.subject == AZ1
    assert [(a["zone"], a["price"]) for a in event.facts["alternatives"]] == [
        ("use1-az4", 1.0625),  # 8.50 / 8
        ("use1-az6", 1.125),  # 9.00 / 8
        ("use1-az2", 1.143825),  # 9.1506 / 8
    ]


def test_dry_run_changes_nothing(bench: Bench) -> None:
    bench.collect(spot("8.0468"), T0)
    # An old store: as if written before alerts existed (no schema version 3 yet).
    with duckdb.connect(str(bench.path)) as con:
        con.execute("DROP VIEW alert_events; DROP TABLE alert_event_log; DROP TABLE alert_state")
        con.execute(
            "DROP SEQUENCE alert_event_ids; DELETE FROM schema_migrations WHERE version = 3"
        )
    versions = bench.sql("SELECT version FROM schema_migrations ORDER BY version")
    report = bench.check(rules(SPOT_RULE), T0, dry_run=True)
    assert [e.subject for e in report.fired] == [AZ1] and report.dry_run
    assert bench.console.getvalue() == ""  # nothing sent
    # No migration applied: version 3 is still missing, the later ones untouched.
    assert bench.sql("SELECT version FROM schema_migrations ORDER BY version") == versions
    assert (3,) not in versions
    assert bench.sql("SELECT count(*) FROM duckdb_tables() WHERE table_name LIKE 'alert%'") == [
        (0,)
    ]
    # The real run upgrades the store and fires, as the dry run said.
    assert [e.subject for e in bench.check(rules(SPOT_RULE), T0).fired] == [AZ1]
