"""A marketplace's offer counts per group (Vast.ai: GPU, GPU count, country), kept change-only
like the prices: a count confirmed again extends `last_seen`, a new count closes the open one
and opens its own, a group with no offer left is closed. Runs in the collection's transaction;
three set-based statements over one Arrow batch. The view `market_depth` reads them."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import pyarrow as pa

from collectors.base import MarketDepth

_SCHEMA = pa.schema(
    [("region", pa.string()), ("instance_type", pa.string()), ("offers", pa.int32())]
)

# An open row of the provider that the batch confirms: same group, same count.
_SAME = """EXISTS (SELECT 1 FROM market_batch b
    WHERE b.region IS NOT DISTINCT FROM m.region AND b.instance_type = m.instance_type
      AND b.offers = m.offers)"""
_OPEN = "m.provider = $provider AND m.valid_to IS NULL"
# Closed only where the collection looked (its configured countries; NULL: everywhere).
_COVERED = "($all OR list_contains($regions, m.region))"

_CLOSE = f"""UPDATE market_depth_intervals m SET valid_to = $observed
WHERE {_OPEN} AND {_COVERED} AND NOT {_SAME}"""
_CONFIRM = f"UPDATE market_depth_intervals m SET last_seen = $observed WHERE {_OPEN} AND {_SAME}"
_OPEN_NEW = """INSERT INTO market_depth_intervals
SELECT $provider, b.region, b.instance_type, b.offers, $observed, NULL, $observed, $run_id
FROM market_batch b
WHERE NOT EXISTS (SELECT 1 FROM market_depth_intervals m
    WHERE m.provider = $provider AND m.valid_to IS NULL
      AND m.region IS NOT DISTINCT FROM b.region AND m.instance_type = b.instance_type)"""


def record_market(
    con: Any,
    provider: str,
    groups: Sequence[MarketDepth],
    run_id: int,
    observed_at: datetime,
    regions: Sequence[str] | None,
) -> None:
    """Merge one collection's counts into the provider's history (inside the caller's
    transaction). `regions`: the regions the collection covered, None for all."""
    columns = {name: [getattr(g, name) for g in groups] for name in _SCHEMA.names}
    con.register("market_batch", pa.table(columns, schema=_SCHEMA))
    try:
        where = {"provider": provider, "observed": observed_at}
        covered = {"all": regions is None, "regions": list(regions or [])}
        con.execute(_CLOSE, {**where, **covered})
        con.execute(_CONFIRM, where)
        con.execute(_OPEN_NEW, {**where, "run_id": run_id})
    finally:
        con.unregister("market_batch")
