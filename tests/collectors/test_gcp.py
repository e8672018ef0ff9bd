"""Google Cloud collector: parse on authored catalog pages, fetch through the real SDK client.

Fetch tests run google-cloud-billing's CloudCatalogClient over its REST transport against the
loopback replay server: request building, the API key header, Application Default
Credentials (a service-account file signed with a key made here), pagination, api_core
retries and the error mapping all run for real.
"""

from __future__ import annotations

import base64
import copy
import json
import logging
import os
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from collectors.base import ParseResult, PriceRecord, ProviderSettings
from collectors.common import FetchError, MissingCredentials, PayloadShapeError
from collectors.gcp.collector import DEFAULT_ENDPOINT, GPU_REGIONS, GcpCollector
from collectors.gcp.machines import ATTACHABLE, RECIPES, recipes
from collectors.gcp.skus import COMPONENTS
from collectors.gpus import INSTANCE_GPUS
from tests.collectors import support
from tests.collectors.support import demo_of, fixtures_of, keyed
from tracker import config as config_mod
from tracker.collecting.replay import Exchange, ReplayServer

# The one recording, the demo's and these tests' (its README says which prices are real), and
# the SKUs kept out of it because they exist to be reported or to price nothing: an unknown
# GPU, N1 custom and sole-tenant cores, a commitment of a region not asked (their README).
DEMO = demo_of("gcp")
FIXTURES = fixtures_of("gcp")
TRAPS = FIXTURES / "traps.json"
N1 = FIXTURES / "n1.json"
SKUS_PATH = "/v1/services/6F81-5844-456A/skus"
REGIONS = ("us-central1", "us-east4", "us-east5", "europe-west4")
TOKEN = json.loads((DEMO / "page1.json").read_text())["nextPageToken"]


def recorded_pages(folder: Path = DEMO) -> dict[str, Any]:
    return support.recorded_pages(folder)


def load_pages() -> dict[str, Any]:
    """The two pages worked by hand: the recording's first two (the N1 host rates are on the
    second), the trap SKUs added to the second, which ends the paging."""
    pages = recorded_pages()
    added = [s for path in (TRAPS, N1) for s in json.loads(path.read_text())["skus"]]
    second = {"skus": pages["page-2"]["skus"] + added}
    return {"page-1": pages["page-1"], "page-2": {**second, "nextPageToken": ""}}


def collector(**settings: Any) -> GcpCollector:
    settings.setdefault("max_retries", 2)
    settings.setdefault("timeout", 2.0)
    settings.setdefault("regions", REGIONS)
    return GcpCollector(ProviderSettings(**settings))


def parse(payloads: dict[str, Any], observed_at: datetime, **settings: Any) -> ParseResult:
    return collector(**settings).parse(payloads, observed_at=observed_at)


def by_offer(result: ParseResult) -> dict[tuple[Any, ...], PriceRecord]:
    return keyed(result, "region", "instance_type", "price_kind", "term_months")


def record(instance_type: str, kind: str, price: str, **changes: Any) -> PriceRecord:
    """The expected record, GPU and host facts from the shape table."""
    gpu = INSTANCE_GPUS["gcp"][instance_type]
    term = changes.pop("term_months", None)
    fields: dict[str, Any] = {
        "provider": "gcp",
        "region": "us-central1",
        "zone": None,
        "instance_type": instance_type,
        "price_kind": kind,
        "term_months": term,
        "payment_option": None,
        "offering_class": None,
        "currency": "USD",
        "price_per_hour": Decimal(price),
        "upfront_total": None if term is None else Decimal(0),
        "gpu_model": gpu.gpu_model,
        "gpu_count": gpu.gpu_count,
        "gpu_memory_gib": gpu.gpu_memory_gib,
        "vcpus": gpu.vcpus,
        "memory_gib": gpu.memory_gib,
        "effective_at": None,
    }
    fields.update(changes)
    return PriceRecord(**fields)


def sku(
    description: str = "Nvidia Tesla T4 GPU running in Americas",
    *,
    usage: str = "OnDemand",
    group: str = "GPU",
    family: str = "Compute",
    regions: tuple[str, ...] = ("us-central1",),
    units: Any = "0",
    nanos: int = 350000000,
    unit: str = "h",
    sku_id: str = "0C5F-8B6A-E392",
) -> dict[str, Any]:
    """One SKU in the wire format; by default the T4 GPU on-demand (the real 0.35)."""
    return {
        "name": f"services/6F81-5844-456A/skus/{sku_id}",
        "skuId": sku_id,
        "description": description,
        "category": {
            "serviceDisplayName": "Compute Engine",
            "resourceFamily": family,
            "resourceGroup": group,
            "usageType": usage,
        },
        "serviceRegions": list(regions),
        "pricingInfo": [
            {
                "summary": "",
                "pricingExpression": {
                    "usageUnit": unit,
                    "displayQuantity": 1,
                    "tieredRates": [
                        {
                            "startUsageAmount": 0,
                            "unitPrice": {"currencyCode": "USD", "units": units, "nanos": nanos},
                        }
                    ],
                },
                "currencyConversionRate": 1,
                "effectiveTime": "2026-11-27T09:12:31.402Z",
            }
        ],
        "serviceProviderName": "Google",
    }


def parse_skus(observed_at: datetime, *skus: dict[str, Any], **settings: Any) -> ParseResult:
    settings.setdefault("regions", ("us-central1",))
    return parse({"page-1": {"skus": list(skus), "nextPageToken": ""}}, observed_at, **settings)


# The T4 is sold only attached to an N1 machine: the single-SKU tests give it the smallest
# host, n1-standard-1 (1 vCPU, 3.75 GiB), at 0.01 a vCPU-hour and 0.004 a GiB-hour: 0.025 an
# hour on top of the GPU.
SMALLEST = "n1-standard-1+nvidia-tesla-t4x1"
_N1_USAGE = {("on_demand", None): "OnDemand", ("spot", None): "Preemptible",
             ("reserved", 12): "Commit1Yr", ("reserved", 36): "Commit3Yr"}  # fmt: skip


