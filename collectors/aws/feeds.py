"""AWS's public files to offers: the pure parts of reading the offer CSV, the spot feed and the
Spot Advisor.

An offer file's CSV has one row per price dimension (a term's hourly rate, or its upfront fee)
with the product's attributes repeated on every row. `products` groups the rows back into the
Price List API's product shape (attributes under the API's own names, terms with their price
dimensions), so the API path's filters and the one reserved-price formula in `terms` decide
both sources alike. The spot feed gives one Linux price per region and instance type; the
Advisor one interruption band and saving per region and instance type.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import datetime
from decimal import Decimal
from typing import Any

from collectors import kit
from collectors.base import InterruptionBand, money
from collectors.common import PayloadShapeError
from collectors.kit import Offer

# CSV column -> the Price List API's attribute name (what `terms` reads).
ATTRIBUTES = {
    "Instance Type": "instanceType",
    "Region Code": "regionCode",
    "Instance Family": "instanceFamily",
    "Operating System": "operatingSystem",
    "Tenancy": "tenancy",
    "Pre Installed S/W": "preInstalledSw",
    "CapacityStatus": "capacitystatus",
    "License Model": "licenseModel",
    "MarketOption": "marketoption",
    "operation": "operation",
    "usageType": "usagetype",
    "vCPU": "vcpu",
    "Memory": "memory",
    "GPU": "gpu",
    "GPU Memory": "gpuMemory",
}
# CSV column -> the term's attribute name in the API's `termAttributes`.
TERM_ATTRIBUTES = {
    "LeaseContractLength": "LeaseContractLength",
    "PurchaseOption": "PurchaseOption",
    "OfferingClass": "OfferingClass",
}
PRICE_COLUMNS = ("SKU", "OfferTermCode", "RateCode", "TermType", "Unit", "PricePerUnit", "Currency")
# Every column a collection keeps of a region's file: the rest is never copied.
COLUMNS = (*PRICE_COLUMNS, *TERM_ATTRIBUTES, *ATTRIBUTES)
TERM_TYPES = ("OnDemand", "Reserved")

# spot.js names some regions in an older spelling of its own.
SPOT_REGION_ALIASES = {
    "us-east": "us-east-1",
    "us-west": "us-west-1",
    "eu-ireland": "eu-west-1",
    "apac-sin": "ap-southeast-1",
    "apac-syd": "ap-southeast-2",
    "apac-tokyo": "ap-northeast-1",
}
SPOT_OS = "linux"
ADVISOR_OS = "Linux"
_CALLBACK = re.compile(r"^\s*[A-Za-z_$][\w$]*\s*\((.*)\)\s*;?\s*$", re.DOTALL)
_BAND = re.compile(r"^\s*(?:<\s*(\d+)|(\d+)\s*-\s*(\d+)|>\s*(\d+))\s*%\s*$")
_PERCENT = Decimal(100)


def might_be_gpu(row: list[str], family: int, gpu: int) -> bool:
    """The cheap first test of a raw CSV row: a GPU instance family or a GPU count. Every
    other row of a region's file (storage, transfer, CPU instances: about 99 %) stops here."""
    return row[family] == "GPU instance" or row[gpu] not in ("", "0", "NA")


def products(columns: list[str], rows: list[list[str]]) -> Iterator[dict[str, Any]]:
    """The kept rows of an offer file as Price List products (one per SKU, in file order)."""
    at = {name: columns.index(name) for name in COLUMNS if name in columns}
    missing = [name for name in PRICE_COLUMNS if name not in at]
    if missing:
        raise PayloadShapeError("aws", f"offer file: no {', '.join(missing)} column")
    found: dict[str, dict[str, Any]] = {}
    for row in rows:
        # Rows kept from a CSV hold strings; an archived answer edited by hand may not.
        if not isinstance(row, list) or len(row) != len(columns) or not _all_text(row):
            continue
        sku = row[at["SKU"]]
        product = found.get(sku)
        if product is None:
            # An empty cell is an attribute the product does not have (the API leaves it out).
            attrs = {a: row[at[c]] for c, a in ATTRIBUTES.items() if c in at and row[at[c]]}
            product = found[sku] = {"product": {"sku": sku, "attributes": attrs}, "terms": {}}
        _add_dimension(product["terms"], row, at)
    yield from found.values()


