"""A provider's history taken back to where it stood before one of its runs (`first`, observed
`since`), for `gpu-tracker reparse` to replay that run and the later ones over it
(`storage.writes.reparse`), in the caller's transaction.

What the runs from `first` on wrote is undone: the intervals they opened are removed, the ones
they closed reopened, their skip counts and held verdicts dropped. An interval closes at the
run's time, or, for a point with the provider's own timestamp (spot history), where that point
starts: then the run opened the successor at that very moment, which tells it apart from a
withdrawal by an earlier run (always at that run's time) that a returning offer is dated from.

`last_seen` is not kept per run, so where a later run moved it, it is put back to the newest
earlier collection that looked for the offer (covered its region) and could have confirmed it:
exact, except for an offer left open unconfirmed (a row of its type unreadable, a price the
validation skipped, spot of the other source's grain), whose `last_seen` comes back newer than
it was. The same holds for market depth, transfer prices and for the types without a GPU
count, which are put back to the last earlier collection (docs/trust.md, "Reparse").
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from storage.writes import open_offers
from storage.writes.derived import rederive

# The provider's collections before `first` that were applied.
_EARLIER = "r.provider = $provider AND r.status = 'ok' AND r.run_id < $first"
_COVERS = """(r.covered IS NULL OR {t}.region IS NULL
    OR list_contains(from_json(r.covered, '["VARCHAR"]'), {t}.region))"""
_SEEN = "coalesce(r.observed_at, r.started_at)"

_REOPENED = f"""
CREATE TEMP TABLE reopened AS
SELECT p.rowid AS row FROM price_intervals p
WHERE p.provider = $provider AND p.run_id < $first AND p.valid_to IS NOT NULL
  AND (p.valid_to >= $since
       OR (EXISTS (SELECT 1 FROM price_intervals g
                   WHERE g.provider = $provider AND g.run_id >= $first
                     AND g.offer_key = p.offer_key AND g.valid_from = p.valid_to)
           AND p.valid_to NOT IN (SELECT {_SEEN} FROM runs r WHERE {_EARLIER})))
"""

_REOPEN = "UPDATE price_intervals SET valid_to = NULL WHERE rowid IN (SELECT row FROM reopened)"
_OPENED_SINCE = "DELETE FROM {table} WHERE provider = $provider AND run_id >= $first"

# The newest earlier collection, from the interval's own opening run on, that covered it.
_LAST_SEEN = """
UPDATE {table} AS p SET last_seen = s.seen
FROM (SELECT q.rowid AS row, max({seen}) AS seen
      FROM {table} q JOIN runs r ON {earlier} AND r.run_id >= q.run_id AND {covers}
      WHERE q.provider = $provider AND q.run_id < $first AND q.last_seen >= $since
      GROUP BY q.rowid) s
WHERE p.rowid = s.row
"""

# Market depth and transfer prices: closed only at a run's time, never by a successor's date.
_SIDE_REOPEN = """UPDATE {table} SET valid_to = NULL
WHERE provider = $provider AND valid_to >= $since"""
_SIDE_TABLES = ("market_depth_intervals", "transfer_intervals")

_UNKNOWN_SINCE = "DELETE FROM unknown_gpu_types WHERE provider = $provider AND first_seen >= $since"
_UNKNOWN_BACK = f"""
UPDATE unknown_gpu_types u SET last_seen = greatest(u.first_seen, l.seen), run_id = l.run_id
FROM (SELECT r.run_id, {_SEEN} AS seen FROM runs r WHERE {_EARLIER}
      ORDER BY r.run_id DESC LIMIT 1) l
WHERE u.provider = $provider AND u.last_seen >= $since
"""

_PER_RUN = ("run_skips", "held_runs")


def truncate(con: Any, provider: str, first: int, since: datetime, replayed: list[int]) -> None:
    """Undo what the `replayed` runs of `provider` (from run `first`, observed `since`, on)
    wrote, as well as it can be known (the module's docstring)."""
    where = {"provider": provider, "first": first}
    con.execute(_REOPENED, {**where, "since": since})
    con.execute(_REOPEN)
    for table in ("price_intervals", *_SIDE_TABLES):
        con.execute(_OPENED_SINCE.format(table=table), where)
        covers = _COVERS.format(t="q")
        last_seen = _LAST_SEEN.format(table=table, seen=_SEEN, earlier=_EARLIER, covers=covers)
        con.execute(last_seen, {**where, "since": since})
    for table in _SIDE_TABLES:
        con.execute(_SIDE_REOPEN.format(table=table), {"provider": provider, "since": since})
    # A reopened interval is current again: its stored columns are those of an open one.
    rederive(con, "p.rowid IN (SELECT row FROM reopened)")
    con.execute("DROP TABLE reopened")
    con.execute(_UNKNOWN_SINCE, {"provider": provider, "since": since})
    con.execute(_UNKNOWN_BACK, {**where, "since": since})
    for table in _PER_RUN:
        con.execute(f"DELETE FROM {table} WHERE list_contains($runs, run_id)", {"runs": replayed})
    open_offers.clear(con, provider)  # the next write finds them from what now stands
