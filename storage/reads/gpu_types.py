"""The GPU instance types the store has seen without their facts (`gpu-tracker gpus --unknown`).

Two kinds: offers priced under a model the GPU table does not know (the answer's own name for
its GPU) or with `gpu_model` NULL (no one names it), read from `latest_prices`; and types an
answer listed with no GPU count at all, none of whose prices could be stored, read from
`unknown_gpu_types` (`storage.writes.unknown_types`). The reads run on the sandboxed,
time-limited connection every read command uses.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb

from collectors.common import StoreError
from storage.connection import LOCK_WAIT_S
from storage.reads.sandbox import bounded

MODEL_UNKNOWN = "GPU model unknown"
MODEL_NOT_IN_TABLE = "GPU not in the GPU table"

# One row per type: its newest facts, where it is offered now, and when it was seen.
_UNNAMED = """
SELECT provider, instance_type,
       CASE WHEN arg_max(gpu_model, last_seen) IS NULL THEN $reason ELSE $named END AS reason,
       true AS stored, arg_max(gpu_model, last_seen) AS gpu_model,
       arg_max(gpu_count, last_seen) AS gpu_count,
       arg_max(gpu_memory_gib, last_seen) AS gpu_memory_gib,
       coalesce(list(DISTINCT region ORDER BY region) FILTER (WHERE region IS NOT NULL), [])
           AS regions,
       min(valid_from) AS first_seen, max(last_seen) AS last_seen
FROM latest_prices
WHERE (gpu_model IS NULL OR ($known IS NOT NULL AND NOT list_contains($known, gpu_model)))
  AND ($provider IS NULL OR provider = $provider)
GROUP BY provider, instance_type
"""

# A store older than the table (a read cannot migrate it) has none to read.
_NOT_STORED = """
SELECT provider, instance_type, reason, false AS stored, NULL::VARCHAR AS gpu_model,
       NULL::DOUBLE AS gpu_count,
       NULL::DOUBLE AS gpu_memory_gib, []::VARCHAR[] AS regions, first_seen, last_seen
FROM unknown_gpu_types
WHERE $provider IS NULL OR provider = $provider
"""

_HAS_TABLE = """
SELECT count(*) FROM duckdb_tables() WHERE table_name = 'unknown_gpu_types' AND NOT temporary
"""


@dataclass(frozen=True)
class UnknownType:
    """One instance type seen without its GPU facts."""

    provider: str
    instance_type: str
    reason: str  # MODEL_UNKNOWN, MODEL_NOT_IN_TABLE or 'no GPU count' (no price stored)
    stored: bool  # its prices are in the store (under gpu_model, or with it NULL)
    gpu_model: str | None  # the provider's own name for a GPU the table lacks
    gpu_count: float | None
    gpu_memory_gib: float | None  # of ONE GPU
    regions: tuple[str, ...]  # where it is offered now (stored types only)
    first_seen: datetime
    last_seen: datetime


def unknown_types(
    path: Path | str,
    provider: str | None = None,
    *,
    known: Sequence[str] | None = None,
    timeout_s: float | None,
    wait_s: float = LOCK_WAIT_S,
) -> list[UnknownType]:
    """Every type of `provider` (None: of every provider) seen without facts, by provider and
    type: its model NULL or none of `known` (the models the GPU table and the user's [gpus]
    know; None: only a NULL model); stopped after `timeout_s` seconds (QueryStopped) like
    every read command."""
    with bounded(path, timeout_s, wait_s=wait_s) as con:
        return unknown_types_on(con, provider, known=known)


def unknown_types_on(
    con: Any, provider: str | None = None, *, known: Sequence[str] | None = None
) -> list[UnknownType]:
    """`unknown_types` on a connection the caller opened."""
    params: dict[str, Any] = {
        "provider": provider,
        "known": None if known is None else list(known),
    }
    try:
        sql = _UNNAMED
        if con.execute(_HAS_TABLE).fetchall()[0][0]:
            sql += "UNION ALL" + _NOT_STORED
        rows = con.execute(
            f"{sql} ORDER BY provider, instance_type",
            {**params, "reason": MODEL_UNKNOWN, "named": MODEL_NOT_IN_TABLE},
        ).fetchall()
    except duckdb.Error as exc:
        raise StoreError(f"cannot read the GPU types without facts: {exc}") from exc
    return [
        UnknownType(p, t, reason, stored, model, count, memory, tuple(regions), first, last)
        for p, t, reason, stored, model, count, memory, regions, first, last in rows
    ]
