"""Hyperstack collector: parse on the authored wire-format answers (hand-checked records),
fetch through the real requests stack against `responses` and the loopback replay server."""

from __future__ import annotations

import logging
from datetime import datetime
from decimal import Decimal
from typing import Any

import pytest
import responses

from collectors.base import ParseResult, PriceRecord
from collectors.common import PayloadShapeError
from collectors.hyperstack import HyperstackCollector
from tests.collectors.support import (
    demo_json,
    find,
    keyed,
    list_price,
    under_test,
    with_traps,
)

BASE = "https://infrahub-api.nexgencloud.com/v1"


def recorded() -> dict[str, Any]:
    return {
        "flavors": demo_json("hyperstack", "flavors.json"),
        "pricebook": demo_json("hyperstack", "pricebook.json"),
    }


def answer() -> dict[str, Any]:
    """The recording with the flavor groups of tests/fixtures/hyperstack/traps.json added."""
    payloads = recorded()
    payloads["flavors"] = with_traps(payloads["flavors"], "hyperstack", "data")
    return payloads


def collector(**settings: Any) -> HyperstackCollector:
    return under_test(HyperstackCollector, {"api_key": "demo"}, **settings)


def parse(payloads: Any, observed_at: datetime, **settings: Any) -> ParseResult:
    return collector(**settings).parse(payloads, observed_at=observed_at)


def offers(result: ParseResult) -> dict[tuple[Any, ...], PriceRecord]:
    return keyed(result, "instance_type", "region")


def hs_record(**fields: Any) -> PriceRecord:
    return list_price("hyperstack", **{"price_kind": "on_demand", "available": True, **fields})


def test_records_worked_out_by_hand(observed_at: datetime) -> None:
    got = offers(parse(recorded(), observed_at))
    # 8 x 1.90 per GPU-hour = 15.20; "-80G-" in the GPU name: 80 GB each; host from the flavor
    assert got["n3-H100x8", "CANADA-1"] == hs_record(
        region="CANADA-1",
        instance_type="n3-H100x8",
        price_per_hour=Decimal("15.20"),
        gpu_model="H100",
        gpu_count=8,
        gpu_memory_gib=80,
        vcpus=252,
        memory_gib=1440,
    )
    # no stock: the list price kept, available false (4 x 1.90 = 7.60)
    four = got["n3-H100x4", "CANADA-1"]
    assert (four.price_per_hour, four.available) == (Decimal("7.60"), False)
    # SXM5: 8 x 2.40 = 19.20
    assert got["n3-H100-SXM5x8", "NORWAY-1"].price_per_hour == Decimal("19.20")
    # RTX-A6000 names no memory: the GPU table's only A6000 memory; 8 x 0.50 = 4.00
    a6000 = got["n3-RTX-A6000x8", "NORWAY-1"]
    assert (a6000.gpu_model, a6000.gpu_memory_gib, a6000.price_per_hour) == (
        "A6000",
        48,
        Decimal("4.00"),
    )


def test_every_offer(observed_at: datetime) -> None:
    result = parse(recorded(), observed_at)
    assert len(result.records) == 4 + 1 + 2 + 2  # the CPU flavor is left out
    assert {r.price_kind for r in result.records} == {"on_demand"}
    assert result.skipped_rows == 0 and result.unknown_instance_types == set()
    assert result.facts["n3-A100x1"] == "api" and result.facts["n3-RTX-A6000x1"] == "table"


def test_traps(observed_at: datetime, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="collectors.hyperstack"):
        result = parse(answer(), observed_at)
    # a GPU the table does not know, its memory in its name: stored under Hyperstack's name
    pro = find(result, instance_type="n3-RTX-PRO-6000x1")
    assert [(r.gpu_model, r.gpu_memory_gib, r.price_per_hour) for r in pro] == [
        ("RTX-PRO-6000-96G", 96, Decimal("1.80"))
    ]
    # L40: no memory in its name, and the table may not know it (or knows it in one size)
    l40 = find(result, instance_type="n3-L40x1")
    assert result.unknown_instance_types == ({"n3-L40x1"} if not l40 else set())
    # the unpriced H200 and the string count are skipped; only the latter stays unconfirmed
    assert result.skipped_rows == 2
    assert result.unreadable == {"n3-A100x2"}
    messages = [r.getMessage() for r in caplog.records]
    assert "hyperstack: n3-H200x8 skipped: no price for H200-141G-SXM5 in the pricebook" in messages
    assert "hyperstack: n3-A100x2 skipped: gpu_count is '2'" in messages


def test_configured_regions_restrict(observed_at: datetime) -> None:
    result = parse(recorded(), observed_at, regions=("CANADA-1",))
    assert {r.instance_type for r in result.records} == {f"n3-H100x{n}" for n in (1, 2, 4, 8)}


@pytest.mark.parametrize(
    "body", [{}, {"status": False, "message": "Invalid API key"}, [], "not json", None]
)
def test_a_changed_shape_fails_loudly(observed_at: datetime, body: Any) -> None:
    with pytest.raises(PayloadShapeError, match=r"^hyperstack: flavors: answer has no list"):
        parse({**recorded(), "flavors": body}, observed_at)
    with pytest.raises(
        PayloadShapeError, match=r"^hyperstack: pricebook: answer (has no list|prices nothing)"
    ):
        parse({**recorded(), "pricebook": body}, observed_at)


def test_fetch_sends_the_key(rsps: responses.RequestsMock) -> None:
    rsps.get(f"{BASE}/core/flavors", json=recorded()["flavors"])
    rsps.get(f"{BASE}/pricebook", json=recorded()["pricebook"])
    assert collector(credentials={"api_key": "k"}).fetch() == recorded()
    assert [c.request.headers["api_key"] for c in rsps.calls] == ["k", "k"]


def test_the_flavors_own_gpu_name_is_taken_over_its_groups(observed_at: datetime) -> None:
    payloads = recorded()
    group = payloads["flavors"]["data"][3]  # RTX-A6000, NORWAY-1
    group["gpu"] = ""  # an answer that names the GPU on each flavor only
    got = offers(parse(payloads, observed_at))
    assert got["n3-RTX-A6000x1", "NORWAY-1"].price_per_hour == Decimal("0.50")
