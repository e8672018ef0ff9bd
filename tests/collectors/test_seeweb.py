"""Seeweb collector: parse on the authored wire-format answer (hand-checked records), fetch
through the real requests stack against `responses` and the loopback replay server."""

from __future__ import annotations

import logging
from datetime import datetime
from decimal import Decimal
from typing import Any

import pytest
import responses

from collectors.base import ParseResult, PriceRecord
from collectors.common import PayloadShapeError
from collectors.seeweb import SeewebCollector
from tests.collectors.support import (
    demo_json,
    find,
    keyed,
    list_price,
    under_test,
    with_traps,
)

URL = "https://api.seeweb.it/ecs/v2/plans"


def recorded() -> dict[str, Any]:
    return demo_json("seeweb", "plans.json")


def answer() -> dict[str, Any]:
    """The recording with the plans of tests/fixtures/seeweb/traps.json added."""
    return with_traps(recorded(), "seeweb", "plans")


def collector(**settings: Any) -> SeewebCollector:
    return under_test(SeewebCollector, {"api_token": "demo"}, **settings)


def parse(body: Any, observed_at: datetime, **settings: Any) -> ParseResult:
    return collector(**settings).parse({"plans": body}, observed_at=observed_at)


def offers(result: ParseResult) -> dict[tuple[Any, ...], PriceRecord]:
    return keyed(result, "instance_type", "region")


def sw_record(**fields: Any) -> PriceRecord:
    base = {"price_kind": "on_demand", "available": None, "currency": "EUR"}
    return list_price("seeweb", **base | fields)


def test_records_worked_out_by_hand(observed_at: datetime) -> None:
    got = offers(parse(recorded(), observed_at))
    # 2 x A100 80 GB for 3.60 EUR an hour, the whole plan; ram 245760 MB / 1024 = 240 GiB;
    # whether capacity exists Seeweb does not say: available NULL
    assert got["ECS2GPU3", "it-fr2"] == sw_record(
        region="it-fr2",
        instance_type="ECS2GPU3",
        price_per_hour=Decimal("3.6"),
        gpu_model="A100",
        gpu_count=2,
        gpu_memory_gib=80,
        vcpus=32,
        memory_gib=240,
    )
    # "L40s 48GB" through [names.seeweb]; in two regions
    l40s = [got["ECS1GPU7", r] for r in ("it-fr2", "it-mi2")]
    assert {(r.gpu_model, r.gpu_memory_gib, r.price_per_hour) for r in l40s} == {
        ("L40S", 48, Decimal("0.85"))
    }
    # listed in no region: kept once, region NULL, sold out
    h200 = got["ECS8GPU12", None]
    assert (h200.gpu_count, h200.gpu_memory_gib, h200.available) == (8, 141, False)
    # MI300X names no memory: the GPU table's only MI300X memory
    assert got["ECS1GPU9", "it-fr2"].gpu_memory_gib == 192


def test_every_offer(observed_at: datetime) -> None:
    result = parse(recorded(), observed_at)
    # the CPU plan and the plan no longer sold (available false) make none
    assert len(result.records) == 2 + 1 + 1 + 1 + 2 + 1
    assert not find(result, instance_type="eCS4") and not find(result, instance_type="ECS1GPU3")
    assert {r.currency for r in result.records} == {"EUR"}
    assert result.skipped_rows == 0 and result.unknown_instance_types == set()
    assert result.facts["ECS1GPU7"] == "api" and result.facts["ECS1GPU9"] == "table"


def test_traps(observed_at: datetime, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="collectors.seeweb"):
        result = parse(answer(), observed_at)
    # a GPU the table may not know: stored under Seeweb's own name, without the memory
    pro = find(result, instance_type="ECS1GPU14")
    assert [(r.gpu_memory_gib, r.price_per_hour) for r in pro] == [(96, Decimal("1.95"))]
    assert pro[0].gpu_model in ("RTX PRO 6000", "RTXPRO6000")
    # no memory in the label and none in the table: reported (A30 until the table knows it)
    assert "ECS1GPU10" in result.unknown_instance_types
    assert result.skipped_rows == 1  # the price with a currency sign
    assert result.unreadable == {"ECS4GPU7"}
    messages = [r.getMessage() for r in caplog.records]
    assert "seeweb: ECS4GPU7 skipped: hourly_price is '$3.40'" in messages


def test_configured_regions_restrict(observed_at: datetime) -> None:
    result = parse(recorded(), observed_at, regions=("ch-lug1",))
    assert {(r.instance_type, r.region) for r in result.records} == {
        ("ECS1GPU5", "ch-lug1"),
        ("ECS8GPU12", None),
    }


@pytest.mark.parametrize(
    "body", [{}, {"status": "error", "message": "Invalid token"}, [], "not json", None]
)
def test_a_changed_shape_fails_loudly(observed_at: datetime, body: Any) -> None:
    with pytest.raises(PayloadShapeError, match=r"^seeweb: plans: answer has no list"):
        parse(body, observed_at)


def test_fetch_sends_the_token(rsps: responses.RequestsMock) -> None:
    rsps.get(URL, json=recorded())
    assert collector(credentials={"api_token": "t"}).fetch() == {"plans": recorded()}
    assert rsps.calls[0].request.headers["X-APITOKEN"] == "t"
