"""What the store knows of each provider's collection runs: the history the daemon plans its
start from, the newest run `gpu-tracker status` shows, one run's raw answers (`gpu-tracker
runs`) and which kept answers the recent runs still name (their retention).

Read from the `runs` table (the rows behind the `collection_runs` view). Skipped runs (no
credentials) neither count as failures nor clear them.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb

from collectors.common import StoreError
from storage.connection import LOCK_WAIT_S
from storage.raw import Kept, read_listing
from storage.reads.sandbox import bounded
from storage.session import session

# Per provider: failed runs since its last good one, when its last run that was not a skip
# ended, when its last good one ended, and the status of its newest run.
_HISTORY = """
WITH last_ok AS (
    SELECT provider, max(started_at) AS started,
           max(coalesce(finished_at, started_at)) AS ended
    FROM runs WHERE status = 'ok' GROUP BY provider
)
SELECT r.provider,
       count(*) FILTER (WHERE r.status = 'failed'
                        AND r.started_at > coalesce(o.started, TIMESTAMPTZ '1970-01-01')),
       max(coalesce(r.finished_at, r.started_at)) FILTER (WHERE r.status <> 'skipped'),
       any_value(o.ended),
       arg_max(r.status, (r.started_at, r.run_id))
FROM runs r LEFT JOIN last_ok o USING (provider)
GROUP BY r.provider
"""

# The newest run of each provider, and the end of its newest good one.
_LATEST = """
SELECT provider,
       arg_max(coalesce(finished_at, started_at), (started_at, run_id)),
       arg_max(status, (started_at, run_id)),
       arg_max(records, (started_at, run_id)),
       arg_max(changed, (started_at, run_id)),
       arg_max(error, (started_at, run_id)),
       max(coalesce(finished_at, started_at)) FILTER (WHERE status = 'ok')
FROM runs
GROUP BY provider
"""

# Which of the answers $among (SHA-256s) a run started since $since lists.
_NAMED = """
SELECT DISTINCT sha256 FROM (
    SELECT unnest(json_extract_string(raw, '$[*].sha256')) AS sha256
    FROM runs WHERE raw IS NOT NULL AND started_at >= $since
) WHERE list_contains($among, sha256)
"""


@dataclass(frozen=True)
class History:
    """A provider's runs as the daemon needs them at its start."""

    failures: int = 0  # failed runs in a row, since its last good one
    last_run_end: datetime | None = None  # its last run that was not a skip
    last_ok_end: datetime | None = None
    last_status: str | None = None  # of its newest run: ok | failed | skipped; None: never ran


@dataclass(frozen=True)
class LastRun:
    """A provider's newest run, and when its newest good one ended."""

    ended: datetime
    status: str  # ok | failed | skipped
    records: int
    changed: int
    error: str | None
    last_ok: datetime | None


def history(
    path: Path | str,
    *,
    lock: AbstractContextManager[Any] | None = None,
    wait_s: float = LOCK_WAIT_S,
) -> dict[str, History]:
    """Per provider that ever ran. The store is created and migrated if need be (a daemon's
    start: a broken store fails there, not at the first job), under `lock`."""
    with session(path, lock=lock, wait_s=wait_s) as con:
        try:
            rows = con.execute(_HISTORY).fetchall()
        except duckdb.Error as exc:
            raise StoreError(f"cannot read collection_runs: {exc}") from exc
    return {str(p): History(int(n), end, ok, status) for p, n, end, ok, status in rows}


def latest(
    path: Path | str, *, wait_s: float = LOCK_WAIT_S, timeout_s: float | None = None
) -> dict[str, LastRun]:
    """Per provider that ever ran, read-only (an empty dict when there is no store yet);
    stopped after `timeout_s` seconds (QueryStopped), as every read command is."""
    if not Path(path).exists():
        return {}
    with bounded(path, timeout_s, wait_s=wait_s) as con:
        return latest_on(con)


def latest_on(con: Any) -> dict[str, LastRun]:
    """`latest` on a connection the caller opened (the dashboard's sandboxed one)."""
    try:
        rows = con.execute(_LATEST).fetchall()
    except duckdb.Error as exc:
        raise StoreError(f"cannot read collection_runs: {exc}") from exc
    return {str(row[0]): LastRun(*row[1:]) for row in rows}


@dataclass(frozen=True)
class Run:
    """One run and the answers it kept, in the order received ([] when none were kept)."""

    run_id: int
    provider: str
    status: str
    started_at: datetime
    answers: list[Kept]


def run(
    path: Path | str, run_id: int, *, wait_s: float = LOCK_WAIT_S, timeout_s: float | None = None
) -> Run | None:
    """The run `run_id`, read-only; None when the store has no such run (or no store)."""
    if not Path(path).exists():
        return None
    with bounded(path, timeout_s, wait_s=wait_s) as con:
        try:
            row = con.execute(
                "SELECT provider, status, started_at, raw FROM runs WHERE run_id = ?", [run_id]
            ).fetchone()
        except duckdb.Error as exc:
            raise StoreError(f"cannot read collection_runs: {exc}") from exc
    if row is None:
        return None
    return Run(run_id, str(row[0]), str(row[1]), row[2], read_listing(row[3]))


def named_since(con: Any, since: datetime, among: Sequence[str]) -> set[str]:
    """Which of the kept answers `among` (SHA-256s) a run started at or after `since` lists,
    on a connection the caller opened."""
    if not among:
        return set()
    try:
        rows = con.execute(_NAMED, {"since": since, "among": list(among)}).fetchall()
    except duckdb.Error as exc:
        raise StoreError(f"cannot read collection_runs: {exc}") from exc
    return {str(sha256) for (sha256,) in rows}
