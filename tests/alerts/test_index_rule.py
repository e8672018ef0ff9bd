"""The `index` alert rule on a real store: it fires once when the day's market index crosses
its value, not again while it stays beyond, again after it crossed back; a `move` over a
window; and the settings refused with the key named. Prices are invented (USD per GPU-hour,
machines of 8 GPUs: 32 USD/h is 4.0)."""

from __future__ import annotations

from typing import Any

import pytest

from collectors.common import ConfigError
from tests.alerts.support import DAY, T0, Bench, H, offer, rules

RULE: dict[str, Any] = {
    "name": "h100-market",
    "kind": "index",
    "gpu": "H100",
    "price_kind": "on_demand",
    "below": 3.0,
}
SUBJECT = "index/H100 80GB/on_demand/all"


def h100(bench: Bench, provider: str, per_gpu: str, at: Any) -> None:
    price = str(float(per_gpu) * 8)
    record = offer(price, itype="p5.48xlarge", provider=provider, region="r1")
    bench.collect([record], at, provider=provider, regions=None)


@pytest.fixture
def bench(tmp_path: Any) -> Bench:
    return Bench(tmp_path / "prices.duckdb")


def test_fires_once_per_crossing(bench: Bench) -> None:
    rule = rules(RULE)
    for provider, price in (("aws", "4.0"), ("lambdalabs", "3.5"), ("vultr", "3.2")):
        h100(bench, provider, price, T0)
    assert bench.fired(rule, T0) == []  # the median of 3.2 3.5 4.0 is 3.5
    h100(bench, "lambdalabs", "2.4", T0 + H)
    h100(bench, "vultr", "2.8", T0 + H)
    report = bench.check(rule, T0 + H)  # 2.4 2.8 4.0: the index is 2.8, under 3.0
    (event,) = report.fired
    assert (event.subject, event.value, event.threshold) == (SUBJECT, 2.8, 3.0)
    assert event.detail == (
        "H100 80GB on-demand market index (all) 2.80 USD/GPU-h is at or under 3.00 USD/GPU-h"
    )
    assert bench.fired(rule, T0 + 2 * H) == []  # still under: no second alert
    h100(bench, "vultr", "3.2", T0 + 3 * H)
    assert bench.fired(rule, T0 + 3 * H) == []  # 3.2: crossed back, re-armed
    h100(bench, "vultr", "2.9", T0 + 4 * H)
    assert bench.fired(rule, T0 + 4 * H) == [SUBJECT]  # under again: fires again


def test_above_and_a_segment(bench: Bench) -> None:
    above = {k: v for k, v in RULE.items() if k != "below"}
    rule = rules(above | {"above": 3.9, "segment": "hyperscaler"})
    h100(bench, "aws", "4.0", T0)
    h100(bench, "lambdalabs", "2.0", T0)  # a neocloud: not in the hyperscaler index
    assert bench.fired(rule, T0) == ["index/H100 80GB/on_demand/hyperscaler"]


def test_move_over_a_window(bench: Bench) -> None:
    rule = rules({k: v for k, v in RULE.items() if k != "below"} | {"move": 0.1, "window": "1d"})
    for provider in ("aws", "lambdalabs", "vultr"):
        h100(bench, provider, "4.0", T0 - DAY)
    assert bench.fired(rule, T0 - DAY) == []  # no index a day before yet: unknown
    h100(bench, "lambdalabs", "3.8", T0)
    assert bench.fired(rule, T0) == []  # 4.0 -> 4.0 (the median of 3.8 4.0 4.0): no move
    h100(bench, "vultr", "3.0", T0 + H)
    report = bench.check(rule, T0 + H)  # 3.0 3.8 4.0: 3.8, down 5%: under 10%
    assert report.fired == []
    h100(bench, "lambdalabs", "3.4", T0 + 2 * H)
    (event,) = bench.check(rule, T0 + 2 * H).fired  # 3.0 3.4 4.0: 3.4, down 15%
    assert event.value == pytest.approx(-0.15)
    assert "fell 15.0% in 1d (4.00 -> 3.40 USD/GPU-h), at least 10.0%" in event.detail


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"gpu": "H1000"}, "alerts.rules[0].gpu: unknown GPU 'H1000'"),
        ({"price_kind": "reserved"}, "alerts.rules[0].price_kind: the index is of on_demand"),
        ({"segment": "clouds"}, "alerts.rules[0].segment: expected one of all, hyperscaler"),
        ({"above": 2.0}, "give one of below, above or move"),
        ({"below": 0}, "alerts.rules[0].below: expected USD per GPU-hour above 0"),
        ({"window": "1d"}, "alerts.rules[0].window: a window goes with move"),
        ({"threshold": 2.0}, "alerts.rules[0].threshold: unknown key for kind index"),
    ],
)
def test_settings_refused_naming_the_key(change: dict[str, Any], words: str) -> None:
    with pytest.raises(ConfigError) as caught:
        rules(RULE | change)
    assert words in str(caught.value)