def n1_host(usage: str = "OnDemand", regions: tuple[str, ...] = ("us-central1",)) -> list[Any]:
    """The N1 core and RAM SKUs of one offer (usageType), in their wire format."""
    if usage.startswith("Commit"):
        term = "1 Year" if usage == "Commit1Yr" else "3 Years"
        names = [f"Commitment v1: {part} in Americas for {term}" for part in ("Cpu", "Ram")]
        groups = ("CPU", "RAM")
    else:
        spot = "Spot Preemptible " if usage == "Preemptible" else ""
        names = [
            f"{spot}N1 Predefined Instance {part} running in Americas" for part in ("Core", "Ram")
        ]
        groups = ("N1Standard", "N1Standard")
    return [
        sku(names[0], usage=usage, group=groups[0], nanos=10_000_000, regions=regions,
            sku_id="1C0E-0000-0001"),
        sku(names[1], usage=usage, group=groups[1], unit="GiBy.h", nanos=4_000_000,
            regions=regions, sku_id="1C0E-0000-0002"),
    ]  # fmt: skip


def smallest(result: ParseResult, region: str = "us-central1") -> PriceRecord:
    [found] = [r for r in result.records if (r.instance_type, r.region) == (SMALLEST, region)]
    return found


def without(payloads: dict[str, Any], *sku_ids: str) -> dict[str, Any]:
    out = copy.deepcopy(payloads)
    for page in out.values():
        page["skus"] = [s for s in page["skus"] if s["skuId"] not in sku_ids]
    return out


# ---------------------------------------------------------------------------------------------
# parse: the fixture pages


def test_records_in_full(observed_at: datetime) -> None:
    offers = by_offer(parse(load_pages(), observed_at))

    # 96 vCPU x 0.031611 (A2 core)  =  3.034656
    # 680 GiB  x 0.004237 (A2 RAM)  =  2.881160
    # 8 GPUs   x 2.933908 (A100)    = 23.471264
    #                                 29.387080  (SkyPilot's table: 29.39)
    assert offers["us-central1", "a2-highgpu-8g", "on_demand", None] == record(
        "a2-highgpu-8g", "on_demand", "29.387080"
    )
    # spot: 12 x 0.01264 + 85 x 0.001695 + 1 x 1.1472 = 0.15168 + 0.144075 + 1.1472 = 1.442955
    assert offers["us-central1", "a2-highgpu-1g", "spot", None] == record(
        "a2-highgpu-1g", "spot", "1.442955"
    )
    # 12 x 0.031611 + 170 x 0.004237 + 3.92808 (A100 80GB) + 375 GiB x 0.08 / 730 h (local SSD
    # is per GiB-month) = 0.379332 + 0.72029 + 3.92808 + 0.0410958904... = 5.0687978904...
    assert offers["us-central1", "a2-ultragpu-1g", "on_demand", None] == record(
        "a2-ultragpu-1g", "on_demand", "5.068798"
    )
    # 1-year commitment: 96 x 0.019915 + 680 x 0.002669 + 8 x 1.84836204
    # = 1.91184 + 1.81492 + 14.78689632 = 18.51365632; billed monthly, nothing up front
    assert offers["us-central1", "a2-highgpu-8g", "reserved", 12] == record(
        "a2-highgpu-8g", "reserved", "18.513656", term_months=12
    )
    # a T4 is priced with its N1 host, never alone; the 3-year commitments:
    # 8 x 0.014225 (N1 Cpu) + 30 GiB x 0.001907 (N1 Ram) + 1 x 0.16 (T4)
    # = 0.1138 + 0.05721 + 0.16 = 0.33101
    assert offers["us-central1", "n1-standard-8+nvidia-tesla-t4x1", "reserved", 36] == record(
        "n1-standard-8+nvidia-tesla-t4x1", "reserved", "0.331010", term_months=36
    )
    # 208 x 0.026924 + 1872 x 0.002344 + 8 x 10.344276 + 6000 GiB x 0.08 / 730
    # = 5.600192 + 4.387968 + 82.754208 + 0.6575342465... = 93.3999022465...
    assert offers["us-central1", "a3-megagpu-8g", "on_demand", None] == record(
        "a3-megagpu-8g", "on_demand", "93.399902"
    )
    # 4 x 0.024988 + 16 x 0.002927 + 0.56004 = 0.099952 + 0.046832 + 0.56004 = 0.706824
    assert offers["us-east4", "g2-standard-4", "on_demand", None] == record(
        "g2-standard-4", "on_demand", "0.706824", region="us-east4"
    )


def test_every_offer_of_one_region(observed_at: datetime) -> None:
    result = parse(load_pages(), observed_at, regions=("europe-west4",))
    prices = {key[1:]: r.price_per_hour for key, r in by_offer(result).items()}
    # regional SKUs only: 12 x 0.034773 + 85 x 0.004661 + 3.227299 = 4.04076, and so on
    assert prices == {
        ("a2-highgpu-1g", "on_demand", None): Decimal("4.040760"),
        ("a2-highgpu-2g", "on_demand", None): Decimal("8.081520"),
        ("a2-highgpu-4g", "on_demand", None): Decimal("16.163040"),
        ("a2-highgpu-8g", "on_demand", None): Decimal("32.326080"),
        ("a2-megagpu-16g", "on_demand", None): Decimal("61.313952"),
        ("a2-ultragpu-1g", "on_demand", None): Decimal("5.575739"),
        ("a2-ultragpu-2g", "on_demand", None): Decimal("11.151479"),
        ("a2-ultragpu-4g", "on_demand", None): Decimal("22.302958"),
        ("a2-ultragpu-8g", "on_demand", None): Decimal("44.605916"),
    }


