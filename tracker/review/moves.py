"""The review's largest like-for-like moves: per GPU model, memory size and price kind, the
offers whose own price fell or rose the most between then and now (`storage.review.moves`),
as the digest's `moves` (docs/review.md, "Largest moves").

The cheapest-offer tables show one offer per model and kind, so most moves never appear there;
these are the moves themselves, each one offer against itself: the same provider, region,
zone, instance type, kind, term, payment option, offering class and currency.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

# The fields of one move, in the digest's order.
FIELDS = ("gpu_model", "gpu_memory_gib", "price_kind", "direction", "provider", "region", "zone",
          "instance_type", "term_months", "payment_option", "offering_class", "gpu_count",
          "currency", "from_price", "to_price", "change_share", "change_pct",
          "from_usd_per_gpu_hour", "usd_per_gpu_hour", "places")  # fmt: skip


def moves(rows: Sequence[Mapping[str, Any]]) -> tuple[dict[str, Any], ...]:
    """The rows of `storage.review.moves` as JSON-able moves: prices per instance-hour in the
    offer's currency (`from_price`, `to_price`), `change_share` (-0.44 for a 44 % cut) and its
    `change_pct`, USD per GPU-hour then and now, and the `places` that moved alike."""
    return tuple(_move(row) for row in rows)


def _move(row: Mapping[str, Any]) -> dict[str, Any]:
    share = float(row["change_share"])
    found = {**row, "change_share": share, "change_pct": round(100 * share, 2) + 0.0}
    memory = row["gpu_memory_gib"]
    found["gpu_memory_gib"] = None if memory is None else float(memory)
    found["places"] = int(row["places"])
    count = row["gpu_count"]
    found["gpu_count"] = None if count is None else int(count)
    return {name: found[name] for name in FIELDS}
