"""The change-only merge: one provider's collection (the Arrow table `batch`) into its history.

A price confirmed again extends `last_seen` (and takes the GPU and host facts the collection
gives, where they were corrected: `storage.writes.corrections`); a changed price closes the
open interval and opens a new one; an offer missing from a collection that covered its region
(every collection covers the offers of no region) is closed, unless a row of its instance type
could not be read; a provider's own timestamp (spot history) starts its interval, never before
the end of a closed one. Everything is set-based SQL: no row-by-row statements.

Most offers take a fast path: about 98 % of them are confirmed unchanged each hour (one UPDATE
extends their `last_seen`), and a brand-new offer with one price opens its interval with one
INSERT. Only the offers that changed, or that bring several points of their own history (AWS
and Alibaba spot), are put in sequence by window functions (`storage.writes.sequence`), the
sort that would otherwise cost most of a write.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import pyarrow as pa

from collectors.common import StoreError
from storage.connection import scalar
from storage.writes import open_offers
from storage.writes.corrections import FACTS, correct_facts
from storage.writes.derived import rederive
from storage.writes.sequence import OPENED, sequence_the_rest

# The offer's identity as one string: NULL parts become '' so they compare as values.
_OFFER_KEY = """concat_ws('|', provider, region, coalesce(zone, ''), instance_type, price_kind,
    coalesce(CAST(term_months AS VARCHAR), ''), coalesce(payment_option, ''),
    coalesce(offering_class, ''), currency)"""

# Incoming price points (no provider timestamp = observed now), narrow: what the merge compares.
# `row` finds the rest of a point in `batch` when its interval is opened.
_STAGE_INCOMING = f"""
CREATE TEMP TABLE incoming AS
SELECT row, {_OFFER_KEY} AS offer_key, coalesce(effective_at, $observed) AS ts,
       price_per_hour, upfront_total, available, {FACTS} AS facts
FROM batch
"""

# Two prices for one offer at one moment would be a collector bug: refuse rather than guess.
# Counted first on a hash of the pair (cheaper than the pair); only when that finds a repeat,
# which may be a collision, is it counted exactly.
_REPEATS_HASHED = """
SELECT count(*) - count(DISTINCT hash(offer_key, ts)) FROM incoming
"""
_DUPLICATE_POINTS = """
SELECT count(*) - count(DISTINCT (offer_key, ts)) FROM incoming
"""

# The provider's open intervals, read once, from where they are kept apart for the write
# (`storage.writes.open_offers`), not from row groups all over the history. `row` is where each
# lies in price_intervals: the updates below find their rows by it instead of matching offer
# keys over the whole history (`open_offers.check` has made sure they are the open intervals'
# row ids). The offer's region, zone, type and kind are what the held check scopes by
# (`storage.writes.suspect`).
_STAGE_OPEN = """
CREATE TEMP TABLE open_now AS
SELECT row, offer_key, price_per_hour, upfront_total, available, valid_from, facts, region,
       zone, instance_type, price_kind
FROM open_offers
WHERE provider = $provider
"""

# An offer whose intervals are all closed (withdrawn) and that comes back with a provider
# timestamp from before the last one ended (AWS spot history: "this price since <earlier>")
# would overlap history already recorded. Its return is dated from that end instead, with the
# newest of the points at or before it; points after it stand as they are.
# (Looked up only when some offer has no open interval, and only for those.)
_STAGE_CLOSED = """
CREATE TEMP TABLE closed_end AS
SELECT p.offer_key, max(p.valid_to) AS last_end
FROM price_intervals p SEMI JOIN paths s ON p.offer_key = s.offer_key AND NOT s.is_open
WHERE p.provider = $provider
GROUP BY p.offer_key
"""

_DROP_SUPERSEDED = """
DELETE FROM incoming i USING closed_end c
WHERE i.offer_key = c.offer_key AND i.ts < c.last_end
  AND EXISTS (SELECT 1 FROM incoming j
              WHERE j.offer_key = i.offer_key AND j.ts > i.ts AND j.ts <= c.last_end)
