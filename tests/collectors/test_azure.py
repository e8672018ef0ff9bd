"""Azure collector: parse on authored wire-format pages, fetch through the real requests stack.

Fetch paths run against `responses` (request shape, pagination, error mapping; it emulates
urllib3 Retry's counting but not its waits) and against the loopback replay server, where the
real urllib3 Retry sleeps for Retry-After and times out for real.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
import logging
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import requests
import responses
from click.testing import CliRunner, Result
from responses import matchers

from collectors import gpus
from collectors.azure import collector as azure
from collectors.azure.collector import AzureCollector
from collectors.base import ParseResult, PriceRecord, ProviderSettings
from collectors.common import FetchError, PayloadShapeError
from tests.collectors import support
from tests.collectors.support import demo_of, fixtures_of, keyed
from tracker.cli import cli
from tracker.collecting.replay import Exchange, ReplayServer

# The one recording, the demo's and these tests'; the rows that warn are kept apart.
DEMO = demo_of("azure")
FIXTURES = fixtures_of("azure")
ENDPOINT = "https://prices.azure.com/api/retail/prices"
UPSTREAM = "https://prices.azure.com:443"
# A real size whose GPU facts Microsoft's pages leave open, so not in the bundled table.
NC8_A10 = "Standard_NC8ads_A10_v4"
SERIES_FILTER = (
    "serviceName eq 'Virtual Machines' and (contains(armSkuName, 'Standard_NC') or "
    "contains(armSkuName, 'Standard_ND') or contains(armSkuName, 'Standard_NG') or "
    "contains(armSkuName, 'Standard_NV'))"
    " and contains(productName, 'Windows') eq false"
)


def recorded_pages(folder: Path = DEMO, **json_kwargs: Any) -> dict[str, Any]:
    """The VM rows' pages of a recording (its Bandwidth page, asked apart, left out)."""
    pages = support.recorded_pages(folder, **json_kwargs)
    spec = json.loads((folder / "exchanges.json").read_text())
    files = [ex["body_file"] for ex in spec["exchanges"]]
    kept = [page for page, file in zip(pages.values(), files, strict=True) if file != BANDWIDTH]
    return {f"page-{n}": page for n, page in enumerate(kept, 1)}


BANDWIDTH = "bandwidth.json"  # the recording's Bandwidth rows (collectors.azure.bandwidth)


def load_pages(**json_kwargs: Any) -> dict[str, Any]:
    """The recorded pages with the trap rows of tests/fixtures/azure/traps.json in: each just
    before the recording's first row of its SKU and region (so a parser that kept it would keep
    it instead of the real one), else at the end of its page; `Count` recounted."""
    pages = recorded_pages(**json_kwargs)
    traps = json.loads((FIXTURES / "traps.json").read_text(), **json_kwargs)
    for key, rows in traps.items():
        items = pages[key]["Items"]
        for trap in rows:
            same = [
                i
                for i, item in enumerate(items)
                if (item["armSkuName"], item["armRegionName"])
                == (trap["armSkuName"], trap["armRegionName"])
            ]
            items.insert(same[0] if same else len(items), trap)
        pages[key]["Count"] = len(items)
    return pages


def collector(**settings: Any) -> AzureCollector:
    settings.setdefault("max_retries", 2)
    return AzureCollector(ProviderSettings(**settings))


def parse(payloads: dict[str, Any], observed_at: datetime, **settings: Any) -> ParseResult:
    return collector(**settings).parse(payloads, observed_at=observed_at)


def by_offer(result: ParseResult) -> dict[tuple[Any, ...], PriceRecord]:
    """The records without the savings plans (`plans`), by region, type, kind and term."""
    plain = dataclasses.replace(result, records=[r for r in result.records if not r.offering_class])
    return keyed(plain, "region", "instance_type", "price_kind", "term_months")


def plans(result: ParseResult) -> dict[tuple[Any, ...], PriceRecord]:
    """The savings-plan records, by region, type and term."""
    saved = [r for r in result.records if r.offering_class == "savings_plan"]
    assert len(saved) == sum(r.offering_class is not None for r in result.records)
    return keyed(
        dataclasses.replace(result, records=saved), "region", "instance_type", "term_months"
    )


def page(items: list[Any], next_link: str | None = None) -> dict[str, Any]:
    return {
        "BillingCurrency": "USD",
        "CustomerEntityId": "Default",
        "CustomerEntityType": "Retail",
        "Items": items,
        "NextPageLink": next_link,
        "Count": len(items),
    }


def row(**changes: Any) -> dict[str, Any]:
    """A Linux on-demand row (NC24ads A100 v4, eastus, the real 3.673) with fields changed."""
    item: dict[str, Any] = {
        "currencyCode": "USD",
        "tierMinimumUnits": 0.0,
        "retailPrice": 3.673,
        "unitPrice": 3.673,
        "armRegionName": "eastus",
        "location": "US East",
        "effectiveStartDate": "2024-05-01T00:00:00Z",
        "meterId": "3c5a5d1e-9a43-5e7f-8a7a-0b8f7d2e1c11",
        "meterName": "NC24ads A100 v4",
        "productId": "DZH318Z0CSHN",
        "skuId": "DZH318Z0CSHN/00J3",
        "productName": "Virtual Machines NCadsA100v4 Series",
        "skuName": "NC24ads A100 v4",
        "serviceName": "Virtual Machines",
        "serviceId": "DZH313Z7MMC8",
        "serviceFamily": "Compute",
        "unitOfMeasure": "1 Hour",
        "type": "Consumption",
        "isPrimaryMeterRegion": True,
        "armSkuName": "Standard_NC24ads_A100_v4",
        "savingsPlan": [
            {"unitPrice": 2.2658737, "retailPrice": 2.2658737, "term": "3 Years"},
            {"unitPrice": 2.9384, "retailPrice": 2.9384, "term": "1 Year"},
        ],
    }
    item.update(changes)
    return item


