"""AWS data transfer prices from the public offer files (docs/sql.md, `transfer_prices`).

A region's EC2 offer file carries, beside the instances, its `Data Transfer` products: one CSV
row per tier (`StartingRange` to `EndingRange` GB, `Inf` for the last; AWS bills a GB as 2^30
bytes, a GiB), priced per GB in USD. Two are kept:

- `Transfer Type` "AWS Outbound" to `To Location` "External": out to the internet
  (`out_internet`);
- "InterRegion Outbound": to another AWS region (`out_region`). AWS prices it per destination;
  the dearest destination's tier is kept, so that a move is never priced too low.

The rows are copied as the file streams (`collectors.aws.public`), after the GPU test, by the
one cheap test `wanted`: about a hundred rows of a region's file.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any

from collectors import kit
from collectors.base import Payloads, TransferRate

FAMILY = "Product Family"
# Every column kept of a transfer row.
COLUMNS = (
    "Transfer Type",
    "From Region Code",
    "To Location",
    "TermType",
    "StartingRange",
    "EndingRange",
    "Unit",
    "PricePerUnit",
    "Currency",
)
DIRECTIONS = {"AWS Outbound": "out_internet", "InterRegion Outbound": "out_region"}


class Picker:
    """Which rows of one offer file are transfer rows to keep, and their kept columns."""

    def __init__(self, header: list[str]) -> None:
        self.family = header.index(FAMILY) if FAMILY in header else None
        self.at = [header.index(c) if c in header else None for c in COLUMNS]

    def wanted(self, row: list[str]) -> bool:
        return self.family is not None and row[self.family] == "Data Transfer"

    def kept(self, row: list[str]) -> list[str]:
        return [row[i] if i is not None else "" for i in self.at]


def rates(payloads: Payloads, regions: frozenset[str]) -> list[TransferRate] | None:
    """The tiers of every asked region's offer file; None when no file was read (the API
    source answered: the stored tiers stay as they are)."""
    files = [(k.removeprefix("public/offers/"), v) for k, v in payloads.items()
             if k.startswith("public/offers/")]  # fmt: skip
    if not files:
        return None
    tiers: dict[tuple[str, str, Decimal], TransferRate] = {}
    for region, kept in files:
        if regions and region not in regions:
            continue
        for rate in _rates(region, kit.obj(kit.obj(kept).get("transfer"))):
            key = (region, rate.direction, rate.from_gib)
            if key not in tiers or rate.price_per_gib > tiers[key].price_per_gib:
                tiers[key] = rate  # the dearest destination's (out_region)
    return list(tiers.values())


def _rates(region: str, kept: dict[str, Any]) -> Iterator[TransferRate]:
    columns, rows = kept.get("columns"), kept.get("rows")
    if columns != list(COLUMNS) or not isinstance(rows, list):
        return
    for row in rows:
        if (
            not isinstance(row, list)
            or len(row) != len(COLUMNS)
            or not all(isinstance(v, str) for v in row)
        ):
            continue
        kind, source, to, term, start, end, unit, price, currency = row
        direction = DIRECTIONS.get(kind)
        if direction is None or term != "OnDemand" or unit != "GB" or (source or region) != region:
            continue
        if direction == "out_internet" and to != "External":
            continue
        low, high, per_gib = (kit.exact(v, kit.NUMBERS_OR_TEXT) for v in (start, end, price))
        if low is None or per_gib is None or (high is None and end != "Inf"):
            continue  # an end of `Inf` is the last tier's: no upper bound
        if currency == "USD":
            yield TransferRate(region, direction, low, high, currency, per_gib)
