"""Oracle Cloud collector: parse on the demo's recording of the price list and the Cost
Estimator's shapes (the traps of tests/fixtures/oci/traps.json laid over it), fetch through
the real requests stack against loopback servers (two hosts, retries, paging, failures)."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from datetime import datetime
from decimal import Decimal
from typing import Any

import pytest

from collectors import gpus
from collectors.base import ParseResult, PriceRecord, ProviderSettings
from collectors.common import FetchError, PayloadShapeError
from collectors.oci.collector import GPU_REGIONS, PRICES_PATH, SHAPES_PATH, OciCollector
from tests.collectors.support import demo_of, fixtures_of, keyed, list_price
from tracker.collecting.replay import Exchange, ReplayServer

DEMO = demo_of("oci")
FIXTURES = fixtures_of("oci")
REGIONS = ("us-ashburn-1", "eu-frankfurt-1")


def recorded() -> dict[str, Any]:
    """The payloads fetch returns for the demo recording."""
    return {
        "prices/page-1": json.loads((DEMO / "prices.json").read_text()),
        "shapes": json.loads((DEMO / "shapes.json").read_text()),
    }


def with_traps() -> dict[str, Any]:
    """The recording with the trap parts added and the trap shapes in front of the shapes."""
    payloads = recorded()
    traps = json.loads((FIXTURES / "traps.json").read_text())
    payloads["prices/page-1"]["items"] += traps["prices"]["items"]
    payloads["shapes"]["items"] = traps["shapes"]["items"] + payloads["shapes"]["items"]
    return payloads


def collector(**settings: Any) -> OciCollector:
    settings.setdefault("regions", REGIONS)
    settings.setdefault("max_retries", 2)
    return OciCollector(ProviderSettings(**settings))


def parse(payloads: dict[str, Any], observed_at: datetime, **settings: Any) -> ParseResult:
    return collector(**settings).parse(payloads, observed_at=observed_at)


def by_offer(result: ParseResult) -> dict[tuple[Any, ...], PriceRecord]:
    return keyed(result, "instance_type", "region", "price_kind")


def oci_record(**fields: Any) -> PriceRecord:
    return list_price("oci", **{"effective_at": None, "available": None, **fields})


# ---------------------------------------------------------------------------------------------
# parse


def test_records_in_full(observed_at: datetime) -> None:
    offers = by_offer(parse(recorded(), observed_at))
    # B98415 "GPU Per Hour" 10 USD x gpuQty 8 = 80; never x the product's qty 112 (OCPUs):
    # 10 x 112 = 1120. The EUR entry (9.4) comes first in the list and is not read: 9.4 x 8 =
    # 75.2 would be it. gpuMemoryQty 640 is the shape's total: 640 / 8 = 80 GB per GPU.
    # vCPUs: 112 OCPUs x 2. No spot: allowPreemptible false.
    assert offers["BM.GPU.H100.8", "us-ashburn-1", "on_demand"] == oci_record(
        region="us-ashburn-1",
        instance_type="BM.GPU.H100.8",
        price_kind="on_demand",
        price_per_hour=Decimal("80.000000"),
        gpu_model="H100",
        gpu_count=8,
        gpu_memory_gib=80,
        vcpus=224,
        memory_gib=2048,
    )
    assert ("BM.GPU.H100.8", "us-ashburn-1", "spot") not in offers
    # B89734 V100 2.95 x 1 GPU; preemptible: 2.95 x 0.5 = 1.475. 6 OCPUs x 2 = 12 vCPUs.
    assert offers["VM.GPU3.1", "eu-frankfurt-1", "spot"] == oci_record(
        region="eu-frankfurt-1",
        instance_type="VM.GPU3.1",
        price_kind="spot",
        price_per_hour=Decimal("1.475000"),
        gpu_model="V100",
        gpu_count=1,
        gpu_memory_gib=16,
        vcpus=12,
        memory_gib=90,
    )
    # B109485 MI300X 6 x 8 = 48; B110978 B200 14 x 8 = 112; 1440 / 8 = 180 GB each.
    mi300x = offers["BM.GPU.MI300X.8", "eu-frankfurt-1", "on_demand"]
    assert (mi300x.price_per_hour, mi300x.gpu_memory_gib) == (Decimal(48), 192)
    b200 = offers["BM.GPU.B200.8", "us-ashburn-1", "on_demand"]
    assert (b200.price_per_hour, b200.gpu_memory_gib, b200.vcpus) == (Decimal(112), 180, 256)


def test_every_offer_and_price(observed_at: datetime) -> None:
    prices = {k: r.price_per_hour for k, r in by_offer(parse(recorded(), observed_at)).items()}
    expected = {
        ("VM.GPU3.1", "on_demand"): Decimal("2.95"),
        ("VM.GPU3.1", "spot"): Decimal("1.475"),
        ("VM.GPU.A10.1", "on_demand"): Decimal(2),  # B95909 2 x 1
        ("VM.GPU.A10.1", "spot"): Decimal(1),  # 2 x 0.5
        ("BM.GPU.H100.8", "on_demand"): Decimal(80),
        ("BM.GPU.MI300X.8", "on_demand"): Decimal(48),
        ("BM.GPU.B200.8", "on_demand"): Decimal(112),
    }
    # One record per configured region, the same list price in each; the CPU shape
    # VM.Standard.E4.Flex and the hidden BM.GPU2.2 make none.
    assert prices == {
        (shape, region, kind): price
        for (shape, kind), price in expected.items()
        for region in REGIONS
    }


def test_without_configured_regions_the_gpu_regions_are_used(observed_at: datetime) -> None:
    result = parse(recorded(), observed_at, regions=())
    assert {r.region for r in result.records} == set(GPU_REGIONS)
    assert len(result.records) == 7 * len(GPU_REGIONS)


def test_traps(observed_at: datetime, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        result = parse(with_traps(), observed_at, regions=("us-ashburn-1",))
    # The display suffix is stripped; the GB200 is read from the shape's name, its count and
    # memory from the estimator. B110000 16 x 4 GPUs = 64; 768 / 4 = 192 GB.
    assert result.unknown_instance_types == set()
    gb200 = by_offer(result)["BM.GPU.GB200.4", "us-ashburn-1", "on_demand"]
    assert (gb200.gpu_model, gb200.gpu_count, gb200.gpu_memory_gib) == ("GB200", 4, 192)
    assert gb200.price_per_hour == Decimal(64)
    assert result.facts["BM.GPU.GB200.4"] == "api"  # the estimator's count and memory
    assert "BM.GPU.GB200.4" not in result.gpu_summary().without_facts
    assert "GPU not in the GPU table" not in caplog.text
    # No price for B999999, a tiered L40S part, an H200 part without a USD entry, and a GPU
    # shape billed by an OCPU part (never priced x OCPUs): skipped and counted.
    assert result.unreadable == {"BM.GPU.A100-v2.8", "BM.GPU.L40S.4", "BM.GPU.H200.8", "BM.GPU4.8"}
    assert result.skipped_rows == 5  # the four, and the recording's MI300X listed a second time
    offers = by_offer(result)
    # "BM.GPU.MI300X.8 (Preview)" is BM.GPU.MI300X.8; its gpuMemoryQty 192 is per GPU here (as
    # the estimator writes it for some shapes): 192, not 192 / 8 = 24.
    mi300x = offers["BM.GPU.MI300X.8", "us-ashburn-1", "on_demand"]
    assert (mi300x.gpu_memory_gib, mi300x.price_per_hour) == (192, Decimal(48))
    assert "VM.GPU2.1" not in {r.instance_type for r in result.records}  # DEPRECATED
    text = caplog.text
    assert "oci: BM.GPU.A100-v2.8 skipped: no price for its part number 'B999999'" in text
    assert "pay-as-you-go prices (tiered or none)" in text
    assert "part B93113: billed by 'OCPU Per Hour', not per GPU" in text
    assert "oci: shape BM.GPU.MI300X.8 listed twice" in text


def test_memory_given_per_gpu_is_read_as_such(observed_at: datetime) -> None:
    """BM.GPU.MI355X.8: the estimator gives 288 (one GPU's), not 8 x 288 = 2304; the GPU table
    knows the shape, so 288 per GPU, not 288 / 8 = 36. Priced by the MI300X part here: 6 x 8."""
    payloads = recorded()
    mi300x = next(s for s in payloads["shapes"]["items"] if s["name"] == "BM.GPU.MI300X.8")
    payloads["shapes"]["items"].append({**mi300x, "name": "BM.GPU.MI355X.8", "gpuMemoryQty": 288})
    offers = by_offer(parse(payloads, observed_at))
    mi355x = offers["BM.GPU.MI355X.8", "us-ashburn-1", "on_demand"]
    assert (mi355x.gpu_model, mi355x.gpu_count, mi355x.gpu_memory_gib) == ("MI355X", 8, 288)
    assert mi355x.price_per_hour == Decimal(48)


def test_memory_that_contradicts_the_table_is_read_by_the_table(
    observed_at: datetime, caplog: pytest.LogCaptureFixture
) -> None:
    """gpuMemoryQty fits neither reading (neither 8 x 80 nor 80): the shape is still priced,
    with the table's memory per GPU (the estimator's is known to be wrong for some shapes), and
    the contradiction logged."""
    payloads = recorded()
    h100 = next(s for s in payloads["shapes"]["items"] if s["name"] == "BM.GPU.H100.8")
    h100["gpuMemoryQty"] = 320
    with caplog.at_level(logging.WARNING):
        result = parse(payloads, observed_at)
    assert result.unknown_instance_types == set()
    record = by_offer(result)["BM.GPU.H100.8", "us-ashburn-1", "on_demand"]
    assert (record.gpu_model, record.gpu_count, record.gpu_memory_gib) == ("H100", 8, 80)
    assert record.price_per_hour == Decimal(80)  # 10.00 per GPU-hour x 8
    assert result.facts["BM.GPU.H100.8"] == "table"
    assert (
        "oci: BM.GPU.H100.8: the estimator says 8 x H100 320 GB, the GPU table 8 x H100 80 GB "
        "each; stored as 8 x H100 80 GB"
    ) in caplog.text


def test_a_gpu_count_that_contradicts_the_table_is_the_estimators(observed_at: datetime) -> None:
    """The price is the per-GPU part x gpuQty, so the count stored is gpuQty too."""
    payloads = recorded()
    h100 = next(s for s in payloads["shapes"]["items"] if s["name"] == "BM.GPU.H100.8")
    h100.update(gpuQty=4, gpuMemoryQty=320)  # 4 x 80
    record = by_offer(parse(payloads, observed_at))["BM.GPU.H100.8", "us-ashburn-1", "on_demand"]
    assert (record.gpu_model, record.gpu_count, record.gpu_memory_gib) == ("H100", 4, 80)
    assert record.price_per_hour == Decimal(40)  # 10.00 x 4


def test_facts_of_shapes_the_table_knows_are_the_tables(observed_at: datetime) -> None:
    result = parse(recorded(), observed_at)
    assert result.facts == dict.fromkeys({r.instance_type for r in result.records}, "table")


def test_a_users_model_names_an_unknown_gpu(observed_at: datetime) -> None:
    gb200 = gpus.parse_model(
        "GB200", {"vendor": "nvidia", "memory_gib": [192]}, "gpus.models.GB200."
    )
    result = parse(
        with_traps(),
        observed_at,
        regions=("us-ashburn-1",),
        gpus=gpus.Overrides(models={"GB200": gb200}),
    )
    record = by_offer(result)["BM.GPU.GB200.4", "us-ashburn-1", "on_demand"]
    assert (record.gpu_model, record.gpu_count, record.gpu_memory_gib) == ("GB200", 4, 192)
    assert result.facts["BM.GPU.GB200.4"] == "api"


def test_a_users_entry_is_taken_over_the_estimator_and_the_table(observed_at: datetime) -> None:
    entry = gpus.TypeOverride("oci", gpu_memory_gib=94)
    result = parse(
        recorded(), observed_at, gpus=gpus.Overrides(instance_types={"BM.GPU.H100.8": entry})
    )
    record = by_offer(result)["BM.GPU.H100.8", "us-ashburn-1", "on_demand"]
    assert (record.gpu_model, record.gpu_count, record.gpu_memory_gib) == ("H100", 8, 94)
    assert result.facts["BM.GPU.H100.8"] == "config"


@pytest.mark.parametrize("gpu_qty", [0.5, "8", None, -8, True])
def test_a_gpu_count_not_understood_skips_the_shape(observed_at: datetime, gpu_qty: Any) -> None:
    payloads = recorded()
    h100 = next(s for s in payloads["shapes"]["items"] if s["name"] == "BM.GPU.H100.8")
    h100["gpuQty"] = gpu_qty
    result = parse(payloads, observed_at)
    assert result.unreadable == {"BM.GPU.H100.8"} and result.skipped_rows == 1


def test_decimal_and_float_json_give_the_same_records(observed_at: datetime) -> None:
    exact = {k: json.loads(json.dumps(v), parse_float=Decimal) for k, v in recorded().items()}
    assert parse(exact, observed_at).records == parse(recorded(), observed_at).records


@pytest.mark.parametrize("drop", ["prices/page-1", "shapes"])
def test_a_changed_shape_fails_loudly(observed_at: datetime, drop: str) -> None:
    payloads = recorded()
    payloads[drop] = {"data": []}
    with pytest.raises(PayloadShapeError, match=r"^oci: "):
        parse(payloads, observed_at)


def test_no_gpu_shape_priced_fails_loudly(observed_at: datetime) -> None:
    payloads = recorded()
    payloads["prices/page-1"]["items"] = []
    with pytest.raises(PayloadShapeError, match="none of the 5 GPU shapes could be priced"):
        parse(payloads, observed_at)


# ---------------------------------------------------------------------------------------------
# fetch through the real urllib3 stack (loopback servers)


def prices(body: Any, *, status: int = 200, query: Any = None, **kw: Any) -> Exchange:
    match = {"method": "GET", "path": PRICES_PATH, "query": query or {}}
    text = json.dumps(body) if body is not None else "busy"
    return Exchange(match=match, status=status, body=text.encode(), **kw)


def shapes(body: Any, *, status: int = 200) -> Exchange:
    text = json.dumps(body) if body is not None else "busy"
    match = {"method": "GET", "path": SHAPES_PATH}
    return Exchange(match=match, status=status, body=text.encode())


def test_demo_recording_fetch_then_parse(
    replay: Callable[..., ReplayServer], serve: Callable[..., ReplayServer], observed_at: datetime
) -> None:
    """The two documents on two hosts, as Oracle serves them: the endpoint and shapes_endpoint."""
    price_list = replay(DEMO)
    estimator = serve(shapes(recorded()["shapes"]))
    oci = collector(endpoint=price_list.url, options={"shapes_endpoint": estimator.url})
    fetched = oci.fetch()
    assert fetched == recorded()
    assert [(r.path, r.query) for r in price_list.requests] == [
        (PRICES_PATH, {"currencyCode": "USD"})
    ]
    assert [r.path for r in estimator.requests] == [SHAPES_PATH]
    expected = parse(recorded(), observed_at).records
    assert oci.parse(fetched, observed_at=observed_at).records == expected


def test_fetch_follows_a_next_link_on_our_own_host(serve: Callable[..., ReplayServer]) -> None:
    first, second = recorded()["prices/page-1"], {"items": [], "hasMore": False}
    foreign = "https://apexapps.oracle.com" + PRICES_PATH + "?currencyCode=USD&offset=8"
    first = {**first, "hasMore": True, "links": [{"rel": "next", "href": foreign}]}
    server = serve(
        prices(second, query={"offset": "8"}), prices(first), shapes(recorded()["shapes"])
    )
    fetched = collector(endpoint=server.url, options={"shapes_endpoint": server.url}).fetch()
    assert list(fetched) == ["prices/page-1", "prices/page-2", "shapes"]
    assert [r.query.get("offset") for r in server.requests[:2]] == [None, "8"]


def test_fetch_waits_for_retry_after_on_429(
    serve: Callable[..., ReplayServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = serve(
        prices({"message": "throttled"}, status=429, headers={"Retry-After": "2"}, times=1),
        prices(recorded()["prices/page-1"]),
        shapes(recorded()["shapes"]),
    )
    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)  # the wait asked for, not waited
    fetched = collector(endpoint=server.url, options={"shapes_endpoint": server.url}).fetch()
    assert fetched == recorded() and slept == [2]


def test_the_second_document_failing_fails_the_run(
    serve: Callable[..., ReplayServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = serve(prices(recorded()["prices/page-1"]), shapes(None, status=503))
    monkeypatch.setattr(time, "sleep", lambda seconds: None)
    oci = collector(endpoint=server.url, options={"shapes_endpoint": server.url}, max_retries=1)
    with pytest.raises(FetchError, match=r"^oci: shapes: HTTP 503: busy"):
        oci.fetch()
    assert [r.path for r in server.requests] == [PRICES_PATH, SHAPES_PATH, SHAPES_PATH]


def test_garbage_instead_of_json_fails_naming_the_provider(
    serve: Callable[..., ReplayServer],
) -> None:
    server = serve(
        Exchange(match={"path": PRICES_PATH}, content_type="text/html", body=b"<html>maintenance")
    )
    with pytest.raises(FetchError, match=r"^oci: price list page 1: answer is not JSON"):
        collector(endpoint=server.url, options={"shapes_endpoint": server.url}).fetch()


def test_a_mirror_under_a_path_keeps_its_prefix_on_the_next_page(
    serve: Callable[..., ReplayServer],
) -> None:
    """Oracle's next link names Oracle's host: its path and query go on the mirror's endpoint,
    under the mirror's own path; the run never leaves the configured host."""
    foreign = "https://apexapps.oracle.com" + PRICES_PATH + "?currencyCode=USD&offset=8"
    first = {"items": [], "hasMore": True, "links": [{"rel": "next", "href": foreign}]}
    path = "/mirror" + PRICES_PATH
    server = serve(
        Exchange(match={"path": path, "query": {"offset": "8"}}, body=b'{"items": []}'),
        Exchange(match={"path": path}, body=json.dumps(first).encode()),
        shapes(recorded()["shapes"]),
    )
    oci = collector(endpoint=server.url + "/mirror", options={"shapes_endpoint": server.url})
    assert list(oci.fetch()) == ["prices/page-1", "prices/page-2", "shapes"]
    assert [r.path for r in server.requests] == [path, path, SHAPES_PATH]
    assert server.requests[1].query == {"currencyCode": "USD", "offset": "8"}