# ---------------------------------------------------------------------------------------------
# parse: the fixture pages


def test_records_in_full(observed_at: datetime) -> None:
    offers = by_offer(parse(load_pages(), observed_at))

    assert offers["eastus", "Standard_ND96asr_v4", "on_demand", None] == PriceRecord(
        provider="azure",
        region="eastus",
        zone=None,
        instance_type="Standard_ND96asr_v4",
        price_kind="on_demand",
        term_months=None,
        payment_option=None,
        offering_class=None,
        currency="USD",
        price_per_hour=Decimal("27.197"),
        upfront_total=None,
        gpu_model="A100",
        gpu_count=8,
        gpu_memory_gib=40,
        vcpus=96,
        memory_gib=900,
        effective_at=None,
    )
    assert offers["eastus", "Standard_ND96asr_v4", "spot", None] == PriceRecord(
        provider="azure",
        region="eastus",
        zone=None,
        instance_type="Standard_ND96asr_v4",
        price_kind="spot",
        term_months=None,
        payment_option=None,
        offering_class=None,
        currency="USD",
        price_per_hour=Decimal("2.99167"),
        upfront_total=None,
        gpu_model="A100",
        gpu_count=8,
        gpu_memory_gib=40,
        vcpus=96,
        memory_gib=900,
        effective_at=None,
    )
    # 551221 / 8760 = 62.92477168... -> 62.924772
    assert offers["eastus", "Standard_ND96isr_H100_v5", "reserved", 12] == PriceRecord(
        provider="azure",
        region="eastus",
        zone=None,
        instance_type="Standard_ND96isr_H100_v5",
        price_kind="reserved",
        term_months=12,
        payment_option=None,
        offering_class=None,
        currency="USD",
        price_per_hour=Decimal("62.924772"),
        upfront_total=Decimal("551221"),
        gpu_model="H100",
        gpu_count=8,
        gpu_memory_gib=80,
        vcpus=96,
        memory_gib=1900,
        effective_at=None,
    )
    # 1033582 / 26280 = 39.32960426... -> 39.329604
    assert offers["eastus", "Standard_ND96isr_H100_v5", "reserved", 36] == PriceRecord(
        provider="azure",
        region="eastus",
        zone=None,
        instance_type="Standard_ND96isr_H100_v5",
        price_kind="reserved",
        term_months=36,
        payment_option=None,
        offering_class=None,
        currency="USD",
        price_per_hour=Decimal("39.329604"),
        upfront_total=Decimal("1033582"),
        gpu_model="H100",
        gpu_count=8,
        gpu_memory_gib=80,
        vcpus=96,
        memory_gib=1900,
        effective_at=None,
    )
    assert offers["eastus", "Standard_NC4as_T4_v3", "spot", None] == PriceRecord(
        provider="azure",
        region="eastus",
        zone=None,
        instance_type="Standard_NC4as_T4_v3",
        price_kind="spot",
        term_months=None,
        payment_option=None,
        offering_class=None,
        currency="USD",
        price_per_hour=Decimal("0.062699"),
        upfront_total=None,
        gpu_model="T4",
        gpu_count=1,
        gpu_memory_gib=16,
        vcpus=4,
        memory_gib=28,
        effective_at=None,
    )
    assert offers["eastus2", "Standard_ND96amsr_A100_v4", "spot", None] == PriceRecord(
        provider="azure",
        region="eastus2",
        zone=None,
        instance_type="Standard_ND96amsr_A100_v4",
        price_kind="spot",
        term_months=None,
        payment_option=None,
        offering_class=None,
        currency="USD",
        price_per_hour=Decimal("14.4188"),
        upfront_total=None,
        gpu_model="A100",
        gpu_count=8,
        gpu_memory_gib=80,
        vcpus=96,
        memory_gib=1900,
        effective_at=None,
    )


def test_every_offer_and_price(observed_at: datetime) -> None:
    """The offers worked by hand are there at their prices, and no more offers than the rows the
    recording prices (66 rows, 55 offers, 12 savings plans: tracker/demo_data/azure/README.md)."""
    result = parse(load_pages(), observed_at)
    prices = {key: (r.price_per_hour, r.upfront_total) for key, r in by_offer(result).items()}
    assert len(prices) == 55
    assert len(plans(result)) == 12
    # NC24ads A100 v4 reservations: 20288 / 8760 and 39024 / 26280 (term totals, invented)
    assert prices["eastus", "Standard_NC24ads_A100_v4", "reserved", 12] == (
        Decimal("2.315982"),
        Decimal("20288"),
    )
    assert prices["eastus", "Standard_NC24ads_A100_v4", "reserved", 36] == (
        Decimal("1.484932"),
        Decimal("39024"),
    )
    assert (
        prices.items()
        >= {
            ("eastus", "Standard_ND96asr_v4", "on_demand", None): (Decimal("27.197"), None),
            ("eastus", "Standard_ND96asr_v4", "spot", None): (Decimal("2.99167"), None),
            ("eastus", "Standard_NC24ads_A100_v4", "on_demand", None): (Decimal("3.673"), None),
            ("eastus", "Standard_NC24ads_A100_v4", "spot", None): (Decimal("0.444433"), None),
            ("eastus", "Standard_ND96isr_H100_v5", "on_demand", None): (Decimal("98.32"), None),
            ("eastus", "Standard_ND96isr_H100_v5", "reserved", 12): (
                Decimal("62.924772"),
                Decimal("551221"),
            ),
            ("eastus", "Standard_ND96isr_H100_v5", "reserved", 36): (
                Decimal("39.329604"),
                Decimal("1033582"),
            ),
            ("eastus", "Standard_NC4as_T4_v3", "on_demand", None): (Decimal("0.526"), None),
            ("eastus", "Standard_NC4as_T4_v3", "spot", None): (Decimal("0.062699"), None),
            ("eastus2", "Standard_ND96amsr_A100_v4", "on_demand", None): (Decimal("32.77"), None),
            ("eastus2", "Standard_ND96amsr_A100_v4", "spot", None): (Decimal("14.4188"), None),
            ("westeurope", "Standard_NC24ads_A100_v4", "on_demand", None): (Decimal("4.039"), None),
            ("westeurope", "Standard_NC24ads_A100_v4", "spot", None): (Decimal("0.488886"), None),
        }.items()
    )
    # money() quantizes once to six places, never via float arithmetic
    assert {r.price_per_hour.as_tuple().exponent for r in result.records} == {-6}
    assert {r.currency for r in result.records} == {"USD"}
    assert {r.zone for r in result.records} == {None}