"""

_DATE_FROM_CLOSED = """
UPDATE incoming i SET ts = c.last_end
FROM closed_end c WHERE i.offer_key = c.offer_key AND i.ts < c.last_end
"""

# What a change is: the price, the upfront part, or the provider's word on capacity.
_SAME_STATE = """(i.price_per_hour, i.upfront_total, i.available)
    IS NOT DISTINCT FROM (o.price_per_hour, o.upfront_total, o.available)"""

# The path of each offer the run saw. 'same': it has an open interval and the run confirms it,
# exactly when the sequence (`storage.writes.sequence`) would keep that interval alone: every
# point after its start has its state, or (no point after its start) the newest point has.
# 'new': no open interval and one point, which the sequence would open as it is. 'sequence':
# everything else. (Staged before a returning offer's points are dated from its withdrawal:
# that changes neither an offer's open interval nor whether it has one point.)
_STAGE_PATHS = f"""
CREATE TEMP TABLE paths AS
SELECT i.offer_key, o.valid_from IS NOT NULL AS is_open,
       CASE WHEN o.valid_from IS NOT NULL AND coalesce(
                bool_and({_SAME_STATE}) FILTER (WHERE i.ts > o.valid_from),
                arg_max({_SAME_STATE}, i.ts)) THEN 'same'
            WHEN o.valid_from IS NULL AND count(*) = 1 THEN 'new'
            ELSE 'sequence' END AS path,
       arg_max(i.facts, i.ts) IS DISTINCT FROM o.facts AS refact, arg_max(i.row, i.ts) AS newest,
       arg_max(i.price_per_hour, i.ts) AS newest_price
FROM incoming i LEFT JOIN open_now o USING (offer_key)
GROUP BY i.offer_key, o.valid_from, o.facts
"""

# How many offers take each way, so that a way no offer takes costs no statement: offers with
# no open interval (new, or back after a withdrawal), new ones with one point, confirmed ones
# whose facts differ, the ones to put in sequence, and open offers the run did not name (the
# only ones a withdrawal may close: with none, its scan of the history is skipped).
_TALLY = """
SELECT count(*) FILTER (WHERE NOT is_open), count(*) FILTER (WHERE path = 'new'),
       count(*) FILTER (WHERE path = 'same' AND refact), count(*) FILTER (WHERE path = 'sequence'),
       (SELECT count(*) FROM open_now o ANTI JOIN paths s USING (offer_key))
FROM paths
"""

_EXTEND_CONFIRMED = """
UPDATE price_intervals SET last_seen = $observed
WHERE rowid IN (SELECT o.row FROM open_now o JOIN paths s USING (offer_key) WHERE s.path = 'same')
"""

# A new offer with one point: its interval opened as it is.
_OPEN_NEW = f"""
INSERT INTO price_intervals BY NAME
SELECT {OPENED}, i.ts AS valid_from, NULL AS valid_to
FROM incoming i JOIN paths s ON i.offer_key = s.offer_key AND s.path = 'new'
JOIN picked b ON b.row = i.row
"""

_NEW_ROWS = """
SELECT i.row FROM incoming i JOIN paths s ON i.offer_key = s.offer_key AND s.path = 'new'
"""

# An open interval that no offer of this run names: withdrawn, where the run looked for it. An
# offer of no region (a type listed but sold out everywhere, a price no region names) is looked
# for by every collection of its provider, whatever regions it asked: the answer lists them all.
_CLOSE_WITHDRAWN = """
UPDATE price_intervals AS p
SET valid_to = $observed
WHERE p.rowid IN (SELECT o.row FROM open_now o ANTI JOIN paths s USING (offer_key))
  AND ($all_regions OR p.region IS NULL OR list_contains($regions, p.region))
  AND NOT list_contains($keep_open, p.instance_type)
  -- Spot of the other grain (per zone, per region) is another source's: not looked for.
  AND NOT coalesce(p.price_kind = 'spot' AND (p.zone IS NOT NULL) <> $spot_zoned, false)