def test_what_the_fixture_yields(observed_at: datetime) -> None:
    result = parse(load_pages(), observed_at)
    offers = by_offer(result)
    # 86 machines of fixed shape, and 20 N1 shapes with T4s x 4 offers in us-central1
    assert len(result.records) == 166
    assert {r.region for r in result.records} == {"us-central1", "us-east4", "europe-west4"}
    assert {r.zone for r in result.records} == {None}
    assert {r.currency for r in result.records} == {"USD"}
    assert {r.price_per_hour.as_tuple().exponent for r in result.records} == {-6}
    # us-east5 sells A100 80GB and H100, but the catalog has no local SSD price there
    assert not [k for k in offers if k[0] == "us-east5"]
    # the A100 40GB is not sold in us-east4: the A2 host alone is not an a2-highgpu
    assert not [k for k in offers if k[0] == "us-east4" and k[1].startswith("a2-highgpu")]
    # no commitment SKU for the A100 80GB or local SSD: no reserved a2-ultragpu
    assert not [k for k in offers if k[1].startswith("a2-ultragpu") and k[2] == "reserved"]
    assert {k[2:] for k in offers if k[1] == "a3-highgpu-8g"} == {("on_demand", None)}
    # no GPU alone: every record is a machine with a host
    assert all(r.vcpus and r.memory_gib for r in result.records)
    assert result.facts == dict.fromkeys({r.instance_type for r in result.records}, "table")


def test_trap_skus_feed_nothing(observed_at: datetime) -> None:
    pages = load_pages()
    stored = {r.price_per_hour for r in parse(pages, observed_at).records}
    assert not stored & {Decimal("1.846198"), Decimal("4.841121"), Decimal("4.423936")}
    # Without the real A100 80GB SKU, the DWS one (listed first) must not stand in for it.
    no_80gb = parse(without(pages, "1D5A-7C7B-AE19"), observed_at, regions=("us-central1",))
    ultra = {r.price_kind for r in no_80gb.records if "ultragpu" in r.instance_type}
    assert ultra == {"spot"}  # its own spot SKU is still there
    # Nor calendar-mode or DWS H100 Mega SKUs for the real "H100 80GB Plus" one.
    no_mega = parse(without(pages, "94F8-C2B1-5D0E"), observed_at)
    assert not [r for r in no_mega.records if r.instance_type == "a3-megagpu-8g"]
    # the 40GB A100 machines keep the 40GB price whatever comes before it
    a2 = by_offer(no_80gb)["us-central1", "a2-highgpu-1g", "on_demand", None]
    assert a2.price_per_hour == Decimal("3.673385")  # 0.379332 + 0.360145 + 2.933908


def test_spot_ssd_filed_as_on_demand_is_read_as_spot(observed_at: datetime) -> None:
    offers = by_offer(parse(load_pages(), observed_at))
    # 12 x 0.01264 + 170 x 0.001695 + 1.57 + 375 x 0.048 / 730 = 2.0344875342...
    assert offers["us-central1", "a2-ultragpu-1g", "spot", None].price_per_hour == (
        Decimal("2.034488")
    )
    # ... and on-demand keeps 0.08 / GiB-month (no clash with the spot SKU)
    assert offers["us-central1", "a2-ultragpu-1g", "on_demand", None].price_per_hour == (
        Decimal("5.068798")
    )


def test_skips_are_counted_and_logged(
    observed_at: datetime, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="collectors.gcp"):
        result = parse(load_pages(), observed_at)
    # DWS A100 80GB, calendar and DWS H100 Mega, T4 Virtual Workstation, H200, 5-year A2 Cpu,
    # N1 on sole-tenant nodes; SKUs of no GPU machine (N1 custom cores, N2 commitments, M1
    # premiums) are not counted
    assert result.skipped_rows == 7
    assert result.unknown_instance_types == {"Nvidia H200 141GB GPU"}
    messages = [r.getMessage() for r in caplog.records]
    assert all(m.startswith("gcp: ") for m in messages)
    assert "gcp: GPUs not in the component table: Nvidia H200 141GB GPU" in messages
    assert (
        "gcp: no on_demand price in us-east5 for a2-ultragpu-1g, a2-ultragpu-2g, a2-ultragpu-4g"
        " and 5 more: no rate for local-ssd"
    ) in messages
    assert messages[-1] == (
        "gcp: 166 records, 7 SKUs skipped (other product: 5, other commitment: 1, unknown GPU: 1)"
    )
    assert next(r for r in caplog.records if r.levelno == logging.WARNING).getMessage() == (
        "gcp: GPUs not in the component table: Nvidia H200 141GB GPU"
    )


@pytest.mark.parametrize(
    ("regions", "expected"),
    [
        (("europe-west4",), {"europe-west4"}),
        (("us-east4", "asia-east1"), {"us-east4"}),
        # the default GPU regions: us-east1, us-west1 and us-west4 are in it; asia-east1 too,
        # but the fixture prices no GPU there
        ((), {"us-central1", "us-east1", "us-east4", "us-west1", "us-west4", "europe-west4"}),
    ],
)
def test_parse_keeps_only_the_asked_regions(
    observed_at: datetime, regions: tuple[str, ...], expected: set[str]
) -> None:
    assert {r.region for r in parse(load_pages(), observed_at, regions=regions).records} == (
        expected
    )


def test_pages_are_read_in_page_number_order(observed_at: datetime) -> None:
    pages = load_pages()
    swapped = {"page-2": pages["page-2"], "page-1": pages["page-1"]}
    assert parse(swapped, observed_at).records == parse(pages, observed_at).records


# ---------------------------------------------------------------------------------------------
# parse: single SKUs (the T4 with the N1 host rates of the same offer)


def test_a_gpu_alone_is_no_machine(observed_at: datetime) -> None:
    assert parse_skus(observed_at, sku()).records == []
    result = parse_skus(observed_at, sku(), *n1_host())
    # 0.35 (T4) + 1 x 0.01 + 3.75 x 0.004 = 0.375
    assert smallest(result) == record(SMALLEST, "on_demand", "0.375")
    # every T4 shape the table pairs N1 hosts with: 6 with 1 GPU, 6 with 2, 8 with 4
    counts = [r.gpu_count for r in result.records]
    assert (counts.count(1), counts.count(2), counts.count(4), len(counts)) == (6, 6, 8, 20)