def test_reservation_total_is_spread_over_the_term() -> None:
    # Reservation rows say "1 Hour" but carry the term total; hand-checked against api-notes §7.
    assert (Decimal("551221") / 8760).quantize(Decimal("0.000001")) == Decimal("62.924772")
    assert (Decimal("1033582") / 26280).quantize(Decimal("0.000001")) == Decimal("39.329604")


def test_savings_plans_are_reserved_offers_of_their_own(observed_at: datetime) -> None:
    result = parse(load_pages(), observed_at)
    saved = plans(result)
    # NC24ads A100 v4 eastus: savingsPlan unitPrice 2.2658737 (3 Years), 2.9384 (1 Year), per
    # hour as given, rounded once to six places: 2.2658737 -> 2.265874.
    assert saved["eastus", "Standard_NC24ads_A100_v4", 36] == PriceRecord(
        provider="azure",
        region="eastus",
        zone=None,
        instance_type="Standard_NC24ads_A100_v4",
        price_kind="reserved",
        term_months=36,
        payment_option=None,
        offering_class="savings_plan",
        currency="USD",
        price_per_hour=Decimal("2.265874"),
        upfront_total=Decimal("0"),
        gpu_model="A100",
        gpu_count=1,
        gpu_memory_gib=80,
        vcpus=24,
        memory_gib=220,
    )
    hourly = {key: r.price_per_hour for key, r in saved.items()}
    assert hourly["eastus", "Standard_NC24ads_A100_v4", 12] == Decimal("2.938400")
    # ND96isr H100 v5 eastus: the plans beside the reservations of the same terms, none replaced
    assert hourly["eastus", "Standard_ND96isr_H100_v5", 12] == Decimal("78.656")
    assert hourly["eastus", "Standard_ND96isr_H100_v5", 36] == Decimal("61.9416")
    offers = by_offer(result)
    assert offers["eastus", "Standard_ND96isr_H100_v5", "reserved", 12].price_per_hour == (
        Decimal("62.924772")
    )
    assert offers["eastus", "Standard_ND96isr_H100_v5", "on_demand", None].price_per_hour == (
        Decimal("98.32")
    )
    # NG32ads V620 v1 (the AMD NG series): 1.8 on demand, plans 1.44 and 1.1106
    assert hourly["eastus", "Standard_NG32ads_V620_v1", 12] == Decimal("1.44")
    assert offers["eastus", "Standard_NG32ads_V620_v1", "on_demand", None].gpu_model == "V620"
    # a plan on each Linux on-demand row that has one, below its on-demand price
    for (region, sku, _), plan in saved.items():
        assert plan.price_per_hour < offers[region, sku, "on_demand", None].price_per_hour
    assert {r.upfront_total for r in saved.values()} == {Decimal(0)}


@pytest.mark.parametrize(
    ("plans_given", "problem"),
    [
        ("a list", "savingsPlan is a str, not a list"),
        (
            [{"unitPrice": 2.0, "retailPrice": 2.0, "term": "5 Years"}],
            "has an unknown term '5 Years'",
        ),
        ([{"retailPrice": 2.0, "term": "1 Year"}], "(1 Year) has no price: unitPrice None"),
        ([{"unitPrice": 0.0, "retailPrice": 0.0, "term": "1 Year"}], "has no price: unitPrice 0.0"),
        ([{"unitPrice": "NaN", "term": "3 Years"}], "has no price: unitPrice 'NaN'"),
        ([["1 Year", 2.0]], "savingsPlan[0] is not an object"),
        ([{"unitPrice": 2.0, "term": ["1 Year"]}], "has an unknown term ['1 Year']"),
    ],
)
def test_an_unreadable_savings_plan_is_skipped_and_said(
    observed_at: datetime, caplog: pytest.LogCaptureFixture, plans_given: Any, problem: str
) -> None:
    good = {"unitPrice": 2.9384, "retailPrice": 2.9384, "term": "1 Year"}
    given = [*plans_given, good] if isinstance(plans_given, list) else plans_given
    with caplog.at_level(logging.WARNING, logger="collectors.azure"):
        result = parse_rows(observed_at, row(savingsPlan=given))
    # the on-demand price stands; a readable plan beside the bad one is kept
    assert by_offer(result)["eastus", "Standard_NC24ads_A100_v4", "on_demand", None]
    kept = {key[2]: r.price_per_hour for key, r in plans(result).items()}
    assert kept == ({12: Decimal("2.938400")} if isinstance(plans_given, list) else {})
    [message] = caplog.messages
    assert message.startswith("azure: page-1 item 0: savingsPlan")
    assert problem in message
    # its plans missing from this answer are unconfirmed, not withdrawn
    assert result.unreadable == {"Standard_NC24ads_A100_v4"}


