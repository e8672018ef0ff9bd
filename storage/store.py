"""The price store: one provider's collection written in one transaction, failed and skipped
runs recorded, the [fx] rates kept. How a collection merges into the change-only history is
`storage.merge`; this module turns records into the Arrow table it reads and owns the file.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb

from collectors.base import InterruptionBand, MarketDepth, PriceRecord, TransferRate
from collectors.common import PayloadShapeError, StoreError
from storage.connection import StoreDamaged, connect, scalar, transaction
from storage.fx import FxRate, GpuFact
from storage.migrations import migrate
from storage.raw import Kept, listing
from storage.writes.answer import Answer, Synced, merge_answer
from storage.writes.batch import to_arrow as to_arrow
from storage.writes.compact import Compacted
from storage.writes.compact import compact as compact_history
from storage.writes.screened_batch import screen_batch
from storage.writes.space import refused_write
from storage.writes.suspect import Judge, Suspicion
from storage.writes.unrecorded import Backlog, Unrecorded, insert_written
from storage.writes.unrecorded import insert as insert_run
from storage.writes.validate import PriceLimits

DEFAULT_PATH = Path("prices.duckdb")
# What gives a write its wait for the store, named when it waits and when the wait runs out.
WAIT_SETTING = "[storage] write_wait"


@dataclass(frozen=True)
class RunResult:
    run_id: int
    records: int
    changed: int  # intervals opened plus offers withdrawn
    # Prices the validation refused, by reason ("zero after rounding": 2); none of them stored.
    skipped: Counter[str] = field(default_factory=Counter)
    # Held (nothing stored), or applied though suspect: why (storage.writes.suspect).
    held: str | None = None
    suspect: str | None = None


class Store:
    """The DuckDB price store. Opens the file for each write and closes it at once."""

    def __init__(
        self,
        path: Path | str = DEFAULT_PATH,
        *,
        lock_wait_s: float = 120.0,
        fx_rates: Sequence[FxRate] | None = None,
        gpu_facts: Sequence[GpuFact] | None = None,
        limits: PriceLimits | None = None,
    ) -> None:
        # A reader holds the file too while its query runs: a writer waits longer than a
        # reader would, so a slow `gpu-tracker sql` does not cost a collection.
        self.path = Path(path)
        self.lock_wait_s = lock_wait_s
        # The [fx] rates to keep in the store, synced with every write (None: leave them be).
        self.fx_rates = fx_rates
        # The GPU table's throughput for the FLOPs-per-dollar columns, synced likewise.
        self.gpu_facts = gpu_facts
        # What a storable price is (storage.writes.validate); the [fx] rates set the ceiling
        # of a currency they name.
        newest = {r.currency: r.usd_per_unit for r in sorted(fx_rates or (), key=_as_of)}
        self.limits = (limits or PriceLimits()).with_rates(newest)
        # Failed runs the store could not take when they ended, written with the next write.
        self.backlog = Backlog()

    def migrate(self) -> list[int]:
        with _writing(""), self._open() as con:
            return migrate(con)

    def compact(self, *, spread_over: int | None = None) -> Compacted | None:
        """Lay the history out again so current prices are read from few row groups
        (`storage.writes.compact`), holding the store as a write does; with `spread_over`,
        only when the open intervals lie in more than that many row groups (else None)."""
        with _writing("compact: ", lost="; the history is as it was"), self._open() as con:
            migrate(con)
            return compact_history(con, spread_over=spread_over)

    def _open(self) -> AbstractContextManager[Any]:
        return connect(
            self.path, read_only=False, wait_s=self.lock_wait_s, wait_setting=WAIT_SETTING
        )

    def write_run(
        self,
        provider: str,
        records: Sequence[PriceRecord],
        *,
        started_at: datetime,
        observed_at: datetime,
        regions: Sequence[str] | None,
        interval_seconds: int | None = None,
        keep_open: Collection[str] = (),
        interruption: Sequence[InterruptionBand] | None = None,
        spot_zoned: bool | None = None,
        market: Sequence[MarketDepth] | None = None,
        unknown: Collection[str] = (),
        transfer: Sequence[TransferRate] | None = None,
        suspicion: Suspicion | None = None,
        raw: Sequence[Kept] | None = None,
    ) -> RunResult:
        """Merge one provider's collection into the history: all of it lands, or none does.

        `regions` are the regions the collection covered (None: all of the provider's), so an
        offer is closed as withdrawn only where the collection looked for it. Offers of the
        instance types in `keep_open` (a row of theirs could not be read) are never closed as
        withdrawn: unconfirmed, they show as stale until a collection reads them again.

        Every record is validated first (`storage.writes.validate`): an invalid one is skipped,
        counted in the result and in `collection_runs`, and its offer kept open like an
        unreadable row's. A collection none of whose prices is valid stores nothing.

        `interruption` (spot interruption bands) replaces the provider's stored bands in the
        same transaction; None leaves them as they are. `spot_zoned` says the grain of this
        collection's spot prices (True per zone, False per region; None: the provider has one):
        spot offers of the other grain, another source's, are not closed as withdrawn.
        `market` (a marketplace's offer counts per group) goes into their change-only history
        (`storage.writes.market`), in the same transaction. `unknown` (instance types the
        answer listed with no GPU count, none of their prices stored) are noted for
        `gpu-tracker gpus --unknown` (`storage.writes.unknown_types`), likewise. `transfer`
        (what moving data out costs, per tier) goes into its change-only history
        (`storage.writes.transfer`); None leaves the stored tiers as they are.

        With `suspicion`, an answer that would rewrite the history is held
        (`storage.writes.suspect`): nothing of it is stored but its `held` run.

        `raw` lists the answers the collection received, as `storage.raw` kept them; the run
        row keeps that list and the `regions` it covered, for `gpu-tracker reparse`.
        """
        screened, batch = screen_batch(records, self.limits, observed_at=observed_at)
        if records and not screened.records:
            raise PayloadShapeError(provider, f"no valid price in the answer: {screened.summary()}")
        answer = Answer(
            records, regions, keep_open, interruption, spot_zoned, market, unknown, transfer
        )
        synced = Synced(self.fx_rates, self.gpu_facts)
        with _writing(f"{provider}: could not store the collection: "), self._open() as con:
            migrate(con)
            try:
                with transaction(con):
                    _refuse_out_of_order(con, provider, observed_at)
                    run_id = int(scalar(con, "SELECT nextval('run_ids')"))
                    judge = Judge(provider, suspicion) if suspicion else None
                    run = (provider, run_id, observed_at)
                    changed, held = merge_answer(con, run, answer, screened, judge, synced, batch)
                    status, error = ("held", held.text) if held else ("ok", None)
                    values = (status, len(screened.records), changed, error, interval_seconds)
                    answered = (observed_at, listing(raw), regions)
                    insert_written(con, run_id, provider, started_at, values, answered)
                    kept = self.backlog.write(con)
            except duckdb.Error as exc:
                if refused_write(exc) is not None:
                    raise  # said by _writing, in one line
                raise StoreError(f"{provider}: could not store the collection: {exc}") from exc
            except StoreError as exc:
                raise StoreError(f"{provider}: could not store the collection: {exc}") from exc
        self.backlog.written(kept)
        suspect = (judge.agreed or judge.accepted) if judge else None
        return RunResult(
            run_id,
            len(screened.records),
            changed,
            screened.skipped,
            held.text if held else None,
            suspect.text if suspect else None,
        )

    def open_offers(self, provider: str, regions: Sequence[str] | None) -> int:
        """How many offers of `provider` are current in `regions` (None: anywhere)."""
        if not self.path.exists():
            return 0
        # Read-write like every other connection of this process: DuckDB refuses two
        # configurations of one file in one process.
        with (
            _writing(f"{provider}: could not read its open offers: ", lost=""),
            self._open() as con,
        ):
            migrate(con)
            return int(
                scalar(
                    con,
                    "SELECT count(*) FROM price_intervals WHERE provider = $provider"
                    " AND valid_to IS NULL AND ($all OR list_contains($regions, region))",
                    {"provider": provider, "all": regions is None, "regions": list(regions or [])},
                )
            )

    def record_run(
        self,
        provider: str,
        status: str,
        *,
        started_at: datetime,
        error: str | None = None,
        records: int = 0,
        interval_seconds: int | None = None,
        raw: Sequence[Kept] | None = None,
    ) -> int:
        """Record a failed or skipped run (nothing of its prices is stored; `raw`: the answers
        a failed parse kept). When the store cannot take it now, the run is kept for this
        Store's next write (StoreError still)."""
        at, listed = datetime.now(UTC), listing(raw)  # at: when it ended
        run = Unrecorded(provider, status, started_at, at, records, error, interval_seconds, listed)
        try:
            with _writing("", lost=""), self._open() as con:
                migrate(con)
                with transaction(con):
                    kept = self.backlog.write(con)
                    run_id = insert_run(con, run)
        except StoreDamaged:
            raise
        except StoreError:
            self.backlog.keep(run)
            raise
        self.backlog.written(kept)
        return run_id


@contextmanager
def _writing(prefix: str, lost: str = "; nothing of it was stored") -> Iterator[None]:
    """A write the disk refused (full, over quota) as one StoreError line: `prefix`, the cause
    and the file. DuckDB has rolled the transaction back and the connection is closed, so
    nothing of the write is in the store (docs/daemon.md, "Full disks")."""
    try:
        yield
    except StoreDamaged:
        raise
    except (duckdb.Error, StoreError, OSError) as exc:
        line = refused_write(exc)
        if line is None:
            if isinstance(exc, StoreError):
                raise
            raise StoreError(f"{prefix}{exc}") from exc
        raise StoreError(f"{prefix}{line}{lost}") from exc


def _as_of(rate: FxRate) -> Any:
    return rate.as_of


def _refuse_out_of_order(con: Any, provider: str, observed_at: datetime) -> None:
    """Two collections of one provider that commit out of order (the daemon and a manual
    `collect` started side by side) would interleave their observations into overlapping
    intervals. The older one is refused: the newer one already holds fresher prices."""
    newest = scalar(
        con,
        "SELECT max(observed_at) FROM runs WHERE provider = $provider AND status = 'ok'",
        {"provider": provider},
    )
    if newest is not None and observed_at < newest:
        raise StoreError(
            f"a newer collection of {provider} (observed {newest:%Y-%m-%d %H:%M:%S} UTC) was"
            f" stored meanwhile; this one (observed {observed_at:%Y-%m-%d %H:%M:%S} UTC) is"
            " dropped so the history stays in order"
        )