@pytest.mark.parametrize(
    ("changes", "kind", "term"),
    [
        ({"usage": "Preemptible", "description": "Spot Preemptible Nvidia Tesla T4 GPU running "
          "in Americas"}, "spot", None),
        ({"usage": "Preemptible", "description": "Nvidia Tesla T4 GPU attached to Spot "
          "Preemptible VMs running in Americas"}, "spot", None),
        # Google files some spot SKUs under OnDemand: the words make it spot
        ({"description": "Spot Preemptible Nvidia Tesla T4 GPU running in Americas"}, "spot", None),
        ({"usage": "Commit1Yr", "description": "Commitment v1: Nvidia Tesla T4 GPU running in "
          "Americas for 1 Year"}, "reserved", 12),
        ({"usage": "Commit3Yr", "description": "Commitment v1: Nvidia Tesla T4 GPU in Iowa for "
          "3 Years"}, "reserved", 36),
    ],
)  # fmt: skip
def test_offer_kinds(
    observed_at: datetime, changes: dict[str, Any], kind: str, term: int | None
) -> None:
    got = smallest(parse_skus(observed_at, sku(**changes), *n1_host(_N1_USAGE[kind, term])))
    assert (got.price_kind, got.term_months, got.price_per_hour) == (kind, term, Decimal("0.375"))


@pytest.mark.parametrize(
    "changes",
    [
        {"unit": "mo"},  # a month-based GPU price: refused, never mixed with hourly ones
        {"unit": "GiBy.h"},
        {"units": "0", "nanos": 0},
        {"units": "-1", "nanos": -500000000},
        {"units": "1", "nanos": -5},  # units and nanos carry one sign
        {"units": "0.35", "nanos": 0},
        {"nanos": 1_000_000_000},
        {"group": "CPU"},
        {"family": "Storage"},
        {"regions": ()},
        {"usage": "Commit1Yr"},  # a commitment usageType on an on-demand description
        {"usage": "Commit1Mo"},
        {"usage": "Commit3Yr", "description": "Commitment v1: Nvidia Tesla T4 GPU in Americas "
         "for 1 Year"},
        {"usage": "Preemptible", "description": "Commitment v1: Nvidia Tesla T4 GPU in "
         "Americas for 1 Year"},
    ],
)  # fmt: skip
def test_skus_never_priced(
    observed_at: datetime, caplog: pytest.LogCaptureFixture, changes: dict[str, Any]
) -> None:
    assert parse_skus(observed_at, sku(), *n1_host()).records  # the base SKU itself is priced
    with caplog.at_level(logging.WARNING, logger="collectors.gcp"):
        result = parse_skus(observed_at, sku(**changes), *n1_host())
    assert result.records == []
    assert result.skipped_rows == 1
    [warning] = caplog.messages
    assert warning.startswith("gcp: page-1 sku 0 (SKU 0C5F-8B6A-E392 ")


@pytest.mark.parametrize(
    "description",
    [
        "Nvidia Tesla T4 GPU attached to DWS Defined Duration VMs running in Americas",
        "Nvidia Tesla T4 Virtual Workstation GPU running in Americas",
        "Reserved Nvidia Tesla T4 GPU in Americas in Calendar Mode",
        "Nvidia Tesla T4 GPU for Flex-start VMs running in Americas",
        "Nvidia Tesla T4 GPU Sole Tenancy Premium running in Americas",
    ],
)
def test_other_products_are_skipped_quietly(
    observed_at: datetime, caplog: pytest.LogCaptureFixture, description: str
) -> None:
    with caplog.at_level(logging.WARNING, logger="collectors.gcp"):
        result = parse_skus(observed_at, sku(description))
    assert (result.records, result.skipped_rows, result.unknown_instance_types) == ([], 1, set())
    assert caplog.messages == []


def test_unknown_gpus_are_reported(observed_at: datetime) -> None:
    result = parse_skus(
        observed_at,
        sku("Spot Preemptible Nvidia B300 GPU running in Americas", usage="Preemptible"),
        sku("Commitment v1: Nvidia H200 141GB GPU in Americas for 1 Year", usage="Commit1Yr"),
    )
    assert result.records == []
    assert result.unknown_instance_types == {"Nvidia B300 GPU", "Nvidia H200 141GB GPU"}


def test_skus_of_no_gpu_machine_are_passed_over(observed_at: datetime) -> None:
    other = sku("N2 Instance Core running in Americas", group="CPU")
    result = parse_skus(observed_at, other, sku(), *n1_host())
    assert (len(result.records), result.skipped_rows) == (20, 0)


def test_money_is_exact(observed_at: datetime) -> None:
    # units is an int64: a string in JSON; an int after some re-serialisations
    for units in ("2", 2):
        got = smallest(parse_skus(observed_at, sku(units=units, nanos=933908001), *n1_host()))
        assert got.price_per_hour == Decimal("2.958908")  # 2.933908001 + 0.025, rounded once


def test_tiers_and_pricing_history(observed_at: datetime) -> None:
    base = sku()
    expression = base["pricingInfo"][0]["pricingExpression"]
    # a volume tier after the first: the first is the price
    expression["tieredRates"].append(
        {"startUsageAmount": 1000, "unitPrice": {"currencyCode": "USD", "units": "0", "nanos": 1}}
    )
    # an older pricingInfo entry (a startTime query): the newest is in force
    older = copy.deepcopy(base["pricingInfo"][0])
    older["effectiveTime"] = "2025-01-01T00:00:00Z"
    older["pricingExpression"]["tieredRates"][0]["unitPrice"]["nanos"] = 400000000
    base["pricingInfo"].insert(0, older)
    assert smallest(parse_skus(observed_at, base, *n1_host())).price_per_hour == Decimal("0.375")
    # a free first tier is an allowance, not the price: nothing is stored
    free = sku(nanos=0)
    free["pricingInfo"][0]["pricingExpression"]["tieredRates"].append(
        {"startUsageAmount": 100, "unitPrice": {"currencyCode": "USD", "units": "0", "nanos": 3}}
    )
    assert parse_skus(observed_at, free, *n1_host()).records == []


