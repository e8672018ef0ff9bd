"""The open intervals kept apart from the history for the write: `open_offers`, one small row
per interval of `price_intervals` still open (`valid_to` NULL), with where it lies there (its
row id) and what the merge compares (`storage.merge`).

Reading those columns from the history meant reading offer keys and facts from row groups all
over the file, a cost that grew with every collection kept (docs/performance.md); here a write
reads a table the size of the current offers. The history stays the one record: the views read
only it, and `open_offers` holds nothing it does not.

The rows follow the history's open intervals: the merge keeps them in step as it opens, closes
and corrects intervals, and `check`, before every write, makes sure that they name exactly the
provider's open intervals, or rebuilds them from the history (a store just migrated; a
reparse, whose deletions may move row ids when the file is checkpointed; intervals written by
other means).
"""

from __future__ import annotations

from typing import Any

from storage.connection import scalar
from storage.writes.corrections import FACTS

# The open interval's columns the merge reads, as `open_offers` holds them.
KEPT = f"""rowid AS row, run_id, offer_key, provider, valid_from, price_per_hour, upfront_total,
    available, {FACTS} AS facts, region, zone, instance_type, price_kind"""

_REBUILD = f"""
INSERT INTO open_offers BY NAME
SELECT {KEPT} FROM price_intervals WHERE provider = $provider AND valid_to IS NULL
"""

# Whether the kept rows are exactly the provider's open intervals: as many, and each open
# interval's row id among them (row ids are unique, so no kept row names another).
_IN_STEP = """
SELECT count(*) = count(o.row)
       AND count(*) = (SELECT count(*) FROM open_offers WHERE provider = $provider)
FROM price_intervals p
LEFT JOIN (SELECT row FROM open_offers WHERE provider = $provider) o ON o.row = p.rowid
WHERE p.provider = $provider AND p.valid_to IS NULL
"""

# Intervals this write opened that are still open (`run_id` is the write's own). Their row ids
# are the transaction's own until it commits: none kept (NULL) until the next write finds them.
_ADD_OPENED = f"""
INSERT INTO open_offers BY NAME
SELECT {KEPT.replace("rowid AS row", "NULL AS row")} FROM price_intervals
WHERE run_id = $run_id AND provider = $provider AND valid_to IS NULL
"""

# Their row ids found: among the rows of the run that opened them, appended last (the scan skips
# the row groups of earlier runs).
_FIND_ROWS = """
UPDATE open_offers AS o SET row = p.rowid
FROM price_intervals p
WHERE o.provider = $provider AND o.row IS NULL AND p.provider = $provider
  AND p.run_id = o.run_id AND p.offer_key = o.offer_key AND p.valid_to IS NULL
"""

# Facts corrected in the history (`rows`: SQL of their row ids), taken here too.
_FACTS = f"""
UPDATE open_offers AS o SET facts = p.facts
FROM (SELECT rowid AS row, {FACTS} AS facts FROM price_intervals WHERE rowid IN ({{rows}})) p
WHERE o.row = p.row
"""


def check(con: Any, provider: str) -> None:
    """Rebuild `provider`'s open offers from the history unless they are exactly its open
    intervals (in the caller's transaction)."""
    con.execute(_FIND_ROWS, {"provider": provider})
    if not scalar(con, _IN_STEP, {"provider": provider}):
        clear(con, provider)
        con.execute(_REBUILD, {"provider": provider})


def clear(con: Any, provider: str) -> None:
    """Forget `provider`'s open offers: the next write rebuilds them."""
    con.execute("DELETE FROM open_offers WHERE provider = $provider", {"provider": provider})


def closed(con: Any, rows: str) -> None:
    """Drop the open offers whose intervals this write closed (`rows`: SQL of their row ids,
    those of them now closed)."""
    con.execute(
        f"DELETE FROM open_offers WHERE row IN (SELECT p.rowid FROM price_intervals p"
        f" WHERE p.rowid IN ({rows}) AND p.valid_to IS NOT NULL)"
    )


def opened(con: Any, provider: str, run_id: int) -> None:
    """Keep apart the intervals run `run_id` opened and left open."""
    con.execute(_ADD_OPENED, {"provider": provider, "run_id": run_id})


def refacted(con: Any, rows: str) -> None:
    """Take the facts the history's intervals `rows` (SQL of row ids) were corrected to."""
    con.execute(_FACTS.format(rows=rows))
