"""GPU and host facts corrected in place, within the change-only merge (`storage.merge`).

An open interval confirmed at its price takes the GPU and host facts the collection now gives
where they differ: a model named at last (the user added a [gpus] entry, the table learned the
type), a count or memory corrected (an entry, a fixed table, the API's own answer). The offer and
its price are the same, so no interval opens and its history shows no change that did not
happen; earlier, closed intervals keep the facts they had. A fact the collection does not give (a
model only DescribeInstanceTypes names, when AWS answered from its public files) is never erased
by its absence. The corrected intervals' computed columns are forgotten and derived again.

The merge stages `FACTS` for the incoming points and the open intervals and flags the offers
confirmed at their price whose facts differ (`paths.refact`, `paths.newest`: the row of the
batch whose facts it takes); `correct_facts` does the rest, in the merge's transaction.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from storage.connection import scalar
from storage.writes.derived import rederive

# What the offer is, beside its price: its GPUs and host, as one comparable value.
FACTS = """hash(CAST(gpu_model AS VARCHAR), CAST(gpu_count AS DOUBLE),
    CAST(gpu_memory_gib AS DOUBLE), CAST(vcpus AS DOUBLE), CAST(memory_gib AS DOUBLE))"""

_STAGE_REFACTS = """
CREATE TEMP TABLE refacts AS
SELECT o.row, s.newest FROM paths s JOIN open_now o USING (offer_key)
WHERE s.path = 'same' AND s.refact
"""

# Each fact the interval takes from the collection's row `b`; `p`'s own where `b` lacks it.
_TAKEN = {
    "gpu_model": "coalesce(b.gpu_model, p.gpu_model)",
    "gpu_count": "b.gpu_count",
    "gpu_memory_gib": "b.gpu_memory_gib",
    "vcpus": "coalesce(b.vcpus, p.vcpus)",
    "memory_gib": "coalesce(b.memory_gib, p.memory_gib)",
}

# A candidate whose facts differ only where the collection gives none (AWS from its public
# files: no model, no host size) would be rewritten as it is, and derived again, every run. (By
# a subquery: DELETE ... USING planned a slow join, 0.3 s a write at 2,000 candidates.)
_UNCHANGED = f"""
DELETE FROM refacts WHERE row IN (
    SELECT r.row FROM refacts r JOIN picked b ON b.row = r.newest
    JOIN price_intervals p ON p.rowid = r.row
    WHERE ({", ".join(_TAKEN.values())})
        IS NOT DISTINCT FROM ({", ".join(f"p.{c}" for c in _TAKEN)})
)
"""

_REFACT = f"""
UPDATE price_intervals AS p
SET {", ".join(f"{column} = {value}" for column, value in _TAKEN.items())}
FROM refacts r JOIN picked b ON b.row = r.newest
WHERE p.rowid = r.row
"""


def correct_facts(con: Any, pick: Callable[[str], None]) -> None:
    """Give the open intervals confirmed at their price the facts the collection corrected;
    `pick(rows_sql)` registers as `picked` the rows of the batch `rows_sql` selects. Leaves the
    temp table `refacts` for the merge to drop."""
    con.execute(_STAGE_REFACTS)
    if not scalar(con, "SELECT count(*) FROM refacts"):  # the usual: the same facts
        return
    pick("SELECT newest FROM refacts")
    con.execute(_UNCHANGED)
    if scalar(con, "SELECT count(*) FROM refacts"):  # rare: facts corrected
        con.execute(_REFACT)
        rederive(con, "p.rowid IN (SELECT row FROM refacts)")