def test_local_ssd_per_month_is_spread_over_730_hours(observed_at: datetime) -> None:
    parts = [
        sku("A2 Instance Core running in Americas", group="CPU", nanos=31611000),
        sku("A2 Instance Ram running in Americas", group="RAM", unit="GiBy.h", nanos=4237000),
        sku("Nvidia Tesla A100 80GB GPU running in Americas", units="3", nanos=928080000),
    ]

    def a2_ultragpu_8g(unit: str, nanos: int) -> Decimal | None:
        ssd = sku("SSD backed Local Storage", group="LocalSSD", family="Storage", unit=unit,
                  nanos=nanos, sku_id="D2D7-8E53-8B5A")  # fmt: skip
        offers = by_offer(parse_skus(observed_at, *parts, ssd))
        found = offers.get(("us-central1", "a2-ultragpu-8g", "on_demand", None))
        return None if found is None else found.price_per_hour

    # host and GPUs: 96 x 0.031611 + 1360 x 0.004237 + 8 x 3.92808 = 40.221616
    # + 3000 GiB x 0.08 per GiB-month / 730 h = + 0.3287671232...
    assert a2_ultragpu_8g("GiBy.mo", 80000000) == Decimal("40.550383")
    # + 3000 GiB x 0.0001 per GiB-hour = + 0.3
    assert a2_ultragpu_8g("GiBy.h", 100000) == Decimal("40.521616")
    # a unit we cannot turn into hours: no price at all, not one without the SSD
    assert a2_ultragpu_8g("GiBy.d", 2630000) is None


def test_a_missing_part_means_no_price(
    observed_at: datetime, caplog: pytest.LogCaptureFixture
) -> None:
    pages = without(load_pages(), "2390-DCAF-DA38")  # the Americas A2 RAM SKU
    with caplog.at_level(logging.INFO, logger="collectors.gcp"):
        result = parse(pages, observed_at, regions=("us-central1",))
    a2 = {r.price_kind for r in result.records if r.instance_type.startswith("a2-")}
    assert a2 == {"spot", "reserved"}  # they have RAM SKUs of their own
    assert (
        "gcp: no on_demand price in us-central1 for a2-highgpu-1g, a2-highgpu-2g, a2-highgpu-4g"
        " and 6 more: no rate for a2-ram"
    ) in caplog.messages


def test_two_prices_for_one_part_leave_it_unpriced(
    observed_at: datetime, caplog: pytest.LogCaptureFixture
) -> None:
    twin = sku(nanos=360000000, sku_id="FFFF-0000-1111", regions=("us-central1", "us-east1"))
    regions = ("us-central1", "us-east1")
    with caplog.at_level(logging.WARNING, logger="collectors.gcp"):
        result = parse_skus(observed_at, sku(), twin, *n1_host(regions=regions), regions=regions)
    assert {r.region for r in result.records} == {"us-east1"}
    assert smallest(result, "us-east1").price_per_hour == Decimal("0.385")  # 0.36 + 0.025
    assert caplog.messages == [
        "gcp: SKUs 0C5F-8B6A-E392 and FFFF-0000-1111 both price nvidia-tesla-t4 on_demand in "
        "us-central1 (0.35 USD vs 0.36 USD); using neither"
    ]
    # the same price twice (one SKU listed on two pages) is one price
    assert len(parse_skus(observed_at, sku(), sku(), *n1_host()).records) == 20


def test_parts_in_two_currencies_make_no_price(observed_at: datetime) -> None:
    gpu = sku("Nvidia L4 GPU running in Americas", nanos=560040000)
    core = sku("G2 Instance Core running in Americas", group="CPU", nanos=24988000)
    ram = sku("G2 Instance Ram running in Americas", group="RAM", unit="GiBy.h", nanos=2927000)
    assert len(parse_skus(observed_at, gpu, core, ram).records) == 8  # g2-standard-4 ... 96
    ram["pricingInfo"][0]["pricingExpression"]["tieredRates"][0]["unitPrice"]["currencyCode"] = (
        "EUR"
    )
    assert parse_skus(observed_at, gpu, core, ram).records == []


@pytest.mark.parametrize(
    ("payloads", "message"),
    [
        ({"page-1": {"error": {"code": 403}}}, "page-1: the answer has no skus list"),
        ({"page-1": {"skus": None, "nextPageToken": ""}}, "page-1: the answer has no skus list"),
        ({"page-1": []}, "page-1: the answer has no skus list"),
        ({"page-1": {"skus": ["x"]}}, "page-1 sku 0 is not an object"),
        ({"page-1": {"skus": [{"description": "x"}]}}, "page-1 sku 0 lacks description"),
        ({"us-central1": {"skus": []}}, "unexpected payload key 'us-central1'"),
    ],
)
def test_changed_shape_fails_loudly(
    observed_at: datetime, payloads: dict[str, Any], message: str
) -> None:
    with pytest.raises(PayloadShapeError, match=r"^gcp: ") as caught:
        parse(payloads, observed_at)
    assert message in str(caught.value)


def test_an_empty_last_page_is_fine(observed_at: datetime) -> None:
    pages = {**load_pages(), "page-3": {"nextPageToken": ""}}  # proto3 JSON omits empty lists
    assert len(parse(pages, observed_at).records) == 166


# ---------------------------------------------------------------------------------------------
# the machine table


