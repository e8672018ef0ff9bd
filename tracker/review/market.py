"""The review's opening: how the market moved over the period, per followed GPU (model and
memory), price kind and segment: the market index (docs/decide.md, "Market index") on the day
the period starts against today's. The offers' own moves follow it in the review."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from storage.reads.index import read
from storage.reads.index.read import Days, IndexFilters, IndexRow


def index_moves(
    store: Path | str,
    then: datetime,
    now: datetime,
    gpus: tuple[str, ...] = (),
    *,
    timeout_s: float | None = None,
) -> tuple[dict[str, Any], ...]:
    """Per GPU, kind and segment with an index on either day: `then` and `now` (USD per
    GPU-hour, None where that day had none), `move_pct`, and the providers behind each; only
    the GPU models `gpus` names (every one for none)."""
    wanted = {g.lower() for g in gpus}
    at_then = then.astimezone(UTC).date()
    at_now = now.astimezone(UTC).date()
    every = IndexFilters(segment=None)
    sides: dict[str, list[IndexRow]] = {
        "then": read.index(store, every, Days(at_then, at_then, now), timeout_s=timeout_s),
        "now": read.index(store, every, Days(at_now, at_now, now), timeout_s=timeout_s),
    }
    found: dict[tuple[Any, ...], dict[str, Any]] = {}
    for side, rows in sides.items():
        for r in rows:
            if wanted and r.gpu_model.lower() not in wanted:
                continue
            key = (r.gpu_model, r.gpu_memory_gib or 0.0, r.kind, r.segment)
            entry = found.setdefault(key, _entry(r))
            entry[side], entry[f"providers_{side}"] = r.index_usd_per_gpu_hour, r.providers
    for entry in found.values():
        before, after = entry["then"], entry["now"]
        moved = before and after is not None
        entry["move_pct"] = round(100 * after / before - 100, 2) + 0.0 if moved else None
    return tuple(found[k] for k in sorted(found, key=_order))


def _entry(row: IndexRow) -> dict[str, Any]:
    return {
        "gpu_model": row.gpu_model,
        "gpu_memory_gib": row.gpu_memory_gib,
        "kind": row.kind,
        "segment": row.segment,
        "then": None,
        "now": None,
        "providers_then": None,
        "providers_now": None,
    }


def _order(key: tuple[Any, ...]) -> tuple[Any, ...]:
    model, memory, kind, segment = key
    return (model, memory, kind, read.SEGMENTS.index(segment))