@pytest.mark.parametrize(
    "changes",
    [
        {"savingsPlan": None},
        {"savingsPlan": []},
        {"skuName": "NC24ads A100 v4 Spot", "meterName": "NC24ads A100 v4 Spot"},
    ],
)
def test_rows_without_savings_plans(observed_at: datetime, changes: dict[str, Any]) -> None:
    """No array, an empty one, or a spot row's (savings plans cover no spot VM): no plan."""
    result = parse_rows(observed_at, row(**changes))
    assert len(result.records) == 1
    assert plans(result) == {}
    assert result.unreadable == set()


def test_trap_rows_are_not_stored(observed_at: datetime) -> None:
    result = parse(load_pages(), observed_at)
    stored = {r.price_per_hour for r in result.records} | {r.upfront_total for r in result.records}
    assert Decimal("31.613") not in stored  # Windows ND96asr_v4 (listed before the Linux row)
    assert Decimal("3.3057") not in stored  # DevTestConsumption NC24ads (listed first)
    assert Decimal("6.554") not in stored  # ND96amsr Low Priority (listed first): not spot
    types = {r.instance_type for r in result.records}
    assert "Standard_NDasrA100v4_Type1" not in types  # Dedicated host
    # the $0 row (listed first) is dropped, the real row after it kept
    assert by_offer(result)["eastus", "Standard_NC8as_T4_v3", "on_demand", None].price_per_hour == (
        Decimal("0.752")
    )
    # the Dedicated host row is dropped before the GPU table is asked about it
    assert result.unknown_instance_types == {"Standard_NC8ads_A10_v4"}
    items = sum(len(p["Items"]) for p in load_pages().values())
    # dedicated 1, windows 5, dev/test 2, $0 1, duplicate 1, low priority 2, unknown SKU 1
    assert result.skipped_rows == 13
    # every row is one price or skipped; six rows carry two savings plans each besides
    assert len(by_offer(result)) + result.skipped_rows == items == 68
    assert len(result.records) == len(by_offer(result)) + 2 * 6


def test_newer_sizes_resolve_through_the_table(observed_at: datetime) -> None:
    """tests/fixtures/azure/sizes.json: one page of the GPU sizes the table learnt last, each
    resolved to its model, GPU count (a share for the partitioned sizes) and one GPU's memory."""
    sizes = json.loads((FIXTURES / "sizes.json").read_text())
    result = parse({"page-1": sizes}, observed_at)
    assert result.unknown_instance_types == set()
    assert result.skipped_rows == 0
    offers = by_offer(result)
    assert len(offers) == len(sizes["Items"]) == 8
    facts = {
        key[1]: (r.gpu_model, r.gpu_count, r.gpu_memory_gib, r.vcpus, r.memory_gib)
        for key, r in offers.items()
    }
    assert facts == {
        "Standard_ND128isr_NDR_GB200_v6": ("GB200", 4, 192, 128, 900),
        "Standard_ND128isr_GB300_v6": ("GB300", 4, 288, 128, 864),
        "Standard_NC36lds_xl_RTXPRO6000BSE_v6": ("RTXPRO6000", 0.25, 96, 36, 72),
        "Standard_NC288ds_xl_RTXPRO6000BSE_v6": ("RTXPRO6000", 2, 96, 288, 1032),
        "Standard_NV4ads_V710_v5": ("V710", 1 / 6, 24, 4, 16),
        "Standard_NV28adms_V710_v5": ("V710", 1, 24, 28, 160),
        "Standard_NV6s_v2": ("M60", 1, 8, 6, 112),
        "Standard_NV24s_v2": ("M60", 4, 8, 24, 448),
    }
    # per GPU-hour by hand, from the page's own prices: 108.16 / 4, 1.243 / 0.25, 0.21 * 6
    gb200 = offers["westus3", "Standard_ND128isr_NDR_GB200_v6", "on_demand", None]
    assert gb200.price_per_hour == Decimal("108.16")
    assert float(gb200.price_per_hour) / gb200.gpu_count == pytest.approx(27.04)
    quarter = offers["westus2", "Standard_NC36lds_xl_RTXPRO6000BSE_v6", "on_demand", None]
    assert float(quarter.price_per_hour) / quarter.gpu_count == pytest.approx(4.972)
    sixth = offers["eastus", "Standard_NV4ads_V710_v5", "on_demand", None]
    assert float(sixth.price_per_hour) / sixth.gpu_count == pytest.approx(1.26)


def test_skips_are_logged_with_the_provider_name(
    observed_at: datetime, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="collectors.azure"):
        result = parse(load_pages(), observed_at)
    assert result.unknown_instance_types == {"Standard_NC8ads_A10_v4"}
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    # oddities only: the policy skips (Windows, dev/test, ...) are counted, not warned about
    assert warnings == [
        "azure: page-1 item 13: skipped (no price): Standard_NC8as_T4_v3 eastus Consumption "
        "'NC8as T4 v3' 0.0 '1 Hour'",
        "azure: Standard_NC8ads_A10_v4 is not in the GPU table; its prices are not stored (add "
        '[gpus.instance_types."Standard_NC8ads_A10_v4"] to config.toml to price it)',
    ]
    assert caplog.records[-1].getMessage() == (
        "azure: 67 records, 13 rows skipped (dedicated host: 1, windows: 5, dev/test price: 2, "
        "no price: 1, duplicate: 1, low priority: 2, unknown instance type: 1)"
    )


@pytest.mark.parametrize(
    ("regions", "expected"),
    [
        (("westeurope",), {"westeurope"}),
        (("eastus2", "westeurope"), {"eastus2", "westeurope"}),
        ((), {"eastus", "eastus2", "westus2", "westeurope"}),
    ],
)
def test_parse_keeps_only_the_asked_regions(
    observed_at: datetime, regions: tuple[str, ...], expected: set[str]
) -> None:
    result = parse(load_pages(), observed_at, regions=regions)
    assert {r.region for r in result.records} == expected