def test_every_machine_has_a_recipe_and_a_shape() -> None:
    machines = recipes()
    assert set(machines) == set(INSTANCE_GPUS["gcp"])
    assert set(machines) - set(RECIPES) == {t for t in machines if t.startswith("n1-")}
    components = {c for c, *_ in COMPONENTS}
    for name, recipe in machines.items():
        gpu = INSTANCE_GPUS["gcp"][name]
        assert recipe.gpu in components, name
        assert {f"{recipe.host}-core", f"{recipe.host}-ram"} <= components, name
        assert gpu.vcpus and gpu.memory_gib, name
        assert recipe.gpu_count in (None, gpu.gpu_count), name
    assert RECIPES["a3-highgpu-8g"].local_ssd_gib == RECIPES["a3-megagpu-8g"].local_ssd_gib == 6000
    assert RECIPES["a2-ultragpu-1g"].local_ssd_gib == 375
    assert RECIPES["a2-highgpu-8g"].local_ssd_gib == 0


# ---------------------------------------------------------------------------------------------
# credentials and configuration


def test_api_key_env_is_read_from_the_config() -> None:
    config = config_mod.from_dict(
        {"providers": {"gcp": {"api_key_env": "BILLING_KEY"}}}, source=None
    )
    settings, missing = config.providers["gcp"].settings({"BILLING_KEY": "k1"})
    assert (settings.credentials, missing) == ({"api_key": "k1"}, [])
    default = config_mod.from_dict({}, source=None).providers["gcp"]
    assert default.settings({"GOOGLE_API_KEY": "k2"})[0].credentials == {"api_key": "k2"}
    # absent: not missing, Application Default Credentials may still be there
    settings, missing = default.settings({})
    assert (settings.credentials, missing) == ({}, [])
    assert default.interval_s == 6 * 3600
    assert (
        GcpCollector.default_endpoint == DEFAULT_ENDPOINT == "https://cloudbilling.googleapis.com"
    )
    assert collector(regions=()).regions == GPU_REGIONS


@pytest.fixture
def no_adc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No Application Default Credentials: no variable, no gcloud configuration."""
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "gcloud"))


@pytest.mark.usefixtures("no_adc")
def test_no_key_and_no_adc_is_missing_credentials() -> None:
    with pytest.raises(MissingCredentials) as caught:
        collector().check_credentials()
    assert str(caught.value) == (
        "gcp: no credentials; set GOOGLE_API_KEY (or set up Application Default Credentials)"
    )
    collector(credentials={"api_key": "k"}).check_credentials()  # a key needs nothing else


# ---------------------------------------------------------------------------------------------
# fetch through the real client (loopback replay server)


def answer(page: int, body: Any = None, *, status: int = 200, **kwargs: Any) -> Exchange:
    """The answer to the request for page 1 or 2: the hand-worked page unless `body` is given."""
    if body is None:
        content = json.dumps(load_pages()[f"page-{page}"]).encode()
    else:
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
    token = None if page == 1 else TOKEN
    return Exchange(
        match={"method": "GET", "path": SKUS_PATH, "query": {"pageToken": token}},
        status=status,
        body=content,
        **kwargs,
    )


def error(code: int, status: str, message: str, reason: str | None = None) -> dict[str, Any]:
    """Google's JSON error body."""
    details = [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason}]
    body = {"code": code, "message": message, "status": status}
    return {"error": {**body, "details": details} if reason else body}


def at(server: ReplayServer, **settings: Any) -> GcpCollector:
    settings.setdefault("credentials", {"api_key": "test-key"})
    return collector(endpoint=server.url, **settings)


def test_fetch_pages_through_the_real_client(
    replay: Callable[..., ReplayServer], observed_at: datetime
) -> None:
    server = replay(DEMO)
    progress: list[tuple[int, int]] = []
    gcp = GcpCollector(
        ProviderSettings(endpoint=server.url, credentials={"api_key": "test-key"}, regions=REGIONS),
        progress=lambda *a: progress.append(a),
    )
    payloads = gcp.fetch()
    assert server.unmatched == []
    assert list(payloads) == ["page-1", "page-2", "page-3"]
    assert progress == [(1, 23), (2, 55), (3, 76)]  # page 3: 14 machine SKUs, 7 of egress
    first, second, third = server.requests
    assert first.path == second.path == third.path == SKUS_PATH
    assert first.query["currencyCode"] == "USD" and first.query["pageSize"] == "5000"
    assert "pageToken" not in first.query and second.query["pageToken"] == TOKEN
    assert third.query["pageToken"] == payloads["page-2"]["nextPageToken"]
    assert first.headers["x-goog-api-key"] == "test-key"
    assert "authorization" not in first.headers
    # what fetch returns parses exactly like the pages as recorded
    assert gcp.parse(payloads, observed_at=observed_at).records == (
        parse(recorded_pages(), observed_at).records
    )
    assert payloads["page-1"]["skus"][2]["pricingInfo"][0]["pricingExpression"]["tieredRates"][0][
        "unitPrice"
    ] == {"currencyCode": "USD", "units": "2", "nanos": 933908000}
    json.dumps(payloads)  # JSON-able as it is


def test_fetch_with_application_default_credentials(
    serve: Callable[..., ReplayServer], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    server = serve(answer(1), answer(2))
    account = {
        "type": "service_account",
        "project_id": "tracker-test",
        "private_key_id": "1",
        "private_key": pem,
        "client_email": "prices@tracker-test.iam.gserviceaccount.com",
        "client_id": "1",
        "token_uri": server.url + "/token",
    }
    path = tmp_path / "adc.json"
    path.write_text(json.dumps(account))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(path))

    gcp = at(server, credentials={})
    gcp.check_credentials()
    assert list(gcp.fetch()) == ["page-1", "page-2"]
    assert server.unmatched == []
    for request in server.requests:
        assert "x-goog-api-key" not in request.headers
        scheme, token = request.headers["authorization"].split(" ")
        claims = json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))
        assert (scheme, claims["iss"]) == ("Bearer", account["client_email"])


