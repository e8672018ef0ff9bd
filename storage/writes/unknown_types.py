"""The GPU instance types a collection saw but could not price: no one (the API, the GPU table,
the user's [gpus] entries) gave them a GPU count, so none of their prices is stored.

They are kept in `unknown_gpu_types`, one row per provider and type, in the transaction of the
run that saw them, so `gpu-tracker gpus --unknown` can name them with the config entry to add.
A row goes as soon as a run of its provider prices the type: the entry was added, or the table
or the API learned it. A type the provider stops listing keeps its row, dated by `last_seen`.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import Any

NO_COUNT = "no GPU count"

# A type seen again keeps its first sighting; the run that saw it last is the newest.
_SEEN = """
INSERT INTO unknown_gpu_types
SELECT $provider, unnest($types), $reason, $seen, $seen, $run_id
ON CONFLICT (provider, instance_type) DO UPDATE
SET last_seen = excluded.last_seen, run_id = excluded.run_id, reason = excluded.reason
"""

_PRICED = """
DELETE FROM unknown_gpu_types
WHERE provider = $provider AND list_contains($types, instance_type)
"""

_NOTED = "SELECT instance_type FROM unknown_gpu_types WHERE provider = $provider"


def record_unknown(
    con: Any,
    provider: str,
    unknown: Collection[str],
    priced: Collection[str],
    *,
    seen: datetime,
    run_id: int,
) -> None:
    """Within the caller's transaction: note the `unknown` types of `provider` as seen at
    `seen` by run `run_id`, and forget the noted ones it `priced`. The provider's noted types
    are read first (a handful): a write that resolves nothing and sees nothing new costs that
    one small read."""
    noted = {row[0] for row in con.execute(_NOTED, {"provider": provider}).fetchall()}
    resolved = sorted(noted.intersection(priced))
    if resolved:
        con.execute(_PRICED, {"provider": provider, "types": resolved})
    unknown = sorted(set(unknown).difference(priced))
    if unknown:
        con.execute(
            _SEEN,
            {
                "provider": provider,
                "types": unknown,
                "reason": NO_COUNT,
                "seen": seen,
                "run_id": run_id,
            },
        )