def test_decimal_and_float_json_give_the_same_records(observed_at: datetime) -> None:
    as_floats = parse(load_pages(), observed_at)
    as_decimals = parse(load_pages(parse_float=Decimal), observed_at)
    assert as_decimals.records == as_floats.records
    assert as_decimals.skipped_rows == as_floats.skipped_rows


def test_pages_are_read_in_page_number_order(observed_at: datetime) -> None:
    pages = load_pages()
    shuffled = {"page-2": pages["page-2"], "page-1": pages["page-1"]}
    assert parse(shuffled, observed_at).records == parse(pages, observed_at).records
    # numeric, not lexical: page-10 comes after page-9
    many = {f"page-{n}": page([row(retailPrice=float(n))]) for n in (10, 9, 2, 1)}
    [kept] = by_offer(parse(many, observed_at)).values()
    assert kept.price_per_hour == Decimal("1")


# ---------------------------------------------------------------------------------------------
# parse: single rows


def parse_rows(observed_at: datetime, *items: dict[str, Any], **settings: Any) -> ParseResult:
    return parse({"page-1": page(list(items))}, observed_at, **settings)


@pytest.mark.parametrize(
    "changes",
    [
        {"productName": "Virtual Machines NCadsA100v4 Series Windows"},
        {"skuName": "NC24ads A100 v4 Low Priority", "meterName": "NC24ads A100 v4 Low Priority"},
        {"meterName": "NC24ads A100 v4 Low Priority"},
        {"type": "DevTestConsumption"},
        {"type": "SavingsPlanConsumption"},
        {"productName": "Virtual Machines NCadsA100v4 Series Dedicated Host"},
        {"armSkuName": ""},
        {"armRegionName": ""},
        {"unitOfMeasure": "1/Month"},
        {"retailPrice": 0},
        {"retailPrice": 0.0},
        {"retailPrice": -1.5},
        {"retailPrice": "3.673"},
        {"retailPrice": None},
        {"type": "Reservation", "reservationTerm": "5 Years", "retailPrice": 40000.0},
        {"type": "Reservation", "retailPrice": 20000.0},  # no reservationTerm at all
    ],
)
def test_rows_never_stored(observed_at: datetime, changes: dict[str, Any]) -> None:
    assert parse_rows(observed_at, row()).records  # the base row itself is stored
    result = parse_rows(observed_at, row(**changes))
    assert result.records == []
    assert result.skipped_rows == 1
    assert result.unknown_instance_types == set()


@pytest.mark.parametrize(
    "changes",
    [
        {"skuName": "NC24ads A100 v4 Spot", "meterName": "NC24ads A100 v4 Spot"},
        {"meterName": "NC24ads A100 v4 Spot"},
        {"skuName": "NC24ads A100 v4 Spot"},
    ],
)
def test_spot_is_the_name_suffix(observed_at: datetime, changes: dict[str, Any]) -> None:
    [record] = parse_rows(observed_at, row(**changes)).records
    assert (record.price_kind, record.term_months) == ("spot", None)


def test_currency_is_the_rows_own(observed_at: datetime) -> None:
    result = parse_rows(observed_at, row(currencyCode="EUR", retailPrice=3.4071))
    [record] = by_offer(result).values()
    assert (record.currency, record.price_per_hour) == ("EUR", Decimal("3.4071"))
    assert {r.currency for r in result.records} == {"EUR"}  # its savings plans too


def test_reservation_and_consumption_rows_sharing_a_meter_id(observed_at: datetime) -> None:
    on_demand = row()
    reserved = row(type="Reservation", reservationTerm="1 Year", retailPrice=20288.0)
    del reserved["savingsPlan"]
    offers = by_offer(parse_rows(observed_at, on_demand, reserved))
    assert offers["eastus", "Standard_NC24ads_A100_v4", "on_demand", None].price_per_hour == (
        Decimal("3.673")
    )
    reservation = offers["eastus", "Standard_NC24ads_A100_v4", "reserved", 12]
    assert reservation.price_per_hour == Decimal("2.315982")  # 20288 / 8760
    assert reservation.upfront_total == Decimal("20288")


def test_exact_duplicate_is_skipped_quietly(
    observed_at: datetime, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="collectors.azure"):
        result = parse_rows(observed_at, row(), copy.deepcopy(row()))
    assert len(result.records) == 1 + 2  # on-demand and its two savings plans, once
    assert result.skipped_rows == 1
    assert caplog.messages == []


@pytest.mark.parametrize(("first", "second"), [(3.673, 3.5), (3.5, 3.673)])
def test_two_prices_for_one_offer_keep_the_first(
    observed_at: datetime, caplog: pytest.LogCaptureFixture, first: float, second: float
) -> None:
    rows = (row(retailPrice=first), row(retailPrice=second, meterId="another-meter"))
    with caplog.at_level(logging.WARNING, logger="collectors.azure"):
        result = parse_rows(observed_at, *rows)
    [record] = by_offer(result).values()
    assert record.price_per_hour == Decimal(str(first))  # first seen, not the lower one
    assert result.skipped_rows == 1
    [message] = caplog.messages
    assert message.startswith("azure: page-1 item 1: second price")


