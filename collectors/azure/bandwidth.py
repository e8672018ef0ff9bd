"""Azure data transfer prices: the Retail Prices rows of `serviceName 'Bandwidth'`, asked apart
from the VM rows (docs/sql.md, `transfer_prices`; docs/providers.md, Azure).

Each row is one tier of one meter, priced per GB (a GiB as Azure bills it) from its
`tierMinimumUnits`; a tier ends where the meter's next one starts. Kept, per region:

- `... Data Transfer Out` meters: out to the internet (`out_internet`), over Microsoft's
  network (the default routing) where the answer has it; the cheaper "Routing Preference:
  Internet" product is a choice made per IP address, used only where it is the only one;
- the `Bandwidth Inter-Region` product (`Intra Continent ...` and `Inter Continent ...` meters):
  to another Azure region (`out_region`), the dearest meter's tier, so that a move is never
  priced too low.

Rows of legacy billing zones ("Zone 1") or of no region are not a region's: skipped. A failed
bandwidth query costs the run nothing but its transfer prices (the stored ones stay).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

from collectors import kit
from collectors.base import Payloads, TransferRate

FILTER = "serviceName eq 'Bandwidth'"
PREFIX = "bandwidth-"  # the payload keys of its pages: bandwidth-page-1, ...
_REGION = re.compile(r"[a-z][a-z0-9]{2,40}")
_NOT_REGIONS = frozenset({"global", "unknown"})
Meter = tuple[str, str, str, str, str]  # region, direction, product, meter, currency
_INTERNET_ROUTING = "routing preference: internet"


def fetch(walk: Callable[[dict[str, str]], Iterator[tuple[int, Any]]], version: str) -> Payloads:
    """Every page of the Bandwidth rows, keyed `bandwidth-page-<n>` (`walk` follows the pages
    of one query, as the VM rows' are followed)."""
    pages = walk({"api-version": version, "$filter": FILTER})
    return {f"{PREFIX}page-{number}": page for number, page in pages}


def split(payloads: Payloads) -> tuple[Payloads, Payloads]:
    """The VM rows' pages and the Bandwidth pages, apart."""
    bandwidth = {k: v for k, v in payloads.items() if str(k).startswith(PREFIX)}
    return {k: v for k, v in payloads.items() if k not in bandwidth}, bandwidth


def rates(pages: Payloads, regions: tuple[str, ...]) -> list[TransferRate] | None:
    """The tiers of every asked region (all with none asked); None when no Bandwidth page was
    fetched."""
    if not pages:
        return None
    asked = frozenset(regions)
    meters: dict[Meter, dict[Decimal, Decimal]] = {}
    for page in pages.values():
        items = kit.obj(page).get("Items")
        for item in items if isinstance(items, list) else ():
            row = _row(kit.obj(item), asked)
            if row is not None:
                key, start, price = row
                meters.setdefault(key, {})[start] = price
    return _tiers(meters)


def _row(item: dict[str, Any], asked: frozenset[str]) -> tuple[Meter, Decimal, Decimal] | None:
    text = {f: item.get(f) for f in ("armRegionName", "meterName", "productName", "currencyCode")}
    if not all(isinstance(v, str) for v in text.values()):
        return None
    region, meter, product, currency = (str(v) for v in text.values())
    if not _REGION.fullmatch(region) or region in _NOT_REGIONS or (asked and region not in asked):
        return None
    if item.get("type") != "Consumption" or item.get("unitOfMeasure") != "1 GB":
        return None
    if "data transfer out" not in meter.lower() or len(currency) != 3:
        return None
    start, price = kit.exact(item.get("tierMinimumUnits")), kit.exact(item.get("retailPrice"))
    if start is None or price is None or start < 0 or price < 0:
        return None
    inter = "inter-region" in product.lower() or "continent" in meter.lower()
    direction = "out_region" if inter else "out_internet"
    return (region, direction, product, meter, currency), start, price


def _tiers(
    meters: dict[tuple[str, str, str, str, str], dict[Decimal, Decimal]],
) -> list[TransferRate]:
    """Per region and direction, the chosen product's tiers (the dearest meter's per start)."""
    chosen: dict[tuple[str, str], str] = {}
    for region, direction, product, _, _ in meters:
        held = chosen.get((region, direction))
        # Microsoft's network (the default) over the Internet routing an address may opt for.
        if held is None or (_INTERNET_ROUTING in held.lower()) > (
            _INTERNET_ROUTING in product.lower()
        ):
            chosen[(region, direction)] = product
    merged: dict[tuple[str, str, str], dict[Decimal, Decimal]] = {}
    for (region, direction, product, _, currency), tiers in meters.items():
        if chosen[(region, direction)] != product:
            continue
        into = merged.setdefault((region, direction, currency), {})
        for start, price in tiers.items():
            into[start] = max(price, into.get(start, price))
    found: list[TransferRate] = []
    for (region, direction, currency), tiers in sorted(merged.items()):
        starts = sorted(tiers)
        ends: list[Decimal | None] = [*starts[1:], None]
        found.extend(
            TransferRate(region, direction, start, end, currency, tiers[start])
            for start, end in zip(starts, ends, strict=True)
        )
    return found
