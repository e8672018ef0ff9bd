"""Fluidstack collector: parse on the authored wire-format answer (hand-checked records), fetch
through the real requests stack against `responses` and the loopback replay server."""

from __future__ import annotations

import json
import logging
from datetime import datetime
from decimal import Decimal
from typing import Any

import pytest
import responses

from collectors.base import ParseResult, PriceRecord
from collectors.common import PayloadShapeError
from collectors.fluidstack import FluidstackCollector
from tests.collectors.support import demo_of, find, fixtures_of, keyed, list_price, under_test

DEMO = demo_of("fluidstack")
FIXTURES = fixtures_of("fluidstack")
URL = "https://platform.fluidstack.io/list_available_configurations"


def recorded() -> list[Any]:
    body: list[Any] = json.loads((DEMO / "configurations.json").read_text())
    return body


def answer() -> list[Any]:
    """The recording with the configurations of tests/fixtures/fluidstack/traps.json added."""
    return recorded() + json.loads((FIXTURES / "traps.json").read_text())


def collector(**settings: Any) -> FluidstackCollector:
    return under_test(FluidstackCollector, {"api_key": "demo"}, **settings)


def parse(body: Any, observed_at: datetime, **settings: Any) -> ParseResult:
    return collector(**settings).parse({"configurations": body}, observed_at=observed_at)


def offers(result: ParseResult) -> dict[tuple[Any, ...], PriceRecord]:
    return keyed(result, "instance_type", "region")


def fs_record(**fields: Any) -> PriceRecord:
    base = {"price_kind": "on_demand", "available": True, "vcpus": None, "memory_gib": None}
    return list_price("fluidstack", **base | fields)


def test_records_worked_out_by_hand(observed_at: datetime) -> None:
    got = offers(parse(recorded(), observed_at))
    # 8 x 2.89 per GPU-hour = 23.12; "_80GB": 80 GB of one GPU; no host size in the answer
    assert got["H100_SXM5_80GB::8", "norway_4_eu"] == fs_record(
        region="norway_4_eu",
        instance_type="H100_SXM5_80GB::8",
        price_per_hour=Decimal("23.12"),
        gpu_model="H100",
        gpu_count=8,
        gpu_memory_gib=80,
    )
    # listed in no region: kept once, region NULL, sold out; 8 x 2.29 = 18.32
    nowhere = got["H100_PCIE_80GB::8", None]
    assert (nowhere.price_per_hour, nowhere.available) == (Decimal("18.32"), False)
    # 4 x 0.80 = 3.20 for four RTX A6000
    a6000 = got["RTX_A6000_48GB::4", "norway_4_eu"]
    assert (a6000.gpu_model, a6000.gpu_memory_gib, a6000.price_per_hour) == (
        "A6000",
        48,
        Decimal("3.20"),
    )


def test_every_offer(observed_at: datetime) -> None:
    result = parse(recorded(), observed_at)
    assert len(result.records) == 4 * 2 + 4 + 3 + 1
    assert {r.price_kind for r in result.records} == {"on_demand"}
    assert result.skipped_rows == 0 and result.unknown_instance_types == set()
    assert set(result.facts.values()) == {"api"}


def test_traps(observed_at: datetime, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="collectors.fluidstack"):
        result = parse(answer(), observed_at)
    # a GPU the table does not know: stored under Fluidstack's name, 48 GB from it
    l40 = find(result, instance_type="L40_48GB::2")
    assert [(r.gpu_memory_gib, r.price_per_hour, r.region) for r in l40] == [
        (48, Decimal("2.20"), "canada_1_na")
    ]
    assert l40[0].gpu_model in ("L40_48GB", "L40")
    assert result.skipped_rows == 3  # the price "N/A", the count 0, the name with spaces
    assert result.unreadable == {"A100_SXM4_40GB::8"}
    messages = [r.getMessage() for r in caplog.records]
    assert "fluidstack: A100_SXM4_40GB skipped: price_per_gpu_hr is 'N/A'" in messages
    assert "fluidstack: RTX_A5000_24GB skipped: gpu_counts is '[1, 0]'" in messages


def test_configured_regions_restrict(observed_at: datetime) -> None:
    result = parse(recorded(), observed_at, regions=("canada_1_na",))
    assert {(r.instance_type, r.region) for r in result.records} == {
        *((f"A100_PCIE_80GB::{n}", "canada_1_na") for n in (1, 2, 4, 8)),
        ("H100_PCIE_80GB::8", None),
    }


@pytest.mark.parametrize("body", [{}, {"detail": "Invalid API key"}, "not json", None, 5])
def test_a_changed_shape_fails_loudly(observed_at: datetime, body: Any) -> None:
    with pytest.raises(PayloadShapeError, match=r"^fluidstack: configurations: answer has no"):
        parse(body, observed_at)


def test_fetch_sends_the_key(rsps: responses.RequestsMock) -> None:
    rsps.get(URL, json=recorded())
    assert collector(credentials={"api_key": "k"}).fetch() == {"configurations": recorded()}
    assert rsps.calls[0].request.headers["api-key"] == "k"


def test_a_configuration_without_regions_is_stored_in_none(observed_at: datetime) -> None:
    body = recorded()
    del body[2]["regions"]  # RTX A6000: where it deploys unsaid
    got = offers(parse(body, observed_at))
    a6000 = got["RTX_A6000_48GB::1", None]
    assert (a6000.price_per_hour, a6000.available) == (Decimal("0.80"), None)