@pytest.mark.parametrize(
    ("payloads", "message"),
    [
        ({"page-1": {"error": "gone"}}, "page-1: answer has no Items list"),
        ({"page-1": page([]), "page-2": {"Items": None}}, "page-2: answer has no Items list"),
        ({"page-1": page(["not an object"])}, "page-1 item 0 is not an object"),
        ({"page-1": page([{"retailPrice": 1.0}])}, "page-1 item 0 lacks armRegionName"),
        ({"page-1": page([row(armSkuName=None)])}, "page-1 item 0: armSkuName not a string"),
        ({"eastus": page([row()])}, "unexpected payload key 'eastus'"),
    ],
)
def test_changed_shape_fails_loudly(
    observed_at: datetime, payloads: dict[str, Any], message: str
) -> None:
    with pytest.raises(PayloadShapeError, match=r"^azure: ") as caught:
        parse(payloads, observed_at)
    assert message in str(caught.value)


# ---------------------------------------------------------------------------------------------
# fetch through `responses`


@pytest.fixture
def rsps() -> Iterator[responses.RequestsMock]:
    with responses.RequestsMock(assert_all_requests_are_fired=True) as mock:
        yield mock


def first_page_params(filter_: str = SERIES_FILTER) -> Any:
    """Exactly these query parameters, nothing more (no $skip on the first page)."""
    return matchers.query_param_matcher({"api-version": "2023-01-01-preview", "$filter": filter_})


def next_link(n: int = 1000, base: str = UPSTREAM) -> str:
    return (
        f"{base}/api/retail/prices?api-version=2023-01-01-preview"
        f"&$filter=serviceName%20eq%20%27Virtual%20Machines%27&$skip={n}"
    )


def test_fetch_sends_the_filter_and_follows_next_page_link(
    rsps: responses.RequestsMock,
) -> None:
    pages = load_pages()
    rsps.get(ENDPOINT, json=pages["page-1"], match=[first_page_params()])
    link = pages["page-1"]["NextPageLink"]
    rsps.get(link, json=pages["page-2"])
    progress: list[tuple[int, int]] = []

    got = AzureCollector(ProviderSettings(), progress=lambda *a: progress.append(a)).fetch()

    assert got == pages
    assert [c.request.url for c in rsps.calls][1] == link  # followed as given, ":443" and all
    assert progress == [(1, 32), (2, 68)]  # 31 + 35 recorded rows, one trap row on each page
    assert rsps.calls[0].request.headers["User-Agent"].startswith("gpu-price-tracker/")


def test_fetch_asks_only_the_configured_regions(rsps: responses.RequestsMock) -> None:
    regional = SERIES_FILTER + " and (armRegionName eq 'eastus' or armRegionName eq 'westus2')"
    rsps.get(ENDPOINT, json=page([row()]), match=[first_page_params(regional)])
    got = collector(regions=("eastus", "westus2")).fetch()
    assert list(got) == ["page-1"]


def test_fetch_asks_for_the_skus_a_users_entry_names(rsps: responses.RequestsMock) -> None:
    entry = gpus.TypeOverride
    entries = {
        "Standard_NX24ads_B9_v9": entry(provider="azure"),  # a size outside the series (made up)
        "Standard_NP10s": entry(),  # no provider: named as Azure names sizes
        "Standard_ND40rs_v2": entry(),  # in a GPU series: asked already
        "p4d.24xlarge": entry(),  # another provider's name
        "Standard_D4s_v5": entry(provider="aws"),  # another provider's entry
    }
    asked = SERIES_FILTER.replace(
        "contains(armSkuName, 'Standard_NV'))",
        "contains(armSkuName, 'Standard_NV') or armSkuName eq 'Standard_NP10s'"
        " or armSkuName eq 'Standard_NX24ads_B9_v9')",
    )
    rsps.get(ENDPOINT, json=page([]), match=[first_page_params(asked)])
    got = collector(gpus=gpus.Overrides(instance_types=entries)).fetch()
    assert list(got) == ["page-1"]


def test_fetch_uses_the_configured_endpoint(rsps: responses.RequestsMock) -> None:
    mirror = "http://mirror.internal:8080/azure/prices"
    rsps.get(mirror, json=page([]), match=[first_page_params()])
    assert collector(endpoint=mirror).fetch() == {"page-1": page([])}


def test_fetch_follows_several_pages_until_the_link_is_null(
    rsps: responses.RequestsMock,
) -> None:
    rsps.get(ENDPOINT, json=page([row()], next_link(1000)), match=[first_page_params()])
    rsps.get(next_link(1000), json=page([row(), row()], next_link(2000)))
    rsps.get(next_link(2000), json=page([row()]))
    progress: list[tuple[int, int]] = []
    got = AzureCollector(ProviderSettings(), progress=lambda *a: progress.append(a)).fetch()
    assert list(got) == ["page-1", "page-2", "page-3"]
    assert progress == [(1, 1), (2, 3), (3, 4)]


@pytest.mark.parametrize(
    ("status", "headers"), [(429, {"Retry-After": "0"}), (503, {}), (500, {}), (502, {})]
)
def test_fetch_retries_then_succeeds(
    rsps: responses.RequestsMock, status: int, headers: dict[str, str]
) -> None:
    rsps.get(ENDPOINT, status=status, headers=headers, json={"error": {"code": "x"}})
    rsps.get(ENDPOINT, json=page([row()]))
    assert collector(max_retries=2).fetch() == {"page-1": page([row()])}
    assert len(rsps.calls) == 2


def test_fetch_fails_naming_the_page_that_keeps_failing(rsps: responses.RequestsMock) -> None:
    rsps.get(ENDPOINT, json=page([row()], next_link()))
    rsps.get(next_link(), status=503, body="upstream unavailable")
    with pytest.raises(FetchError, match=r"^azure: page 2: HTTP 503: upstream unavailable"):
        collector(max_retries=2).fetch()
    assert len(rsps.calls) == 1 + 3  # page 1, then page 2 tried once and retried twice


