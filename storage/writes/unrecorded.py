"""Runs that ended when the store could not take their record (held past the write's wait by
another process, a full disk): kept in memory and written by the process's next write that
gets in, so a failure the daemon met is never lost from `collection_runs`."""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from storage.connection import scalar

_INSERT = (
    "INSERT INTO runs (run_id, provider, started_at, finished_at, status, records, changed,"
    " error, interval_seconds, raw) VALUES (?, ?, ?, ?, ?, ?, 0, ?, ?, ?)"
)


_INSERT_WRITTEN = (
    "INSERT INTO runs (run_id, provider, started_at, finished_at, status, records, changed,"
    " error, interval_seconds, observed_at, raw, covered)"
    " VALUES (?, ?, ?, now(), ?, ?, ?, ?, ?, ?, ?, ?)"
)


def insert_written(
    con: Any,
    run_id: int,
    provider: str,
    started_at: datetime,
    values: tuple[str, int, int, str | None, int | None],
    answered: tuple[datetime, str | None, Sequence[str] | None],
) -> None:
    """The run row of a written (or held) answer: (status, records, changed, error, interval)
    and (observed_at, its raw listing, the regions it covered; None: all)."""
    observed_at, raw, regions = answered
    covered = None if regions is None else json.dumps(list(regions))
    con.execute(_INSERT_WRITTEN, [run_id, provider, started_at, *values, observed_at, raw, covered])


@dataclass(frozen=True)
class Unrecorded:
    provider: str
    status: str
    started_at: datetime
    finished_at: datetime
    records: int
    error: str | None
    interval_seconds: int | None
    raw: str | None = None  # the answers a failed parse kept, as `collection_runs.raw` lists them


def insert(con: Any, run: Unrecorded) -> int:
    """Insert `run` into `runs` on `con`; its run id."""
    run_id = int(scalar(con, "SELECT nextval('run_ids')"))
    con.execute(
        _INSERT,
        [
            run_id,
            run.provider,
            run.started_at,
            run.finished_at,
            run.status,
            run.records,
            run.error,
            run.interval_seconds,
            run.raw,
        ],
    )
    return run_id


@dataclass
class Backlog:
    """The runs a Store could not record yet, oldest first."""

    runs: list[Unrecorded] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def keep(self, run: Unrecorded) -> None:
        with self.lock:
            self.runs.append(run)

    def write(self, con: Any) -> int:
        """Insert the kept runs on `con` (in the caller's transaction, which commits them or
        rolls them back with its own write); how many. Kept until `written` says it held."""
        with self.lock:
            pending = list(self.runs)
        for run in pending:
            insert(con, run)
        return len(pending)

    def written(self, count: int) -> None:
        """The first `count` kept runs are in the store now."""
        with self.lock:
            del self.runs[:count]
