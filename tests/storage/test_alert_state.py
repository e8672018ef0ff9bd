"""The store's side of rule evaluation, driven by plain rule values (no alerts types): filters
narrow what is measured, a subject fires on the crossing only, and a filter the store cannot
apply is refused rather than ignored."""

from __future__ import annotations

from dataclasses import fields
from datetime import datetime
from decimal import Decimal
from pathlib import Path

import pytest

from alerts.evaluate import query
from alerts.rules import Filters
from storage.alerts import log, state
from storage.alerts.measures import FILTER_COLUMNS, RuleQuery
from tests.alerts.support import T0, Bench, H, offer, rules

CHEAP_SPOT = RuleQuery(
    name="cheap",
    kind="spot_price_below",
    comparison="below",
    unit="price",
    price_kind="spot",
    currency="USD",
    threshold=Decimal("1.10"),
)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    bench = Bench(tmp_path / "prices.duckdb")
    spots = [
        offer("8.0468", kind="spot", zone="use1-az1"),  # 1.006 per GPU-hour: under
        offer("9.1506", kind="spot", zone="use1-az2"),  # 1.144: over
    ]
    bench.collect([offer("21.957642"), *spots], T0)
    bench.collect([offer("5.0", kind="spot", region="eu-west-1")], T0, regions=["eu-west-1"])
    return bench.path


def subjects(path: Path, rule: RuleQuery, at: datetime) -> list[str]:
    with log.session(path, wait_s=1.0) as con:
        return [row["subject"] for row in state.evaluate(con, [rule], at)]


def test_a_rule_fires_on_the_crossing_and_only_where_its_filters_say(store: Path) -> None:
    in_us = RuleQuery(**{**CHEAP_SPOT.__dict__, "filters": {"region": ("us-east-1",)}})
    assert subjects(store, in_us, T0) == ["aws/us-east-1/use1-az1/p4d.24xlarge/spot/USD"]
    assert subjects(store, in_us, T0 + H) == []  # still under: no second alert
    # The same rule unfiltered: the eu offer (0.625) is a new subject, az1 is still active.
    assert subjects(store, CHEAP_SPOT, T0 + H) == ["aws/eu-west-1/p4d.24xlarge/spot/USD"]


def test_every_filter_a_rule_can_have_is_one_the_store_applies() -> None:
    assert {f.name for f in fields(Filters)} == set(FILTER_COLUMNS)
    (rule,) = rules({"name": "r", "kind": "spot_price_below", "threshold": 1.1,
                     "currency": "USD", "provider": "aws"})  # fmt: skip
    assert query(rule).filters["provider"] == ("aws",)
    assert query(rule).price_kind == "spot"


def test_a_filter_the_store_does_not_know_is_refused(store: Path) -> None:
    odd = RuleQuery(**{**CHEAP_SPOT.__dict__, "filters": {"colour": ("green",)}})
    with pytest.raises(ValueError, match="no such filter column colour"):
        subjects(store, odd, T0)
