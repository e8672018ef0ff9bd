"""Scaleway collector: parse on the authored wire-format catalog pages (hand-checked records),
fetch through the real requests stack against `responses` and the loopback replay server."""

from __future__ import annotations

import json
import logging
from datetime import datetime
from decimal import Decimal
from typing import Any

import pytest
import responses

from collectors.base import ParseResult, PriceRecord
from collectors.common import FetchError, PayloadShapeError
from collectors.scaleway import ScalewayCollector
from tests.collectors.support import (
    demo_json,
    demo_of,
    find,
    fixtures_of,
    keyed,
    list_price,
    recorded_pages,
    under_test,
)

DEMO = demo_of("scaleway")
FIXTURES = fixtures_of("scaleway")
URL = "https://api.scaleway.com/product-catalog/v2alpha1/public-catalog/products"


def recorded() -> dict[str, Any]:
    return recorded_pages(DEMO)


def answer() -> dict[str, Any]:
    """The recording with the products of tests/fixtures/scaleway/traps.json added to page 2."""
    pages = recorded()
    traps = json.loads((FIXTURES / "traps.json").read_text())
    pages["page-2"]["products"] += traps["products"]
    return pages


def collector(**settings: Any) -> ScalewayCollector:
    return under_test(ScalewayCollector, **settings)


def parse(payloads: Any, observed_at: datetime, **settings: Any) -> ParseResult:
    return collector(**settings).parse(payloads, observed_at=observed_at)


def offers(result: ParseResult) -> dict[tuple[Any, ...], PriceRecord]:
    return keyed(result, "instance_type", "zone", "price_kind")


def scw_record(**fields: Any) -> PriceRecord:
    return list_price("scaleway", **{"price_kind": "on_demand", "currency": "EUR", **fields})


def test_records_worked_out_by_hand(observed_at: datetime) -> None:
    got = offers(parse(recorded(), observed_at))
    # 23 units + 28,000,000 nanos = 23.028 EUR per hour for the whole 8-GPU instance; 128
    # threads; 960 x 2**30 bytes of RAM = 960 GiB; "-80G": 80 GB per GPU
    assert got["H100-SXM-8-80G", "fr-par-2", "on_demand"] == scw_record(
        region="fr-par",
        zone="fr-par-2",
        instance_type="H100-SXM-8-80G",
        price_per_hour=Decimal("23.028000"),
        gpu_model="H100",
        gpu_count=8,
        gpu_memory_gib=80,
        vcpus=128,
        memory_gib=960,
    )
    # 0 units + 750,000,000 nanos = 0.75; the same type in three zones, each its own offer
    l4 = find(parse(recorded(), observed_at), instance_type="L4-1-24G")
    assert sorted((r.region, r.zone, r.price_per_hour) for r in l4) == [
        ("fr-par", "fr-par-2", Decimal("0.75")),
        ("nl-ams", "nl-ams-1", Decimal("0.75")),
        ("pl-waw", "pl-waw-2", Decimal("0.75")),
    ]
    # RENDER-S names no memory: the P100's only one (16 GB), its facts counted as the table's
    render = got["RENDER-S", "fr-par-1", "on_demand"]
    assert (render.gpu_model, render.gpu_memory_gib, render.price_per_hour) == (
        "P100",
        16,
        Decimal("1.221"),
    )


def test_every_gpu_product_and_nothing_else(observed_at: datetime) -> None:
    result = parse(recorded(), observed_at)
    products = [p for page in recorded().values() for p in page["products"]]
    gpu_products = [p for p in products if "gpu" in p["properties"]["hardware"]]
    assert len(result.records) == len(gpu_products) == 17
    assert {r.currency for r in result.records} == {"EUR"}
    assert {r.price_kind for r in result.records} == {"on_demand"}
    assert {r.available for r in result.records} == {None}  # the catalog says nothing of capacity
    assert result.skipped_rows == 0 and result.unknown_instance_types == set()
    assert result.facts["RENDER-S"] == "table" and result.facts["L4-8-24G"] == "api"


