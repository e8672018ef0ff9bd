"""The GPU instance types the store has seen without their facts (`gpu-tracker gpus --unknown`).

Two kinds: offers priced with `gpu_model` NULL (the answer gave a GPU count and memory, no one a
model), read from `latest_prices`; and types an answer listed with no GPU count at all, none of
whose prices could be stored, read from `unknown_gpu_types` (`storage.writes.unknown_types`).
The reads run on the sandboxed, time-limited connection every read command uses.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb

from collectors.common import StoreError
from storage.connection import LOCK_WAIT_S
from storage.reads.sandbox import bounded

MODEL_UNKNOWN = "GPU model unknown"

# One row per type: its newest facts, where it is offered now, and when it was seen.
_UNNAMED = """
SELECT provider, instance_type, $reason AS reason, true AS stored,
       arg_max(gpu_count, last_seen) AS gpu_count,
       arg_max(gpu_memory_gib, last_seen) AS gpu_memory_gib,
       coalesce(list(DISTINCT region ORDER BY region) FILTER (WHERE region IS NOT NULL), [])
           AS regions,
       min(valid_from) AS first_seen, max(last_seen) AS last_seen
FROM latest_prices
WHERE gpu_model IS NULL AND ($provider IS NULL OR provider = $provider)
GROUP BY provider, instance_type
"""

# A store older than the table (a read cannot migrate it) has none to read.
_NOT_STORED = """
SELECT provider, instance_type, reason, false AS stored, NULL::DOUBLE AS gpu_count,
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
    reason: str  # MODEL_UNKNOWN, or 'no GPU count' (none of its prices stored)
    stored: bool  # its prices are in the store (with gpu_model NULL)
    gpu_count: float | None
    gpu_memory_gib: float | None  # of ONE GPU
    regions: tuple[str, ...]  # where it is offered now (stored types only)
    first_seen: datetime
    last_seen: datetime


def unknown_types(
    path: Path | str,
    provider: str | None = None,
    *,
    timeout_s: float | None,
    wait_s: float = LOCK_WAIT_S,
) -> list[UnknownType]:
    """Every type of `provider` (None: of every provider) seen without facts, by provider and
    type; stopped after `timeout_s` seconds (QueryStopped) like every read command."""
    with bounded(path, timeout_s, wait_s=wait_s) as con:
        return unknown_types_on(con, provider)


def unknown_types_on(con: Any, provider: str | None = None) -> list[UnknownType]:
    """`unknown_types` on a connection the caller opened."""
    params: dict[str, Any] = {"provider": provider}
    try:
        sql = _UNNAMED
        if con.execute(_HAS_TABLE).fetchall()[0][0]:
            sql += "UNION ALL" + _NOT_STORED
        rows = con.execute(
            f"{sql} ORDER BY provider, instance_type", {**params, "reason": MODEL_UNKNOWN}
        ).fetchall()
    except duckdb.Error as exc:
        raise StoreError(f"cannot read the GPU types without facts: {exc}") from exc
    return [
        UnknownType(p, t, reason, stored, count, memory, tuple(regions), first, last)
        for p, t, reason, stored, count, memory, regions, first, last in rows
    ]
