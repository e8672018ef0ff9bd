"""AWS answers to price records: the pure parts of the Price List and spot history parsing.

A Price List product is JSON inside a string, with its on-demand and reserved terms as nested
price dimensions; a spot history item is one price change in one zone. Nothing here does I/O:
`collectors.aws` fetches, and these turn what it fetched into offers and records.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from collectors import kit
from collectors.base import PriceRecord, effective_hourly, money
from collectors.common import OFFERING_CLASSES, PayloadShapeError
from collectors.gpus import InstanceGpu
from collectors.kit import Host, Offer  # Host: the price list has it, spot answers do not

log = logging.getLogger("collectors.aws")

# Plain Linux, shared tenancy, no pre-installed software, ordinary capacity, on-demand market.
# Without marketoption a $0.00 Capacity Block p5 product comes back; without capacitystatus,
# $0 or duplicate capacity-reservation rows. The parser checks them again on every product:
# a stored payload may come from a looser query, and some products lack the last two.
PRODUCT_FILTERS = {
    "operatingSystem": "Linux",
    "tenancy": "Shared",
    "preInstalledSw": "NA",
    "capacitystatus": "Used",
    "licenseModel": "No License required",
    "marketoption": "OnDemand",
}
OPTIONAL_ATTRIBUTES = frozenset({"licenseModel", "marketoption"})
CAPACITY_BLOCK_OPERATION = "RunInstances:CB"

LEASE_MONTHS = {"1yr": 12, "3yr": 36}
PURCHASE_OPTIONS = {
    "No Upfront": "no_upfront",
    "Partial Upfront": "partial_upfront",
    "All Upfront": "all_upfront",
}


@dataclass(frozen=True)
class Place:
    """Where an offer is sold and what it is: one instance type in one region (or zone)."""

    region: str
    zone: str | None
    instance_type: str
    gpu: InstanceGpu
    vcpus: float | None
    memory_gib: float | None


def record(place: Place, offer: Offer) -> PriceRecord:
    return kit.record(
        "aws",
        place.region,
        place.instance_type,
        place.gpu,
        offer,
        zone=place.zone,
        host=(place.vcpus, place.memory_gib),
    )


def require(page: Any, field: str, key: str) -> list[Any]:
    items = page.get(field) if isinstance(page, dict) else None
    if not isinstance(items, list):
        raise PayloadShapeError("aws", f"{key}: the answer has no {field} list")
    return items


def price_list(key: str, page: Any) -> Iterator[dict[str, Any] | None]:
    """The products of a page; None for an item that is not one (logged): one such item is
    skipped, a page of nothing else is an answer of another shape."""
    # PriceList items are JSON documents inside strings, one product each.
    items = require(page, "PriceList", key)
    bad = 0
    for item in items:
        product = _product(item)
        if product is None:
            bad += 1
            log.warning("aws: %s: a PriceList item is not a JSON object; skipped", key)
        yield product
    if items and bad == len(items):
        raise PayloadShapeError("aws", f"{key}: no PriceList item is a JSON object")


def _product(item: Any) -> dict[str, Any] | None:
    if not isinstance(item, str):
        return None
    try:
        product = json.loads(item)
    except (ValueError, RecursionError):
        return None
    return product if isinstance(product, dict) else None


def is_plain_linux_box(attrs: dict[str, Any]) -> bool:
    # The free-tier pseudo product (location "Any", regionCode "") has no instanceType.
    if not attrs.get("instanceType") or not isinstance(attrs["instanceType"], str):
        return False
    for name, want in PRODUCT_FILTERS.items():
        have = attrs.get(name)
        if have != want and not (have is None and name in OPTIONAL_ATTRIBUTES):
            return False
    # Capacity Blocks are $0.00 placeholders; Dedicated/UnusedBox usage types are other offers.
    if attrs.get("operation") == CAPACITY_BLOCK_OPERATION:
        return False
    return "BoxUsage" in str(attrs.get("usagetype", ""))


def host_size(attrs: dict[str, Any]) -> Host:
    # vcpu is "96", memory "1152 GiB"; both may be "NA".
    vcpus, memory = str(attrs.get("vcpu", "")), str(attrs.get("memory", "")).removesuffix(" GiB")
    return kit.size(vcpus.replace(",", ""), kit.TEXT), kit.size(memory.replace(",", ""), kit.TEXT)


def on_demand_offer(term: Any) -> Offer | None:
    hourly = _dimensions(term).get("Hrs")
    return None if hourly is None else Offer("on_demand", hourly[0], money(hourly[1]))


def reserved_offer(term: Any) -> Offer | None:
    attrs = kit.obj(kit.obj(term).get("termAttributes"))
    months = LEASE_MONTHS.get(str(attrs.get("LeaseContractLength")))
    payment = PURCHASE_OPTIONS.get(str(attrs.get("PurchaseOption")))
    offering = attrs.get("OfferingClass")
    dims = _dimensions(term)
    if months is None or payment is None or offering not in OFFERING_CLASSES or "Hrs" not in dims:
        return None
    currency, recurring = dims["Hrs"]
    # The one-off fee is a separate "Quantity" dimension for the whole term; No Upfront
    # terms have none.
    fee_currency, upfront = dims.get("Quantity", (currency, Decimal(0)))
    if fee_currency != currency:
        return None
    hourly = effective_hourly(recurring, upfront, months)
    return Offer("reserved", currency, hourly, months, payment, offering, money(upfront))


def _dimensions(term: Any) -> dict[str, tuple[str, Decimal]]:
    """unit -> (currency, amount) of a term's price dimensions; {} when not understood."""
    found: dict[str, tuple[str, Decimal]] = {}
    for dim in kit.obj(kit.obj(term).get("priceDimensions")).values():
        prices, unit = kit.obj(kit.obj(dim).get("pricePerUnit")), kit.obj(dim).get("unit")
        amount = kit.exact(next(iter(prices.values()), None), kit.TEXT)
        if len(prices) != 1 or amount is None or not isinstance(unit, str) or unit in found:
            return {}
        found[unit] = next(iter(prices)), amount
    return found


def spot_offer(region: str, item: dict[str, Any]) -> Offer | None:
    price = kit.exact(item.get("SpotPrice"), kit.TEXT)
    # Each item is a price change: its Timestamp is when this price took effect.
    stamp = kit.utc_timestamp(item.get("Timestamp"))
    if price is None or stamp is None:
        return None
    # Spot answers carry no currency: AWS bills China regions in CNY and the rest in USD.
    currency = "CNY" if region.startswith("cn-") else "USD"
    return Offer("spot", currency, money(price), effective_at=stamp)
