"""What a provider charges to move data out, per tier, kept change-only like the prices: a
tier confirmed again extends `last_seen`, a new price (or bound, or currency) closes the open
tier and opens its successor, a tier the answer no longer prices is closed where the collection
looked. Runs in the collection's transaction; three set-based statements over one Arrow batch.
The view `transfer_prices` (`storage.reads.transfer`) reads them.

A rate the store cannot hold (a negative or absurd price, a bound that is not a number, a tier
that ends before it starts) is dropped here, never a reason to refuse the run's prices.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any

import pyarrow as pa

from collectors.base import TransferRate

DIRECTIONS = ("out_internet", "out_region")
# No cloud charges this per GiB; beyond it a number is a parser's mistake, not a price (and
# DECIMAL(18, 6) would refuse the whole write).
MOST_PER_GIB = Decimal(1000)
MOST_GIB = 1e12

_SCHEMA = pa.schema(
    [
        ("region", pa.string()),
        ("direction", pa.string()),
        ("from_gib", pa.float64()),
        ("to_gib", pa.float64()),
        ("currency", pa.string()),
        ("price_per_gib", pa.decimal128(18, 6)),
    ]
)

_TIER = """b.region IS NOT DISTINCT FROM t.region AND b.direction = t.direction
      AND b.from_gib = t.from_gib"""
# An open tier of the provider that the batch confirms: same tier, same bound, price, currency.
_SAME = f"""EXISTS (SELECT 1 FROM transfer_batch b WHERE {_TIER}
      AND b.to_gib IS NOT DISTINCT FROM t.to_gib AND b.currency = t.currency
      AND b.price_per_gib = t.price_per_gib)"""
_OPEN = "t.provider = $provider AND t.valid_to IS NULL"
# Closed only where the collection looked (its regions; NULL: everywhere). A flat rate (region
# NULL) is the whole provider's: any collection that brings rates covers it.
_COVERED = "($all OR t.region IS NULL OR list_contains($regions, t.region))"

_CLOSE = f"""UPDATE transfer_intervals t SET valid_to = $observed
WHERE {_OPEN} AND {_COVERED} AND NOT {_SAME}"""
_CONFIRM = f"UPDATE transfer_intervals t SET last_seen = $observed WHERE {_OPEN} AND {_SAME}"
_OPEN_NEW = f"""INSERT INTO transfer_intervals
SELECT $provider, b.region, b.direction, b.from_gib, b.to_gib, b.currency, b.price_per_gib,
       $observed, NULL, $observed, $run_id
FROM transfer_batch b
WHERE NOT EXISTS (SELECT 1 FROM transfer_intervals t WHERE {_OPEN} AND {_TIER})"""


def record_transfer(
    con: Any,
    provider: str,
    rates: Sequence[TransferRate],
    run_id: int,
    observed_at: datetime,
    regions: Sequence[str] | None,
) -> None:
    """Merge one collection's transfer tiers into the provider's history (inside the caller's
    transaction). `regions`: the regions the collection covered, None for all."""
    kept = storable(rates)
    columns = {
        "region": [r.region for r in kept],
        "direction": [r.direction for r in kept],
        "from_gib": [float(r.from_gib) for r in kept],
        "to_gib": [None if r.to_gib is None else float(r.to_gib) for r in kept],
        "currency": [r.currency for r in kept],
        "price_per_gib": [r.price_per_gib for r in kept],
    }
    con.register("transfer_batch", pa.table(columns, schema=_SCHEMA))
    try:
        where = {"provider": provider, "observed": observed_at}
        covered = {"all": regions is None, "regions": list(regions or [])}
        con.execute(_CLOSE, {**where, **covered})
        con.execute(_CONFIRM, where)
        con.execute(_OPEN_NEW, {**where, "run_id": run_id})
    finally:
        con.unregister("transfer_batch")


def storable(rates: Sequence[TransferRate]) -> list[TransferRate]:
    """The rates the store can hold, one per tier (the first of a tier given twice), their
    prices at the store's six decimal places."""
    kept: dict[tuple[Any, ...], TransferRate] = {}
    for rate in rates:
        if (clean := _clean(rate)) is not None:
            kept.setdefault((clean.region, clean.direction, clean.from_gib), clean)
    return list(kept.values())


def _clean(rate: Any) -> TransferRate | None:
    try:
        price = Decimal(rate.price_per_gib).quantize(Decimal("0.000001"))
        start = float(rate.from_gib)
        end = None if rate.to_gib is None else float(rate.to_gib)
    except (InvalidOperation, TypeError, ValueError, OverflowError, AttributeError):
        return None
    if not (price.is_finite() and 0 <= price <= MOST_PER_GIB):
        return None
    if not (math.isfinite(start) and 0 <= start <= MOST_GIB):
        return None
    if end is not None and not (math.isfinite(end) and start < end <= MOST_GIB):
        return None
    region, currency = rate.region, rate.currency
    if region is not None and not (isinstance(region, str) and 0 < len(region) < 100):
        return None
    if not (isinstance(currency, str) and len(currency) == 3 and currency.isalpha()):
        return None
    if rate.direction not in DIRECTIONS or "\0" in (region or ""):
        return None
    return TransferRate(region, rate.direction, Decimal(start), None if end is None
                        else Decimal(end), currency.upper(), price)  # fmt: skip
