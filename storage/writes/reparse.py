"""`gpu-tracker reparse` in the store: a provider's history from its first replayed run on taken
back (`storage.writes.truncate`), then each of its runs from there merged again, in run order,
at its own time and under its own run id, from what today's parsers make of its kept answers
(docs/trust.md, "Reparse"). One transaction per provider: all of it lands, or none does; a dry
run rolls it back and says what would have changed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from collectors.common import PayloadShapeError
from storage.connection import connect, transaction
from storage.migrations import migrate
from storage.raw import Kept, read_listing
from storage.writes import open_offers
from storage.writes.answer import Answer, Synced, merge_answer
from storage.writes.screened_batch import screen_batch
from storage.writes.suspect import Judge, Suspicion
from storage.writes.truncate import truncate

if TYPE_CHECKING:
    from storage.store import Store

_RUNS = """
SELECT provider, run_id, status, coalesce(observed_at, started_at), raw, covered
FROM runs WHERE status IN ('ok', 'held') ORDER BY provider, run_id
"""

# The runs not replayed yet are set aside under another provider name for the transaction, so
# that every check of the write path (the judge's "last judged answer") sees the provider's
# runs as they stood when each replayed run was first written.
_ASIDE = """UPDATE runs SET provider = $aside
WHERE provider = $provider AND run_id >= $first AND status IN ('ok', 'held')"""
_BACK = """UPDATE runs SET provider = $provider, status = $status, records = $records,
    changed = $changed, error = $error WHERE run_id = $run_id"""

_BEFORE = """CREATE TEMP TABLE reparse_before AS
SELECT offer_key, valid_from, valid_to, last_seen, price_per_hour, upfront_total, available
FROM price_intervals WHERE provider = $provider"""

# Intervals compared by offer and start: one only before is removed, one only after added; in
# both, another price (or upfront, or availability) is repriced, another end or last sighting
# redated.
_DIFF = """
SELECT count(*) FILTER (WHERE b.offer_key IS NULL),
       count(*) FILTER (WHERE a.offer_key IS NULL),
       count(*) FILTER (WHERE a.offer_key IS NOT NULL AND b.offer_key IS NOT NULL
           AND (a.price_per_hour, a.upfront_total, a.available)
               IS DISTINCT FROM (b.price_per_hour, b.upfront_total, b.available)),
       count(*) FILTER (WHERE a.offer_key IS NOT NULL AND b.offer_key IS NOT NULL
           AND (a.price_per_hour, a.upfront_total, a.available)
               IS NOT DISTINCT FROM (b.price_per_hour, b.upfront_total, b.available)
           AND (a.valid_to, a.last_seen) IS DISTINCT FROM (b.valid_to, b.last_seen))
FROM (SELECT * FROM price_intervals WHERE provider = $provider) a
FULL JOIN reparse_before b ON a.offer_key = b.offer_key AND a.valid_from = b.valid_from
"""


@dataclass(frozen=True)
class StoredRun:
    """A run whose answer was written (ok) or held: what a replay needs of it."""

    run_id: int
    status: str  # ok | held
    observed_at: datetime
    kept: list[Kept] | None  # its kept answers in order; None: none kept
    covered: tuple[str, ...] | None  # the regions it covered; None: all of the provider's


@dataclass(frozen=True)
class Rebuilt:
    """What a provider's replay changed (or would have, in a dry run)."""

    provider: str
    first_run: int
    runs: int
    added: int
    removed: int
    repriced: int
    redated: int
    released: int  # held runs applied now (a parser fix)
    held: int  # runs held after the replay
    written: bool  # False: a dry run, rolled back


# What a replayed run's answer is: today's parse of its kept answers (raises StoreError).
Parse = Callable[[StoredRun], Answer]


class Rebuild:
    """A reparse's hold on the store: one connection, its runs read, each provider replayed in
    a transaction of its own."""

    def __init__(self, store: Store, con: Any) -> None:
        self.store = store
        self.con = con
        self.runs: dict[str, list[StoredRun]] = {}
        for provider, run_id, status, observed, raw, covered in con.execute(_RUNS).fetchall():
            regions = None if covered is None else tuple(json.loads(covered))
            kept = None if raw is None else read_listing(raw)
            run = StoredRun(int(run_id), str(status), observed, kept, regions)
            self.runs.setdefault(str(provider), []).append(run)

    def replay(
        self,
        provider: str,
        runs: Sequence[StoredRun],
        parse: Parse,
        suspicion: Suspicion,
        *,
        dry_run: bool,
    ) -> Rebuilt:
        """Replay `runs` (the provider's ok and held runs from the first replayed one on, in run
        order) over the history as it stood before the first; nothing kept when `dry_run`."""
        con, first = self.con, runs[0]
        where = {"provider": provider, "first": first.run_id}
        synced = Synced(self.store.fx_rates, self.store.gpu_facts)
        released = held_after = 0
        with transaction(con, commit=not dry_run):
            con.execute(_BEFORE, {"provider": provider})
            con.execute(_ASIDE, {**where, "aside": f"{provider} (being reparsed)"})
            truncate(con, provider, first.run_id, first.observed_at, [r.run_id for r in runs])
            for run in runs:
                answer = parse(run)
                limits = self.store.limits
                screened, batch = screen_batch(answer.records, limits, observed_at=run.observed_at)
                if answer.records and not screened.records:
                    raise PayloadShapeError(
                        provider, f"run {run.run_id}: no valid price: {screened.summary()}"
                    )
                judge = Judge(provider, suspicion) if run.status == "held" else None
                at = (provider, run.run_id, run.observed_at)
                changed, held = merge_answer(con, at, answer, screened, judge, synced, batch)
                status, error = ("held", held.text) if held else ("ok", None)
                released += run.status == "held" and held is None
                held_after += held is not None
                values = {"status": status, "records": len(screened.records)}
                back = {**values, "changed": changed, "error": error, "run_id": run.run_id}
                con.execute(_BACK, {"provider": provider, **back})
            diff = con.execute(_DIFF, {"provider": provider}).fetchall()[0]
            # Row ids found in this transaction may move when its deletions are checkpointed.
            open_offers.clear(con, provider)
            con.execute("DROP TABLE reparse_before")
        added, removed, repriced, redated = (int(n) for n in diff)
        return Rebuilt(
            provider,
            first.run_id,
            len(runs),
            added,
            removed,
            repriced,
            redated,
            released,
            held_after,
            not dry_run,
        )


@contextmanager
def rebuild(store: Store) -> Iterator[Rebuild]:
    """The store opened for a reparse (waiting for it as a write does), its runs read."""
    from storage.store import WAIT_SETTING

    with connect(
        store.path, read_only=False, wait_s=store.lock_wait_s, wait_setting=WAIT_SETTING
    ) as con:
        migrate(con)
        yield Rebuild(store, con)