def _add_dimension(terms: dict[str, Any], row: list[str], at: dict[str, int]) -> None:
    kind = row[at["TermType"]]
    if kind not in TERM_TYPES:
        return
    code = f"{row[at['SKU']]}.{row[at['OfferTermCode']]}"
    term = terms.setdefault(kind, {}).setdefault(code, {"priceDimensions": {}})
    term["termAttributes"] = {
        a: row[at[c]] for c, a in TERM_ATTRIBUTES.items() if c in at and row[at[c]]
    }
    term["priceDimensions"][row[at["RateCode"]]] = {
        "unit": row[at["Unit"]],
        "pricePerUnit": {row[at["Currency"]]: row[at["PricePerUnit"]]},
    }


def _all_text(row: list[Any]) -> bool:
    return all(isinstance(cell, str) for cell in row)


def unwrap_callback(text: str) -> Any:
    """The JSON inside spot.js's `callback({...});` wrapper (plain JSON passes as it is)."""
    match = _CALLBACK.match(text)
    try:
        return json.loads(match.group(1) if match else text)
    except (ValueError, RecursionError) as exc:
        raise PayloadShapeError("aws", "spot feed: not a JSONP callback around JSON") from exc


def spot_prices(feed: Any) -> Iterator[tuple[str, str, Offer | None]]:
    """(region code, instance type, Linux spot offer or None when not understood) per entry;
    a type the feed marks not sold as spot in a region ("N/A*") is left out."""
    regions = kit.obj(kit.obj(feed).get("config")).get("regions")
    if not isinstance(regions, list):
        raise PayloadShapeError("aws", "spot feed: no config.regions list")
    for entry in regions:
        name = str(kit.obj(entry).get("region", ""))
        region = SPOT_REGION_ALIASES.get(name, name)
        for family in _list(kit.obj(entry).get("instanceTypes")):
            for size in _list(kit.obj(family).get("sizes")):
                instance_type = kit.obj(size).get("size")
                price = _linux_price(kit.obj(size))
                if isinstance(instance_type, str) and not _not_sold(price):
                    yield region, instance_type, _offer(price)


def _linux_price(size: dict[str, Any]) -> dict[str, Any]:
    for column in _list(size.get("valueColumns")):
        if kit.obj(column).get("name") == SPOT_OS:
            return kit.obj(kit.obj(column).get("prices"))
    return {}


def _not_sold(prices: dict[str, Any]) -> bool:
    return not prices or any(isinstance(v, str) and v.startswith("N/A") for v in prices.values())


def _offer(prices: dict[str, Any]) -> Offer | None:
    if len(prices) != 1:
        return None
    currency, value = next(iter(prices.items()))
    amount = kit.exact(value, kit.TEXT)
    return Offer("spot", currency, money(amount)) if amount is not None else None


def advisor_bands(data: Any, regions: frozenset[str], as_of: datetime) -> list[InterruptionBand]:
    """The Advisor's Linux bands of `regions`: `ranges` names each band, `spot_advisor` gives
    per region and type the band's index (`r`) and the saving (`s`)."""
    ranges = kit.obj(data).get("ranges")
    advice = kit.obj(data).get("spot_advisor")
    if not isinstance(ranges, list) or not isinstance(advice, dict):
        raise PayloadShapeError("aws", "Spot Advisor: no ranges list or spot_advisor map")
    # Keyed by the index as text: an index of another type must not stop the read.
    labels = {str(kit.obj(r).get("index")): kit.obj(r).get("label") for r in ranges}
    bands = []
    for region in sorted(regions & advice.keys()):
        for instance_type, entry in kit.obj(kit.obj(advice[region]).get(ADVISOR_OS)).items():
            band = _band(labels.get(str(kit.obj(entry).get("r"))), kit.obj(entry).get("s"))
            if band is not None:
                bands.append(InterruptionBand("aws", region, instance_type, *band, as_of))
    return bands


def _band(label: Any, savings: Any) -> tuple[str, Decimal, Decimal, int] | None:
    match = _BAND.match(label) if isinstance(label, str) else None
    if match is None or isinstance(savings, bool) or not isinstance(savings, int):
        return None
    below, low, high, above = match.groups()
    if below is not None:
        bounds = (Decimal(0), Decimal(below))
    elif above is not None:
        bounds = (Decimal(above), _PERCENT)  # "more than 20 %": up to every hour
    else:
        bounds = (Decimal(low), Decimal(high))
    return label.strip(), bounds[0] / _PERCENT, bounds[1] / _PERCENT, savings


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
