"""What moving data out of a provider costs: the view `transfer_prices` (docs/sql.md) and the
cost of moving an amount out with its tiers applied (`tco --data-tb`, docs/decide.md).

A tier prices the GiB of a month from `from_gib` up to `to_gib`: moving G GiB costs, summed over
the tiers, price x the part of G that falls in the tier. The USD figure goes through the store's
dated [fx] rates as the prices do: the rate in force on the interval's last day (today for an
open one), the first rate before the first date, the newest after the newest.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import duckdb

from collectors.common import StoreError

GIB_PER_TIB = 1024

# The rate of a currency on the interval's day (UTC), clamped to the rates the store has.
_RATE = """coalesce(
    (SELECT arg_max(f.usd_per_unit, f.as_of) FROM fx_rates f WHERE f.currency = t.currency
        AND f.as_of <= CAST(timezone('UTC', coalesce(t.valid_to, now())) AS DATE)),
    (SELECT arg_min(f.usd_per_unit, f.as_of) FROM fx_rates f WHERE f.currency = t.currency))"""

TRANSFER_PRICES = f"""
SELECT provider, region, direction, from_gib, to_gib, currency,
       CAST(price_per_gib AS DOUBLE) AS price_per_gib,
       CASE WHEN currency = 'USD' THEN CAST(price_per_gib AS DOUBLE)
            ELSE round(CAST(CAST(price_per_gib AS DECIMAL(38, 6)) * {_RATE} AS DOUBLE), 6)
       END AS usd_per_gib,
       valid_from, valid_to, last_seen
FROM transfer_intervals t
"""

# The open tiers of one provider out to the internet, in the asked region or else its flat
# (region NULL) rate; `$as_of` NULL: now.
_TIERS = """
SELECT region, from_gib, to_gib, currency, usd_per_gib FROM transfer_prices
WHERE provider = $provider AND direction = 'out_internet'
  AND ($as_of IS NULL AND valid_to IS NULL
       OR $as_of IS NOT NULL AND valid_from <= $as_of AND (valid_to IS NULL OR valid_to > $as_of))
  AND ($region IS NULL OR region = $region OR region IS NULL)
ORDER BY region NULLS FIRST, from_gib
"""


@dataclass(frozen=True)
class Moving:
    """The cost of moving `gib` out of a provider: in USD (None: no USD rate for `currency`),
    the region whose tiers priced it (None: the provider's flat rate)."""

    provider: str
    region: str | None
    gib: float
    usd: float | None
    currency: str


def cost(
    con: Any, provider: str, region: str | None, gib: float, as_of: datetime | None = None
) -> list[Moving]:
    """The cost of moving `gib` out of `provider` to the internet, tiers applied: per region
    priced (its own tiers, else the provider's flat rate), dearest first; only `region`'s (or
    the flat rate) when one is asked. Empty: the store has no such price."""
    try:
        rows = con.execute(
            _TIERS, {"provider": provider, "region": region, "as_of": as_of}
        ).fetchall()
    except duckdb.Error as exc:
        raise StoreError(f"transfer prices: could not read the store: {exc}") from exc
    by_region: dict[str | None, list[tuple[Any, ...]]] = {}
    for row in rows:
        by_region.setdefault(row[0], []).append(row)
    if region is not None and region in by_region:  # the region's own tiers over the flat rate
        by_region = {region: by_region[region]}
    found = [_priced(provider, where, tiers, gib) for where, tiers in by_region.items()]
    return sorted(found, key=lambda m: (m.usd is None, -(m.usd or 0), m.region or ""))


def _priced(provider: str, region: str | None, tiers: list[tuple[Any, ...]], gib: float) -> Moving:
    total: float | None = 0.0
    currency = tiers[0][3]
    for _, start, end, _, usd_per_gib in tiers:
        part = max(0.0, min(gib, end if end is not None else gib) - start)
        if part <= 0:
            continue
        if usd_per_gib is None:
            total = None
            break
        total = (total or 0.0) + part * usd_per_gib
    return Moving(provider, region, gib, None if total is None else round(total, 2), currency)