"""

# A closed interval's rate is dated by its end; a US-dollar one has no rate, so its stored
# columns stand as they were (rewriting them cost every write with changes a rewrite of those
# columns across the history's row groups when the store checkpoints).
_CLOSED_HERE = (
    "p.rowid IN (SELECT row FROM open_now) AND p.valid_to IS NOT NULL AND p.currency <> 'USD'"
)
_TOUCHED_HERE = "p.rowid IN (SELECT row FROM open_now) OR p.run_id = $run_id"

# A check of the staged answer against the open offers before anything changes
# (`storage.writes.suspect`): True holds the answer, and the merge stops there. It gets the
# withdrawal's scope and `unnamed`, how many open offers the answer does not name.
Judge = Callable[[Any, dict[str, Any]], bool]

_STAGED = ("incoming", "open_now", "closed_end", "paths", "refacts", "changing", "sequence")


def merge(
    con: Any,
    batch: pa.Table,
    params: dict[str, Any],
    run_id: int,
    regions: Sequence[str] | None,
    keep_open: list[str],
    spot_zoned: bool | None = None,
    judge: Judge | None = None,
) -> int | None:
    """Merge one provider's collection (in the store's Arrow schema) into its history, in the
    caller's transaction; the number of intervals opened plus offers withdrawn. `spot_zoned`
    (True: this collection prices spot per zone, False: per region) leaves the provider's spot
    offers of the other grain open: another source's, not withdrawn. `judge` sees the answer
    staged beside the open offers first; when it holds the answer, nothing changes (None)."""
    rows = pa.array(range(batch.num_rows), pa.int64())
    batch = batch.append_column("row", rows)
    con.register("batch", batch)
    # On an error the caller's rollback takes the staged tables and closes the connection.
    changed = _merge(con, batch, params, run_id, regions, keep_open, spot_zoned, judge)
    # The intervals this write closed or opened store their computed columns (storage.views):
    # a closed one's rate is dated by its end, which may be before the day it was stored open.
    # (A write that changed nothing closed and opened nothing: most of a steady day's.)
    if changed:
        rederive(con, _CLOSED_HERE, _TOUCHED_HERE, {"run_id": run_id})
        open_offers.closed(con, "SELECT row FROM open_now")
        open_offers.opened(con, params["provider"], run_id)
    for table in _STAGED:
        con.execute(f"DROP TABLE IF EXISTS {table}")
    for name in ("batch", "picked"):
        con.unregister(name)
    return changed


def _merge(
    con: Any,
    batch: pa.Table,
    params: dict[str, Any],
    run_id: int,
    regions: Sequence[str] | None,
    keep_open: list[str],
    spot_zoned: bool | None,
    judge: Judge | None,
) -> int | None:
    observed = {"observed": params["observed"]}
    provider = {"provider": params["provider"]}
    open_offers.check(con, params["provider"])
    con.execute(_STAGE_INCOMING, observed)
    duplicates = scalar(con, _REPEATS_HASHED) and scalar(con, _DUPLICATE_POINTS)
    if duplicates:
        raise StoreError(
            f"{duplicates} records repeat an offer at the same moment with another price"
        )
    con.execute(_STAGE_OPEN, provider)
    con.execute(_STAGE_PATHS)
    back, new, refacts, sequenced, unnamed = con.execute(_TALLY).fetchall()[0]
    scope = {
        "observed": params["observed"],
        "all_regions": regions is None,
        "regions": list(regions or []),
        "keep_open": keep_open,
        "spot_zoned": spot_zoned,
    }
    if judge is not None and judge(con, {**scope, "unnamed": unnamed}):
        return None
    withdrawn = scalar(con, _CLOSE_WITHDRAWN, scope) if unnamed else 0
    if back:  # new or back: few if any
        _date_returns(con, provider)
    con.execute(_EXTEND_CONFIRMED, observed)
    pick = partial(_pick, con, batch)
    if refacts:
        correct_facts(con, pick)
        open_offers.refacted(con, "SELECT row FROM refacts")
    opened = 0
    if new:
        pick(_NEW_ROWS)
        opened += scalar(con, _OPEN_NEW, {**observed, "run_id": run_id})
    if sequenced:
        opened += sequence_the_rest(con, observed, run_id, pick)
    return int(opened) + int(withdrawn)


def _date_returns(con: Any, provider: dict[str, Any]) -> None:
    """Date the points of offers coming back from before their withdrawal from its end."""
    con.execute(_STAGE_CLOSED, provider)
    if scalar(con, "SELECT count(*) FROM closed_end"):  # usually none: skip two statements
        con.execute(_DROP_SUPERSEDED)
        con.execute(_DATE_FROM_CLOSED)


def _pick(con: Any, batch: pa.Table, rows_sql: str) -> None:
    """Register as `picked` the rows of the batch whose numbers `rows_sql` selects."""
    rows = con.sql(rows_sql).to_arrow_table().column(0)
    con.register("picked", batch.take(rows))