@pytest.mark.parametrize(
    ("credentials", "status", "body", "hint"),
    [
        ({"api_key": "k"}, 403, error(403, "PERMISSION_DENIED", "Cloud Billing API has not "
         "been used in project 1 before or it is disabled."), "check GOOGLE_API_KEY"),
        ({"api_key": "k"}, 400, error(400, "INVALID_ARGUMENT", "API key not valid. Please pass "
         "a valid API key.", "API_KEY_INVALID"), "check GOOGLE_API_KEY"),
        ({"api_key": "k"}, 401, error(401, "UNAUTHENTICATED", "Request had invalid "
         "authentication credentials."), "check GOOGLE_API_KEY"),
        ({}, 403, error(403, "PERMISSION_DENIED", "The caller does not have permission."),
         "check Application Default Credentials"),
    ],
)  # fmt: skip
def test_refused_credentials_say_what_to_check(
    serve: Callable[..., ReplayServer],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    credentials: dict[str, str],
    status: int,
    body: dict[str, Any],
    hint: str,
) -> None:
    server = serve(answer(1, body, status=status))
    if not credentials:  # ADC from an authorized-user file: no token call until the request
        adc = {
            "type": "authorized_user",
            "client_id": "c",
            "client_secret": "s",
            "refresh_token": "r",
            "token": "ya29.t",
            "expiry": "2999-01-01T00:00:00Z",
        }
        (tmp_path / "adc.json").write_text(json.dumps(adc))
        monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "adc.json"))
    with pytest.raises(FetchError, match=rf"^gcp: ListSkus page 1: HTTP {status}: ") as caught:
        at(server, credentials=credentials).fetch()
    assert str(caught.value).endswith(f"({hint})")
    # never retried by us; on a 401 google-auth refreshes the credentials and resends twice
    assert len(server.requests) == (3 if status == 401 else 1)


def test_429_is_retried_then_succeeds(serve: Callable[..., ReplayServer]) -> None:
    busy = error(429, "RESOURCE_EXHAUSTED", "Quota exceeded.", "RATE_LIMIT_EXCEEDED")
    server = serve(answer(1, busy, status=429, times=2), answer(1), answer(2))
    assert list(at(server, max_retries=2, timeout=1.0).fetch()) == ["page-1", "page-2"]
    assert len(server.requests) == 4