def test_fetch_fails_when_429_persists(rsps: responses.RequestsMock) -> None:
    rsps.get(ENDPOINT, status=429, headers={"Retry-After": "0"}, body="Too Many Requests")
    with pytest.raises(FetchError, match=r"^azure: page 1: HTTP 429"):
        collector(max_retries=1).fetch()


@pytest.mark.parametrize(
    "error", [requests.exceptions.ReadTimeout("read timed out"), requests.ConnectionError("reset")]
)
def test_fetch_network_errors_become_fetch_error(
    rsps: responses.RequestsMock, error: Exception
) -> None:
    rsps.get(ENDPOINT, body=error)
    with pytest.raises(FetchError, match=rf"^azure: page 1: {type(error).__name__}"):
        collector().fetch()


def test_fetch_non_json_answer(rsps: responses.RequestsMock) -> None:
    rsps.get(ENDPOINT, json=page([row()], next_link()))
    rsps.get(next_link(), body="<html>Service Unavailable</html>", content_type="text/html")
    with pytest.raises(FetchError, match=r"^azure: page 2: answer is not JSON"):
        collector().fetch()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"error": {"code": "InvalidFilter"}}, "page 1: answer has no Items list"),
        ([], "page 1: answer has no Items list"),
        (page([], next_link=""), "page 1: NextPageLink is ''"),
        ({**page([]), "NextPageLink": 7}, "page 1: NextPageLink is 7"),
    ],
)
def test_fetch_changed_shape(rsps: responses.RequestsMock, body: Any, message: str) -> None:
    rsps.get(ENDPOINT, json=body)
    with pytest.raises(PayloadShapeError, match=r"^azure: ") as caught:
        collector().fetch()
    assert message in str(caught.value)


