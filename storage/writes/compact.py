"""The history laid out again, so that a read of the current prices or of a recent window finds
them in a few row groups instead of all of them (`gpu-tracker compact`, and the daemon when they
have spread: docs/performance.md, "Compaction").

DuckDB keeps, per row group of about 122,880 rows, each column's range and whether it holds a
NULL, and a scan skips the row groups that a filter rules out. The history is appended
collection after collection and an interval is closed where it lies, so after months the open
intervals (`valid_to` NULL: every current price) lie in every row group, and a read of
`latest_prices` reads them all (0.5-0.6 s at 25 million rows, against 20-40 ms once compacted).
Compacting rewrites the intervals in one transaction, the closed ones in the order they ended
and the open ones last; nothing else changes, row for row. New intervals are then appended after
the open ones, so those stay in the last row groups until many collections later: `spread` says
how many row groups hold one.

The intervals' row ids change, so the open intervals kept apart for the writes
(`storage.writes.open_offers`) are dropped with them and found again once the new layout is
checkpointed (a row id is final only then), so the next hourly write does not pay for it. The
store file keeps its size: the space the old layout held is reused by later writes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from collectors.common import StoreError
from storage.connection import scalar, transaction
from storage.writes import open_offers

ROW_GROUP_ROWS = 122_880  # DuckDB's row group size

# How many row groups hold an open interval, and how many the history has.
_SPREAD = f"""
SELECT (SELECT count(DISTINCT rowid // {ROW_GROUP_ROWS}) FROM price_intervals
        WHERE valid_to IS NULL),
       (SELECT (count(*) + {ROW_GROUP_ROWS} - 1) // {ROW_GROUP_ROWS} FROM price_intervals)
"""

# Closed intervals by their end (a window of the recent past then reads the last row groups),
# then the open ones; within either, by offer and start, so the layout is the same every time.
_LAID_OUT = """
CREATE TEMP TABLE laid_out AS
SELECT * FROM price_intervals
ORDER BY valid_to IS NULL, valid_to, provider, offer_key, valid_from
"""

_PROVIDERS = "SELECT DISTINCT provider FROM price_intervals WHERE valid_to IS NULL ORDER BY 1"


@dataclass(frozen=True)
class Compacted:
    """What a compaction did: the intervals rewritten, the row groups holding an open interval
    before and after (of `groups` in all), and how long it took."""

    intervals: int
    spread_before: int
    spread_after: int
    groups: int
    seconds: float


def spread(con: Any) -> tuple[int, int]:
    """(row groups holding an open interval, row groups of the history)."""
    held, groups = con.execute(_SPREAD).fetchall()[0]
    return int(held), int(groups)


def compact(con: Any, *, spread_over: int | None = None) -> Compacted | None:
    """Rewrite the history in the compacted layout, in one transaction on the writer's `con`
    (nothing changes if any step fails), then checkpoint it to the file and keep its open
    intervals apart again for the writes. With `spread_over`, only when the open intervals lie
    in more than that many row groups (else None)."""
    started = time.monotonic()
    before, _ = spread(con)
    if spread_over is not None and before <= spread_over:
        return None
    with transaction(con):
        count = scalar(con, "SELECT count(*) FROM price_intervals")
        con.execute(_LAID_OUT)
        if scalar(con, "SELECT count(*) FROM laid_out") != count:  # never expected: say so
            raise StoreError("compact: the laid-out copy of the history lost rows; nothing changed")
        con.execute("DELETE FROM price_intervals")
        con.execute("INSERT INTO price_intervals SELECT * FROM laid_out")
        con.execute("DROP TABLE laid_out")
        con.execute("DELETE FROM open_offers")  # their row ids moved: found again below
    con.execute("CHECKPOINT")  # which may move them again: the old row groups go
    with transaction(con):
        for (provider,) in con.execute(_PROVIDERS).fetchall():
            open_offers.check(con, provider)
    con.execute("CHECKPOINT")
    after, groups = spread(con)
    return Compacted(int(count), before, after, groups, time.monotonic() - started)