def test_traps(observed_at: datetime, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="collectors.scaleway"):
        result = parse(answer(), observed_at)
    # an unknown GPU with its memory in the name: stored under the catalog's own name
    b300 = find(result, instance_type="B300-SXM-8-288G")
    assert [(r.gpu_model, r.gpu_count, r.gpu_memory_gib, r.price_per_hour) for r in b300] == [
        ("B300-SXM", 8, 288, Decimal("59.2"))
    ]
    # per minute: 25,000,000 nanos x 60 = 1.50 per hour
    assert find(result, instance_type="L4-2-24G", zone="pl-waw-2")[0].price_per_hour == Decimal(
        "1.5"
    )
    assert result.unknown_instance_types == {"GPU-3070-S"}  # no memory anyone knows
    assert not find(result, instance_type="GPU-3070-S")  # the fr-par-1 one is end_of_sale
    assert result.skipped_rows == 3  # per month, a region without a zone, no currency
    assert result.unreadable == {"L40S-1-48G", "H100-1-80G", "H100-2-80G"}
    assert len(result.records) == 17 + 2
    messages = [r.getMessage() for r in caplog.records]
    assert "scaleway: H100-2-80G skipped: currency_code is 'None'" in messages
    assert any(m.startswith("scaleway: L40S-1-48G skipped: priced per") for m in messages)


def test_configured_regions_or_zones_restrict(observed_at: datetime) -> None:
    by_region = parse(recorded(), observed_at, regions=("pl-waw",))
    assert {(r.instance_type, r.zone) for r in by_region.records} == {
        ("L4-1-24G", "pl-waw-2"),
        ("H100-1-80G", "pl-waw-2"),
    }
    by_zone = parse(recorded(), observed_at, regions=("fr-par-1",))
    assert [r.instance_type for r in by_zone.records] == ["RENDER-S"]


@pytest.mark.parametrize("body", [{}, {"products": {}}, [], {"message": "denied"}, "not json"])
def test_a_changed_shape_fails_loudly(observed_at: datetime, body: Any) -> None:
    with pytest.raises(PayloadShapeError, match=r"^scaleway: page-1: answer has no products"):
        parse({"page-1": body}, observed_at)


def test_no_gpu_product_readable_fails_loudly(observed_at: datetime) -> None:
    pages = recorded()
    for page in pages.values():
        for product in page["products"]:
            product["price"] = None
    with pytest.raises(PayloadShapeError, match="none of the 17 GPU products could be read"):
        parse(pages, observed_at)


def test_fetch_walks_the_pages_without_a_key(rsps: responses.RequestsMock) -> None:
    pages = recorded()
    for number in (1, 2):
        rsps.get(
            URL,
            json=pages[f"page-{number}"],
            match=[
                responses.matchers.query_param_matcher(
                    {"product_types": "instance", "page_size": "100", "page": str(number)}
                )
            ],
        )
    assert collector().fetch() == pages
    assert all("Authorization" not in call.request.headers for call in rsps.calls)


def test_throttling_is_honoured_then_fails_with_the_body(rsps: responses.RequestsMock) -> None:
    body = json.loads((FIXTURES / "error-429.json").read_text())
    rsps.get(URL, status=429, json=body, headers={"Retry-After": "0"})
    rsps.get(URL, json=demo_json("scaleway", "products-1.json") | {"total_count": 1})
    assert len(collector(max_retries=1).fetch()) == 1  # retried after the 429
    rsps.get(URL, status=429, json=body, headers={"Retry-After": "0"})
    with pytest.raises(FetchError, match=r"^scaleway: product catalog page 1: HTTP 429: .*quota"):
        collector().fetch()


def test_a_refused_query_names_the_page(rsps: responses.RequestsMock) -> None:
    rsps.get(URL, status=400, json=json.loads((FIXTURES / "error-400.json").read_text()))
    with pytest.raises(FetchError, match=r"page 1: HTTP 400: .*is not a valid value"):
        collector().fetch()