def test_fetch_gives_up_on_a_link_that_never_ends(
    rsps: responses.RequestsMock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(azure, "PAGES", dataclasses.replace(azure.PAGES, most=3))
    rsps.get(ENDPOINT, json=page([row()], next_link()))
    rsps.get(next_link(), json=page([row()], next_link()))  # links to itself
    with pytest.raises(PayloadShapeError, match="more than 3 pages"):
        collector().fetch()
    assert len(rsps.calls) == 3  # the cap stops the walk, not the link's end


# ---------------------------------------------------------------------------------------------
# fetch through the real urllib3 stack (loopback replay server)


@pytest.fixture
def serve(serve: Callable[..., ReplayServer]) -> Callable[..., ReplayServer]:
    """The shared server, Azure's own host in the links it answers rewritten to it."""
    return functools.partial(serve, rewrite=[UPSTREAM])


def answer(skip: str | None, body: Any = None, *, status: int = 200, **kwargs: Any) -> Exchange:
    text = json.dumps(body) if body is not None else "busy"
    return Exchange(
        match={"method": "GET", "path": "/api/retail/prices", "query": {"$skip": skip}},
        status=status,
        body=text.encode(),
        **kwargs,
    )


def at(server: ReplayServer, **settings: Any) -> AzureCollector:
    return collector(endpoint=server.url + "/api/retail/prices", **settings)


def test_replay_retry_after_is_honoured(
    serve: Callable[..., ReplayServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = serve(
        answer(None, status=429, headers={"Retry-After": "1"}, times=1),
        answer(None, page([row()])),
    )
    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)  # the wait asked for, not waited
    got = at(server, max_retries=2).fetch()
    assert slept == [1]  # urllib3 slept as asked
    assert got == {"page-1": page([row()])}
    assert len(server.requests) == 2


def test_replay_5xx_then_success_on_page_2(serve: Callable[..., ReplayServer]) -> None:
    server = serve(
        answer(None, page([row()], next_link())),
        answer("1000", status=503, times=1),
        answer("1000", page([row(retailPrice=3.5)])),
    )
    got = at(server, max_retries=2).fetch()
    assert [p["Items"][0]["retailPrice"] for p in got.values()] == [3.673, 3.5]
    assert [r.query.get("$skip") for r in server.requests] == [None, "1000", "1000"]
    assert server.unmatched == []


def test_replay_page_that_keeps_failing(serve: Callable[..., ReplayServer]) -> None:
    server = serve(answer(None, page([row()], next_link())), answer("1000", status=500))
    with pytest.raises(FetchError, match=r"^azure: page 2: HTTP 500: busy"):
        at(server, max_retries=1).fetch()
    assert len(server.requests) == 1 + 2


def test_replay_fixture_fetch_then_parse(
    replay: Callable[..., ReplayServer], observed_at: datetime
) -> None:
    server = replay(DEMO)
    azure_collector = at(server)
    payloads = azure_collector.fetch()
    assert server.unmatched == []
    assert [r.query.get("$skip") for r in server.requests] == [None, "1000"]
    assert payloads["page-1"]["NextPageLink"].startswith(server.url + "/api/retail/prices?")
    fetched = azure_collector.parse(payloads, observed_at=observed_at)
    assert fetched.records == parse(recorded_pages(), observed_at).records
    assert len(fetched.records) == 67


def test_table_facts_are_marked_as_the_tables(observed_at: datetime) -> None:
    result = parse(load_pages(), observed_at)
    assert result.facts == dict.fromkeys({r.instance_type for r in result.records}, "table")


def test_a_sku_only_a_users_entry_knows_is_priced(observed_at: datetime) -> None:
    entry = gpus.TypeOverride("azure", "A10", 1, 24)
    result = parse(load_pages(), observed_at, gpus=gpus.Overrides(instance_types={NC8_A10: entry}))
    nc8 = [r for r in result.records if r.instance_type == NC8_A10]
    assert nc8 == [
        PriceRecord(
            provider="azure",
            region="eastus",
            zone=None,
            instance_type=NC8_A10,
            price_kind="on_demand",
            term_months=None,
            payment_option=None,
            offering_class=None,
            currency="USD",
            price_per_hour=Decimal("0.930000"),  # retailPrice as given
            upfront_total=None,
            gpu_model="A10",
            gpu_count=1,
            gpu_memory_gib=24,
        )
    ]
    assert result.facts[NC8_A10] == "config"
    assert result.unknown_instance_types == set()


# ---------------------------------------------------------------------------------------------
# the user's [gpus] entry, through `gpu-tracker collect` against the loopback server

NC8 = f"""
[gpus.instance_types."{NC8_A10}"]
gpu_model = "A10"
gpu_count = 1
gpu_memory_gib = 24
"""


def collect(replay: Callable[..., ReplayServer], tmp_path: Path, gpus_toml: str) -> Result:
    """`gpu-tracker collect --provider azure` over the recording with the trap rows laid in."""
    folder = tmp_path / "recording"
    folder.mkdir()
    for name in ("exchanges.json", "demo.json", BANDWIDTH):
        (folder / name).write_text((DEMO / name).read_text())
    for key, body in load_pages().items():
        (folder / key.replace("-", "")).with_suffix(".json").write_text(json.dumps(body))
    server = replay(folder)
    config = tmp_path / "config.toml"
    config.write_text(
        f'[storage]\npath = "{tmp_path / "prices.duckdb"}"\n'
        f'[providers.azure]\nendpoint = "{server.url}/api/retail/prices"\n' + gpus_toml
    )
    return CliRunner().invoke(cli, ["--config", str(config), "collect", "--provider", "azure"])


def stored(tmp_path: Path, query: str) -> Any:
    result = CliRunner().invoke(
        cli, ["--db", str(tmp_path / "prices.duckdb"), "sql", query, "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


NC8_ROWS = (
    "SELECT region, price_kind, price_per_hour, gpu_model, gpu_count, gpu_memory_gib"
    f" FROM latest_prices WHERE instance_type = '{NC8_A10}'"
)


def test_collect_prices_a_sku_the_users_entry_knows(
    replay: Callable[..., ReplayServer], tmp_path: Path
) -> None:
    result = collect(replay, tmp_path, NC8)
    assert result.exit_code == 0, result.output
    assert stored(tmp_path, NC8_ROWS) == [
        {
            "region": "eastus",
            "price_kind": "on_demand",
            "price_per_hour": 0.93,
            "gpu_model": "A10",
            "gpu_count": 1.0,
            "gpu_memory_gib": 24.0,
        }
    ]
    said = " ".join(result.output.split())
    assert "unknown GPU instance types" not in said
    assert "GPU types: 15 priced, 0 from API facts" in said  # the 14 of the recording and it


def test_collect_without_the_entry_reports_the_sku_and_how_to_add_it(
    replay: Callable[..., ReplayServer], tmp_path: Path
) -> None:
    result = collect(replay, tmp_path, "")
    assert result.exit_code == 0, result.output
    assert stored(tmp_path, NC8_ROWS) == []  # no GPU count: nothing to store
    said = " ".join(result.output.split())
    assert f"unknown GPU instance types, not stored: {NC8_A10}" in said
    assert "see gpu-tracker gpus --unknown" in said
    assert "GPU types: 14 priced, 0 from API facts" in said


def test_collect_asks_for_a_sku_outside_the_series_a_users_entry_names(
    replay: Callable[..., ReplayServer], tmp_path: Path
) -> None:
    """From config.toml to the request: the entry's SKU is in the `$filter` sent."""
    server = replay(DEMO)
    config = tmp_path / "config.toml"
    config.write_text(
        f'[storage]\npath = "{tmp_path / "prices.duckdb"}"\n'
        f'[providers.azure]\nendpoint = "{server.url}/api/retail/prices"\n'
        '[gpus.instance_types."Standard_NX24ads_B9_v9"]\n'  # a made-up size outside the series
        'provider = "azure"\ngpu_model = "A10"\ngpu_count = 1\ngpu_memory_gib = 24\n'
    )
    result = CliRunner().invoke(cli, ["--config", str(config), "collect", "--provider", "azure"])
    assert result.exit_code == 0, result.output
    assert server.requests[0].query["$filter"] == SERIES_FILTER.replace(
        "'Standard_NV'))", "'Standard_NV') or armSkuName eq 'Standard_NX24ads_B9_v9')"
    )


def test_demo_recording_replays_cleanly(
    replay: Callable[..., ReplayServer], observed_at: datetime
) -> None:
    server = replay(DEMO)
    demo = at(server, regions=("eastus", "westus2", "westeurope"))
    result = demo.parse(demo.fetch(), observed_at=observed_at)
    assert server.unmatched == []
    assert len(server.requests) == 2
    assert result.unknown_instance_types == set()
    assert {r.region for r in result.records} == {"eastus", "westus2", "westeurope"}
    assert {(r.price_kind, r.term_months) for r in result.records} == {
        ("on_demand", None),
        ("spot", None),
        ("reserved", 12),
        ("reserved", 36),
    }
    assert {r.gpu_model for r in result.records} == {
        "T4",
        "A100",
        "H100",
        "H200",
        "A10",
        "V100",
        "V620",
    }
    # the whole recording less eastus2's ND96amsr A100 v4: on-demand, spot, two savings plans
    assert len(result.records) == len(parse(recorded_pages(), observed_at).records) - 4
    eastus = by_offer(result)
    assert eastus["eastus", "Standard_ND96isr_H100_v5", "reserved", 12].price_per_hour == (
        Decimal("62.924772")
    )
    assert eastus["eastus", "Standard_NC24ads_A100_v4", "spot", None].price_per_hour == (
        Decimal("0.444433")
    )
