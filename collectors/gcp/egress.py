"""Google Cloud network egress prices from the same Compute Engine SKUs the machines are priced
from (docs/sql.md, `transfer_prices`; docs/providers.md, Google Cloud).

An egress SKU is `resourceFamily` "Network", priced per GiB (`usageUnit` "GiBy") in tiers from
each `startUsageAmount`, for the regions of its `serviceRegions` (never a place read from its
description). Kept, per asked region:

- `PremiumInternetEgress` ("Network Internet Egress from <source> to <destination>"): out to
  the internet (`out_internet`) on the Premium tier, Google's default. The Standard tier is a
  choice made per address, and China's and Australia's destinations are priced apart: neither
  is taken. Of the other destinations, the dearest tier, as the destination of a move is not
  known;
- `InterregionEgress` ("Network Inter Region Egress ..."): to another Google Cloud region
  (`out_region`), the dearest destination's tier likewise.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from collectors import kit
from collectors.base import TransferRate

GROUPS = {"PremiumInternetEgress": "out_internet", "InterregionEgress": "out_region"}
_DESTINATION = re.compile(r" to (.+)$")
_PRICED_APART = ("china", "australia")  # destinations dearer than the rest of the world


class Egress:
    """The egress SKUs of one catalog walk, added one at a time, as transfer tiers."""

    def __init__(self, regions: frozenset[str]) -> None:
        self.regions = regions  # the asked regions (empty: every region a SKU names)
        self.tiers: dict[tuple[str, str, str], dict[Decimal, Decimal]] = {}

    def add(self, sku: dict[str, Any]) -> None:
        """Keep the tiers of `sku` if it is an egress SKU this module reads (any other, or one
        of another shape, is passed over)."""
        category = kit.obj(sku.get("category"))
        direction = GROUPS.get(str(category.get("resourceGroup")))
        if direction is None or category.get("usageType") != "OnDemand":
            return
        description = str(sku.get("description", ""))
        destination = _DESTINATION.search(description)
        if destination and any(p in destination.group(1).lower() for p in _PRICED_APART):
            return
        found = _tiers(sku)
        if found is None:
            return
        currency, tiers = found
        places = sku.get("serviceRegions")
        for region in places if isinstance(places, list) else ():
            if not isinstance(region, str) or region == "global":
                continue
            if self.regions and region not in self.regions:
                continue
            into = self.tiers.setdefault((region, direction, currency), {})
            for start, price in tiers.items():  # the dearest destination's tier
                into[start] = max(price, into.get(start, price))

    def rates(self) -> list[TransferRate]:
        found: list[TransferRate] = []
        for (region, direction, currency), tiers in sorted(self.tiers.items()):
            starts = sorted(tiers)
            ends: list[Decimal | None] = [*starts[1:], None]
            found.extend(
                TransferRate(region, direction, start, end, currency, tiers[start])
                for start, end in zip(starts, ends, strict=True)
            )
        return found


def _tiers(sku: dict[str, Any]) -> tuple[str, dict[Decimal, Decimal]] | None:
    """The SKU's currency and price per GiB from each tier's start, or None when it is not
    priced per GiB in a shape this module reads."""
    infos = sku.get("pricingInfo")
    if not isinstance(infos, list) or not infos:
        return None
    expression = kit.obj(kit.obj(infos[-1]).get("pricingExpression"))  # the newest
    rates = expression.get("tieredRates")
    if expression.get("usageUnit") != "GiBy" or not isinstance(rates, list):
        return None
    tiers: dict[Decimal, Decimal] = {}
    currencies = set()
    for rate in rates:
        rate = kit.obj(rate)
        price = kit.obj(rate.get("unitPrice"))
        start = kit.exact(rate.get("startUsageAmount", 0))
        units = kit.exact(price.get("units", "0"), kit.NUMBERS_OR_TEXT)
        nanos = kit.exact(price.get("nanos", 0))
        if start is None or units is None or nanos is None or start < 0:
            return None
        amount = units + nanos / Decimal(1_000_000_000)
        if amount < 0:
            return None
        tiers[start] = amount
        currencies.add(price.get("currencyCode"))
    if len(currencies) != 1 or not tiers:
        return None
    currency = currencies.pop()
    return (currency, tiers) if isinstance(currency, str) and len(currency) == 3 else None
