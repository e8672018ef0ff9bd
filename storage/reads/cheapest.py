"""The cheapest current price per GPU-hour per provider, region, GPU model, price kind and
currency: what the daemon's price gauges show.

Current, fresh, not sold out (NULL `available`: the provider does not say, so it counts as
available, as in the alert rules). Grouping by currency keeps currencies apart; the USD minimum
comes from the same rows, converted with one rate per currency, so it is the same offer's price.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, NamedTuple

import duckdb

from collectors.common import StoreError
from storage.session import session

_CHEAPEST = """
SELECT provider, region, gpu_model, price_kind, currency,
       min(price_per_gpu_hour), min(price_per_gpu_hour_usd)
FROM latest_prices
WHERE NOT stale AND available IS NOT FALSE
  AND gpu_model IS NOT NULL AND price_per_gpu_hour IS NOT NULL
GROUP BY ALL
ORDER BY ALL
"""


class Cheapest(NamedTuple):
    provider: str
    region: str
    gpu_model: str
    price_kind: str
    currency: str
    price_per_gpu_hour: float
    price_per_gpu_hour_usd: float | None  # None: no [fx] rate for the currency


def cheapest_fresh(
    path: Path | str,
    *,
    lock: AbstractContextManager[Any] | None = None,
    wait_s: float = 30.0,
) -> list[Cheapest]:
    """The rows, read from the store at `path` under `lock` (none when there is no store yet).
    Read-write like every connection of the daemon: DuckDB refuses two configurations of one
    file in one process."""
    if not Path(path).exists():
        return []
    with session(path, lock=lock, wait_s=wait_s) as con:
        try:
            return [Cheapest(*row) for row in con.execute(_CHEAPEST).fetchall()]
        except duckdb.Error as exc:
            raise StoreError(f"cannot read the cheapest prices: {exc}") from exc
