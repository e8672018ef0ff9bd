"""JarvisLabs collector: parse on the authored wire-format answer (hand-checked records), fetch
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
from collectors.jarvislabs import JarvislabsCollector
from tests.collectors.support import (
    demo_json,
    find,
    keyed,
    list_price,
    under_test,
    with_traps,
)

URL = "https://backendprod.jarvislabs.net/misc/server_meta"


def recorded() -> dict[str, Any]:
    return demo_json("jarvislabs", "server-meta.json")


def answer() -> dict[str, Any]:
    """The recording with the rows of tests/fixtures/jarvislabs/traps.json added."""
    return with_traps(recorded(), "jarvislabs", "server_meta")


def collector(**settings: Any) -> JarvislabsCollector:
    return under_test(JarvislabsCollector, {"api_key": "demo"}, **settings)


def parse(body: Any, observed_at: datetime, **settings: Any) -> ParseResult:
    return collector(**settings).parse({"server_meta": body}, observed_at=observed_at)


def offers(result: ParseResult) -> dict[tuple[Any, ...], PriceRecord]:
    return keyed(result, "instance_type", "region", "price_kind")


def jl_record(**fields: Any) -> PriceRecord:
    return list_price("jarvislabs", **{"price_kind": "on_demand", "available": True, **fields})


def test_records_worked_out_by_hand(observed_at: datetime) -> None:
    got = offers(parse(recorded(), observed_at))
    # 8 x 2.99 = 23.92 per hour; 8 x 16 vCPUs, 8 x 200 GB of host memory; 12 free: available
    assert got["H100-8x", "india-noida-01", "on_demand"] == jl_record(
        region="india-noida-01",
        instance_type="H100-8x",
        price_per_hour=Decimal("23.920000"),
        gpu_model="H100",
        gpu_count=8,
        gpu_memory_gib=80,
        vcpus=128,
        memory_gib=1600,
    )
    assert ("H100-8x", "india-noida-01", "spot") not in got  # spot_price null: no spot record
    # A100-80GB: 3 free, so 3x is available and 4x not; spot 4 x 0.99 = 3.96 with 3 spot free
    assert got["A100-80GB-3x", "india-noida-01", "on_demand"].available is True
    four = got["A100-80GB-4x", "india-noida-01", "on_demand"]
    assert (four.gpu_model, four.gpu_memory_gib, four.price_per_hour) == (
        "A100",
        80,
        Decimal("5.96"),
    )
    assert four.available is False
    spot = got["A100-80GB-4x", "india-noida-01", "spot"]
    assert (spot.price_per_hour, spot.available) == (Decimal("3.96"), False)
    assert got["A100-80GB-3x", "india-noida-01", "spot"].available is True
    # H200 as a VM: its own offers; 2 x 3.8 = 7.60
    assert got["H200-2x-vm", "europe-01", "on_demand"].price_per_hour == Decimal("7.60")


def test_every_offer(observed_at: datetime) -> None:
    result = parse(recorded(), observed_at)
    # 8 counts each of H100, H200, A100, A100-80GB, RTX6000Ada, A6000 and 4 of L4; spot for
    # A100, A100-80GB, RTX6000Ada, A6000
    assert len(result.records) == 6 * 8 + 4 + 4 * 8
    assert {r.price_kind for r in result.records if r.gpu_model == "H100"} == {"on_demand"}
    assert {r.currency for r in result.records} == {"USD"}
    assert result.skipped_rows == 0 and result.unknown_instance_types == set()
    # sold out: 0 free devices in india-01, the list price kept with available false
    assert {r.available for r in find(result, gpu_model="A100", gpu_memory_gib=40)} == {False}
    # L4 without vram: the table's only L4 memory, its facts counted as the table's
    l4 = find(result, instance_type="L4-4x")
    assert [(r.gpu_memory_gib, r.price_per_hour) for r in l4] == [(24, Decimal("1.76"))]
    assert result.facts["L4-4x"] == "table" and result.facts["H100-1x"] == "api"


def test_traps(observed_at: datetime, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="collectors.jarvislabs"):
        result = parse(answer(), observed_at)
    unnamed = find(result, instance_type="A5000-2x", price_kind="on_demand")
    assert [(r.gpu_model, r.gpu_memory_gib, r.price_per_hour) for r in unnamed] == [
        ("A5000", 24, Decimal("0.98"))  # a GPU the table lacks: under JarvisLabs' own name
    ]
    assert result.skipped_rows == 2  # the name with a space, the string price
    assert result.unreadable == {f"H100-{n}x-vm" for n in range(1, 9)}
    assert result.unknown_instance_types == {"A100-80GB-1x"}
    assert not find(result, region="europe-01", gpu_model="H100")
    messages = [r.getMessage() for r in caplog.records]
    assert "jarvislabs: RTX 5000 skipped: a GPU name with spaces is ambiguous" in messages
    assert "jarvislabs: H100 skipped: price_per_hour is '2.99'" in messages


def test_configured_regions_restrict(observed_at: datetime) -> None:
    result = parse(recorded(), observed_at, regions=("europe-01",))
    assert {r.instance_type for r in result.records} == {f"H200-{n}x-vm" for n in range(1, 9)}


@pytest.mark.parametrize(
    "body", [{}, {"server_meta": {}}, [], {"detail": "Invalid token"}, "not json"]
)
def test_a_changed_shape_fails_loudly(observed_at: datetime, body: Any) -> None:
    with pytest.raises(PayloadShapeError, match=r"^jarvislabs: server_meta: answer has no list"):
        parse(body, observed_at)


def test_fetch_sends_the_key(rsps: responses.RequestsMock) -> None:
    rsps.get(URL, json=recorded())
    assert collector(credentials={"api_key": "k"}).fetch() == {"server_meta": recorded()}
    assert rsps.calls[0].request.headers["Authorization"] == "Bearer k"