def test_429_that_persists_fails_clearly(
    serve: Callable[..., ReplayServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    busy = error(429, "RESOURCE_EXHAUSTED", "Quota exceeded.", "RATE_LIMIT_EXCEEDED")
    server = serve(answer(1, busy, status=429))
    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)  # the backoff asked for, not a stopwatch
    with pytest.raises(FetchError) as caught:
        at(server, max_retries=2, timeout=1.0).fetch()
    message = str(caught.value)
    assert message.startswith("gcp: ListSkus page 1: HTTP 429 (after 2 retries): GET http://")
    assert message.endswith(": Quota exceeded.")
    assert len(server.requests) == 3
    assert slept and sum(slept) < 2  # backoff scales with the timeout


def test_a_page_that_fails_halfway_fails_the_run(serve: Callable[..., ReplayServer]) -> None:
    server = serve(answer(1), answer(2, error(500, "INTERNAL", "Internal error."), status=500))
    progress: list[tuple[int, int]] = []
    gcp = GcpCollector(
        ProviderSettings(endpoint=server.url, credentials={"api_key": "k"}, max_retries=1,
                         timeout=1.0),
        progress=lambda *a: progress.append(a),
    )  # fmt: skip
    with pytest.raises(FetchError, match=r"^gcp: ListSkus page 2: HTTP 500 \(after 1 retries\)"):
        gcp.fetch()  # raises: no payloads of page 1 come back alone
    assert progress == [(1, 23)]
    assert len(server.requests) == 1 + 2


def test_a_truncated_page_fails_the_run(serve: Callable[..., ReplayServer]) -> None:
    cut = (DEMO / "page2.json").read_bytes()[:5000]
    server = serve(answer(1), answer(2, cut))
    with pytest.raises(FetchError, match=r"^gcp: ListSkus page 2: the answer is not a SKU list"):
        at(server).fetch()


def test_pages_that_never_end_fail(serve: Callable[..., ReplayServer]) -> None:
    looping = load_pages()["page-2"]
    looping["nextPageToken"] = TOKEN
    server = serve(answer(1), answer(2, looping))
    with pytest.raises(PayloadShapeError, match=r"^gcp: page 2: the pages do not end"):
        at(server).fetch()


def test_demo_recording_replays_cleanly(
    replay: Callable[..., ReplayServer], observed_at: datetime
) -> None:
    meta = json.loads((DEMO / "demo.json").read_text())
    server = replay(DEMO)
    demo = at(server, regions=tuple(meta["regions"]), credentials={"api_key": "demo"})
    result = demo.parse(demo.fetch(), observed_at=observed_at)
    assert server.unmatched == []
    assert {r.region for r in result.records} == set(meta["regions"])
    assert {(r.price_kind, r.term_months) for r in result.records} == {
        ("on_demand", None),
        ("spot", None),
        ("reserved", 12),
        ("reserved", 36),
    }
    # T4 and V100 only on N1 machines, in us-central1 (the recording has no Netherlands N1
    # rates): 20 T4 shapes x 4 offers, 23 V100 shapes x 2 (no V100 commitment SKU)
    assert {r.gpu_model for r in result.records} == {"A100", "H100", "L4", "T4", "V100"}
    n1 = [r for r in result.records if r.instance_type.startswith("n1-")]
    assert {r.region for r in n1} == {"us-central1"}
    assert Counter(r.gpu_model for r in n1) == {"T4": 80, "V100": 46}
    assert not [r for r in result.records if r.instance_type in ATTACHABLE]
    offers = by_offer(result)
    assert offers["us-central1", "a2-highgpu-8g", "on_demand", None].price_per_hour == (
        Decimal("29.387080")
    )
    # 8 x 0.031611 (N1 core) + 30 GiB x 0.004237 (N1 RAM) + 1 x 2.48 (V100) = 2.859998;
    # spot 8 x 0.006655 + 30 x 0.000892 + 0.992 = 1.072
    v100 = "n1-standard-8+nvidia-tesla-v100x1"
    assert offers["us-central1", v100, "on_demand", None].price_per_hour == Decimal("2.859998")
    assert offers["us-central1", v100, "spot", None].price_per_hour == Decimal("1.072")


# ---------------------------------------------------------------------------------------------
# the real API (opt-in: pytest --live)


@pytest.mark.live
@pytest.mark.skipif(not os.environ.get("GOOGLE_API_KEY"), reason="needs GOOGLE_API_KEY")
def test_cloud_billing_catalog_live() -> None:
    gcp = GcpCollector(
        ProviderSettings(
            credentials={"api_key": os.environ["GOOGLE_API_KEY"]},
            regions=("us-central1",),
            timeout=60,
        )
    )
    result = gcp.parse(gcp.fetch(), observed_at=datetime.now(UTC))
    offers = by_offer(result)
    a2 = offers["us-central1", "a2-highgpu-1g", "on_demand", None].price_per_hour
    assert 1 < a2 < 10  # 3.673385 in the api-notes
    assert offers["us-central1", "a2-highgpu-1g", "spot", None].price_per_hour < a2
    assert {r.price_kind for r in result.records} == {"on_demand", "spot", "reserved"}


# -- look-alikes the name table alone would let through (found in review) -------------------


def _sku(desc: str, usage: str, group: str, nanos: int, *, family: str = "Compute",
         unit: str = "h", units: str = "0", sku_id: str = "X") -> dict[str, Any]:  # fmt: skip
    return {
        "name": f"services/6F81-5844-456A/skus/{sku_id}",
        "skuId": sku_id,
        "description": desc,
        "category": {"resourceFamily": family, "resourceGroup": group, "usageType": usage},
        "serviceRegions": ["us-central1"],
        "pricingInfo": [
            {
                "effectiveTime": "2026-11-01T00:00:00Z",
                "pricingExpression": {
                    "usageUnit": unit,
                    "tieredRates": [
                        {
                            "startUsageAmount": 0,
                            "unitPrice": {"currencyCode": "USD", "units": units, "nanos": nanos},
                        }
                    ],
                },
            }
        ],
    }


G2_HOST = [
    _sku("G2 Instance Core running in Americas", "OnDemand", "CPU", 24988000, sku_id="core"),
    _sku("G2 Instance Ram running in Americas", "OnDemand", "RAM", 2927000, unit="GiBy.h",
         sku_id="ram"),
]  # fmt: skip


def _g2_4(skus: list[dict[str, Any]], observed_at: datetime) -> dict[str, Decimal]:
    result = parse({"page-1": {"skus": skus, "nextPageToken": ""}}, observed_at)
    return {
        r.price_kind: r.price_per_hour for r in result.records if r.instance_type == "g2-standard-4"
    }


def test_spot_wording_after_the_place_is_still_spot(observed_at: datetime) -> None:
    # Filed under OnDemand with its spot words after the place: read as on-demand it would make
    # a g2-standard-4 on-demand price of 4 x 0.024988 + 16 x 0.002927 + 0.2231 = 0.369884.
    spot_l4 = _sku("Nvidia L4 GPU running in Americas attached to Spot Preemptible VMs",
                   "OnDemand", "GPU", 223100000, sku_id="l4")  # fmt: skip
    assert _g2_4([*G2_HOST, spot_l4], observed_at) == {}  # no on-demand GPU price: no machine


@pytest.mark.parametrize(
    "qualified",
    [
        "Nvidia L4 GPU running in Americas on Sole Tenant Nodes",
        "Nvidia L4 GPU running in Americas for GKE Autopilot",
        "Nvidia L4 GPU running in Americas (1 gpu slice)",
        "Nvidia L4 GPU running in Americas Calendar Mode",  # passes the place: the filter stops it
    ],
)
def test_a_qualifier_after_the_place_is_another_product(
    qualified: str, observed_at: datetime
) -> None:
    l4 = _sku(qualified, "OnDemand", "GPU", 559000000, sku_id="l4")
    assert _g2_4([*G2_HOST, l4], observed_at) == {}
    plain = _sku("Nvidia L4 GPU running in Americas", "OnDemand", "GPU", 559000000, sku_id="l4")
    # 4 x 0.024988 + 16 x 0.002927 + 0.559 = 0.705784: the same SKU without the qualifier
    assert _g2_4([*G2_HOST, plain], observed_at) == {"on_demand": Decimal("0.705784")}


def test_a_local_ssd_commitment_prices_reserved_a2_ultragpu(observed_at: datetime) -> None:
    skus = [
        _sku("Commitment v1: A2 Cpu in Americas for 1 Year", "Commit1Yr", "CPU", 19915000,
             sku_id="c"),
        _sku("Commitment v1: A2 Ram in Americas for 1 Year", "Commit1Yr", "RAM", 2669000,
             unit="GiBy.h", sku_id="r"),
        _sku("Commitment v1: Nvidia Tesla A100 80GB GPU in Americas for 1 Year", "Commit1Yr",
             "GPU", 0, units="2", sku_id="g"),
        _sku("Commitment v1: Local SSD in Americas for 1 Year", "Commit1Yr", "LocalSSD",
             50000000, family="Storage", unit="GiBy.mo", sku_id="s"),
    ]  # fmt: skip
    result = parse({"page-1": {"skus": skus, "nextPageToken": ""}}, observed_at)
    got = {r.instance_type: r for r in result.records}
    # a2-ultragpu-1g: 12 x 0.019915 + 170 x 0.002669 + 2 + 375 x 0.05 / 730
    #   = 0.23898 + 0.45373 + 2 + 0.025684931... = 2.718394931... -> 2.718395
    one = got["a2-ultragpu-1g"]
    assert (one.price_kind, one.term_months, one.price_per_hour) == (
        "reserved",
        12,
        Decimal("2.718395"),
    )
    assert {t for t in got if t.startswith("a2-ultragpu")} == {
        "a2-ultragpu-1g", "a2-ultragpu-2g", "a2-ultragpu-4g", "a2-ultragpu-8g"
    }  # fmt: skip
