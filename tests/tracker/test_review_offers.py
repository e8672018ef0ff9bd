"""Which offers a review compares: on the 'then' side only prices a collection confirmed near
that moment (within twice the provider's interval, as `latest_prices.stale` judges the current
ones), and an offer's identity including its offering class. Real DuckDB files throughout."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from alerts import digest
from tests.alerts.support import Bench, offer
from tests.tracker.review_support import NOW, collect_every
from tracker.config.daemon import Since
from tracker.review.build import build, look_back

SIX = Since(6, "mo")
THEN = look_back(NOW, SIX)  # 2026-05-01 09:00 UTC
H = timedelta(hours=1)
DAILY = 24 * 3600


def on_demand(facts: dict[str, Any], model: str) -> dict[str, Any]:
    (found,) = [m for m in facts["models"] if m["gpu_model"] == model]
    return {k["price_kind"]: k for k in found["kinds"]}["on_demand"]


def seen(o: dict[str, Any] | None) -> tuple[str, str, float] | None:
    return None if o is None else (o["provider"], o["instance_type"], o["price"])


def test_then_counts_only_prices_confirmed_near_it(tmp_path: Path) -> None:
    bench = Bench(tmp_path / "prices.duckdb")
    # AWS, collected hourly (no interval recorded: 1 h), confirmed an hour before `then`:
    # p5.48xlarge 98.32 / 8 = 12.29, p4d.24xlarge 21.957642 / 8 = 2.744705 per GPU-hour.
    aws = [offer("98.32", itype="p5.48xlarge"), offer("21.957642")]
    for at in (THEN - H, NOW - H):
        bench.collect(aws, at, regions=None)
    # Paperspace, collected once two years ago and never again: its interval is still open, but
    # nobody had confirmed it for 18 months at `then` (and it is stale now).
    dead = NOW - timedelta(days=730)
    paperspace = offer("1.50", provider="paperspace", itype="gpu-h100x1-80gb", gpu=("H100", 1, 80))
    bench.collect([paperspace], dead, provider="paperspace", regions=None, finished_at=dead)
    # Lambda's A100 at 1.10, last confirmed 3 h before `then` (over twice its 1 h interval) and
    # closed as withdrawn only now: in force at `then` by its dates, unconfirmed by its last_seen.
    lambda_a100 = offer("1.10", provider="lambdalabs", itype="gpu_1x_a100", gpu=("A100", 1, 40))
    lambda_h100 = dataclasses.replace(
        lambda_a100, instance_type="gpu_1x_h100_pcie", gpu_model="H100", gpu_memory_gib=80,
        price_per_hour=Decimal("2.49"),
    )  # fmt: skip
    bench.collect([lambda_a100], THEN - 3 * H, provider="lambdalabs", regions=None)
    bench.collect([lambda_h100], NOW - H, provider="lambdalabs", regions=None)
    # Azure, collected daily: last seen 30 h before `then` at 3.00 and changed to 3.60 18 h
    # after it. 30 h is within twice its own interval (48 h): 3.00 was the price then.
    azure = offer("3.00", provider="azure", region="eastus", itype="Standard_NC40ads_H100_v5",
                  gpu=("H100", 1, 94))  # fmt: skip
    dearer = dataclasses.replace(azure, price_per_hour=Decimal("3.60"))
    collect_every(bench, [azure], THEN - 30 * H, "azure", DAILY)
    collect_every(bench, [dearer], THEN + 18 * H, "azure", DAILY)
    collect_every(bench, [dearer], NOW - H, "azure", DAILY)

    facts = build(bench.path, NOW, SIX).to_dict()
    h100, a100 = on_demand(facts, "H100"), on_demand(facts, "A100")
    # H100 then: Azure's 3.00 (not Paperspace's 1.50); now Lambda's PCIe at 2.49 (Paperspace
    # stale, Azure 3.60, AWS 12.29). Two offers, no price move; Azure's own: 3.60 / 3.00 - 1 =
    # +20 %, and the PCIe had no price then.
    assert seen(h100["then"]) == ("azure", "Standard_NC40ads_H100_v5", 3.0)
    assert seen(h100["now"]) == ("lambdalabs", "gpu_1x_h100_pcie", 2.49)
    assert (h100["same_offer"], h100["move_pct"], h100["now_offer_then"]) == (False, None, None)
    assert seen(h100["then_offer_now"]) == ("azure", "Standard_NC40ads_H100_v5", 3.6)
    assert h100["then_offer_move_pct"] == 20.0
    # A100 then: AWS's 2.744705 (not Lambda's unconfirmed 1.10); the same offer now: +0 %.
    assert seen(a100["then"]) == ("aws", "p4d.24xlarge", 2.744705)
    assert (seen(a100["now"]), a100["move_pct"]) == (("aws", "p4d.24xlarge", 2.744705), 0.0)


def test_a_store_whose_only_price_at_then_was_unconfirmed_has_no_then(tmp_path: Path) -> None:
    bench = Bench(tmp_path / "prices.duckdb")
    dead = NOW - timedelta(days=730)
    bench.collect([offer("21.957642")], dead, regions=None, finished_at=dead)
    bench.collect([offer("98.32", itype="p5.48xlarge")], NOW, regions=None)  # closes the p4d
    facts = build(bench.path, NOW, SIX).to_dict()
    assert facts["has_then"] is False
    assert [m["gpu_model"] for m in facts["models"]] == ["H100"]  # no A100 then, none now
    assert (
        "The store has no prices from 2026-05-01: its history starts 2024-11-01."
        in digest.plain_text(facts)
    )


def test_a_standard_ri_replaced_by_a_convertible_one_is_not_the_same_offer(
    tmp_path: Path,
) -> None:
    bench = Bench(tmp_path / "prices.duckdb")
    standard = offer("8.00", kind="reserved", term=36, payment="all_upfront")  # class standard
    convertible = dataclasses.replace(
        standard, offering_class="convertible", price_per_hour=Decimal("9.60")
    )
    bench.collect([offer("21.957642"), standard, convertible], THEN - H, regions=None)
    bench.collect([offer("21.957642"), convertible], NOW - H, regions=None)  # standard withdrawn
    facts = build(bench.path, NOW, SIX).to_dict()
    (a100,) = facts["models"]
    reserved = {k["price_kind"]: k for k in a100["kinds"]}["reserved"]
    # 8.00 / 8 = 1.00 then (standard), 9.60 / 8 = 1.20 now (convertible): not a +20 % move.
    assert (reserved["then"]["offering_class"], reserved["then"]["price"]) == ("standard", 1.0)
    assert (reserved["now"]["offering_class"], reserved["now"]["price"]) == ("convertible", 1.2)
    # Two offers: no move. The convertible was 1.20 then too (+0 %); the standard is gone.
    assert (reserved["same_offer"], reserved["move_pct"]) == (False, None)
    assert (reserved["now_offer_then"]["price"], reserved["now_offer_move_pct"]) == (1.2, 0.0)
    assert (reserved["then_offer_now"], reserved["then_offer_move_pct"]) == (None, None)
    # The best discount changed offer too: 1 - 8.00 / 21.957642 = 63.57 % then (standard), 1 -
    # 9.60 / 21.957642 = 56.28 % now (convertible); -7.29 points would mix two offers.
    discount = a100["reserved_discount"]
    assert (
        round(discount["then"]["discount_pct"], 2),
        round(discount["now"]["discount_pct"], 2),
    ) == (63.57, 56.28)
    assert (discount["same_offer"], discount["points"]) == (False, None)
    # header, on-demand, reserved, reserved discount; then two lines each: now, then
    table = digest.model_table(a100)
    assert table[2:4] == [
        "reserved               1.00       1.20   other offer",
        "reserved discount      63.6%      56.3%  other offer",
    ]
    assert table[4:8] == [
        "  on-demand          now:  aws us-east-1 p4d.24xlarge",
        "                     then: the same offer",
        "  reserved           now:  aws us-east-1 p4d.24xlarge, 3y all-upfront convertible; was "
        "1.20 then (+0.0%)",
        "                     then: aws us-east-1 p4d.24xlarge, 3y all-upfront standard; no price "
        "now",
    ]
