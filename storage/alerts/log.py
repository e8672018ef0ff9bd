"""The alert event log (`alert_event_log`): an alert is a row before it is a message.

Each fired subject becomes one 'pending' row per channel, in the same transaction that moved
its rule's state. A run then claims the rows that are due (a lease: held back from other runs
until it runs out), sends them with the store closed, and marks each 'sent', or bumps its
attempts and pushes `next_attempt_at` back by the wait the caller chose; after the last attempt
it is 'failed', its last (redacted) error kept. What to send and how long to wait is the
caller's; this module only keeps the rows.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from collectors.common import StoreError
from storage.connection import LOCK_WAIT_S, connect, scalar, transaction
from storage.migrations import migrate, migrate_uncommitted
from storage.query import QueryResult

_NEW_EVENTS = pa.schema(
    [
        ("rule", pa.string()),
        ("subject", pa.string()),
        ("value", pa.float64()),
        ("threshold", pa.float64()),
        ("channel", pa.string()),
        ("detail", pa.string()),
        ("facts", pa.string()),
    ]
)
_OUTCOMES = pa.schema([("event_id", pa.int64()), ("error", pa.string()), ("wait_s", pa.float64())])

_INSERT = """
INSERT INTO alert_event_log (event_id, rule, subject, fired_at, value, threshold, channel,
    status, detail, facts, attempts, next_attempt_at)
SELECT nextval('alert_event_ids'), rule, subject, $now, value, threshold, channel, 'pending',
       detail, facts, 0, $now
FROM new_events
"""

_EVENT_COLUMNS = "event_id, rule, subject, fired_at, value, threshold, channel, detail, facts, "
_EVENT_COLUMNS += "attempts"

_CLAIM = f"""
UPDATE alert_event_log SET next_attempt_at = $lease_end
WHERE status = 'pending' AND next_attempt_at <= $now
RETURNING {_EVENT_COLUMNS}
"""

_DUE = f"""
SELECT {_EVENT_COLUMNS} FROM alert_event_log
WHERE status = 'pending' AND next_attempt_at <= $now
"""

_MARK_SENT = """
UPDATE alert_event_log e SET status = 'sent', sent_at = $now, attempts = e.attempts + 1,
    last_error = NULL, next_attempt_at = $now
FROM outcomes o WHERE e.event_id = o.event_id AND o.error IS NULL
"""

_MARK_FAILED = """
UPDATE alert_event_log e
SET attempts = e.attempts + 1, last_error = o.error,
    status = CASE WHEN e.attempts + 1 >= $max_attempts THEN 'failed' ELSE 'pending' END,
    next_attempt_at = $now + to_seconds(o.wait_s)
FROM outcomes o WHERE e.event_id = o.event_id AND o.error IS NOT NULL
"""

_COUNTS = """
SELECT count(*) FILTER (WHERE status = 'pending'),
       count(*) FILTER (WHERE status = 'failed' AND list_contains($ids, event_id))
FROM alert_event_log
"""

_PENDING = """
SELECT channel, count(*) FROM alert_event_log WHERE status = 'pending' GROUP BY channel
"""

_RECENT_COLUMNS = [
    "fired_at",
    "rule",
    "subject",
    "channel",
    "status",
    "attempts",
    "detail",
    "last_error",
]
_RECENT = f"""
SELECT {", ".join(_RECENT_COLUMNS)}
FROM alert_events ORDER BY fired_at DESC, event_id DESC LIMIT $limit
"""
_HAS_ALERTS = "SELECT count(*) FROM duckdb_views() WHERE view_name = 'alert_events'"
_TOTAL = "SELECT count(*) FROM alert_events"


@dataclass(frozen=True)
class NewEvent:
    """An alert for one channel, about to be logged as pending."""

    rule: str
    subject: str
    value: float | None
    threshold: float | None
    channel: str
    detail: str
    facts: dict[str, Any]  # JSON-able; stored as JSON text


@dataclass(frozen=True)
class AlertEvent:
    """One alert for one channel, as stored (and as claimed, or in a dry run seen, for
    sending)."""

    event_id: int
    rule: str
    subject: str
    fired_at: datetime
    value: float | None
    threshold: float | None
    channel: str
    detail: str
    facts: dict[str, Any] = field(default_factory=dict, compare=False)
    attempts: int = 0  # before the send to come


@dataclass(frozen=True)
class SendOutcome:
    """What one send did to one event: `error` None = accepted; else retry after `wait_s`."""

    event_id: int
    error: str | None
    wait_s: float = 0.0


@contextmanager
def session(path: Path | str, *, wait_s: float) -> Iterator[Any]:
    """The store at `path`, opened for writing and migrated, with the block as one transaction;
    a DuckDB error in it becomes a StoreError (everything of the block rolled back)."""
    with connect(path, read_only=False, wait_s=wait_s) as con:
        migrate(con)
        try:
            with transaction(con):
                yield con
        except duckdb.Error as exc:
            raise StoreError(f"alerts: could not update the store: {exc}") from exc


@contextmanager
def dry_session(path: Path | str, *, wait_s: float) -> Iterator[Any]:
    """Like `session`, but the transaction is always rolled back: an old store is migrated
    inside it so rules can be evaluated, and nothing of it (schema, state, events) is kept."""
    with connect(path, read_only=False, wait_s=wait_s) as con:
        try:
            with transaction(con, commit=False):
                migrate_uncommitted(con)
                yield con
        except duckdb.Error as exc:
            raise StoreError(f"alerts: could not evaluate the rules: {exc}") from exc


def record_pending(con: Any, events: Sequence[NewEvent], now: datetime) -> None:
    """Log `events` as pending, due now (in the caller's transaction), in one statement."""
    if not events:
        return
    columns = {name: [getattr(e, name) for e in events] for name in _NEW_EVENTS.names}
    columns["facts"] = [json.dumps(e.facts, sort_keys=True) for e in events]
    con.register("new_events", pa.table(columns, schema=_NEW_EVENTS))
    try:
        con.execute(_INSERT, {"now": now})
    finally:
        con.unregister("new_events")


def claim_due(con: Any, now: datetime, lease: timedelta) -> list[AlertEvent]:
    """The pending events due at `now`, held back from other runs until `now + lease` (a run
    that dies before marking them leaves them due again then)."""
    return _events(con.execute(_CLAIM, {"now": now, "lease_end": now + lease}))


def due(con: Any, now: datetime) -> list[AlertEvent]:
    """The pending events due at `now`, left unclaimed (a dry run)."""
    return _events(con.execute(_DUE, {"now": now}))


def mark(con: Any, outcomes: Sequence[SendOutcome], now: datetime, max_attempts: int) -> None:
    """Record what the sends did (in the caller's transaction): 'sent', or one more attempt,
    due again after its wait, 'failed' once `max_attempts` are spent."""
    if not outcomes:
        return
    table = pa.table(
        {
            "event_id": [o.event_id for o in outcomes],
            "error": [o.error for o in outcomes],
            "wait_s": [o.wait_s for o in outcomes],
        },
        schema=_OUTCOMES,
    )
    con.register("outcomes", table)
    try:
        con.execute(_MARK_SENT, {"now": now})
        con.execute(_MARK_FAILED, {"now": now, "max_attempts": max_attempts})
    finally:
        con.unregister("outcomes")


def pending_per_channel(con: Any) -> dict[str, int]:
    """How many events are pending per channel (due now or later)."""
    return {str(c): int(n) for c, n in con.execute(_PENDING).fetchall()}


def pending_and_failed(con: Any, event_ids: Sequence[int]) -> tuple[int, int]:
    """All pending events, and how many of `event_ids` are 'failed' (out of attempts)."""
    pending, failed = con.execute(_COUNTS, {"ids": list(event_ids)}).fetchall()[0]
    return int(pending), int(failed)


def recent(path: Path | str, limit: int, *, wait_s: float = LOCK_WAIT_S) -> tuple[QueryResult, int]:
    """The `limit` latest rows of `alert_events`, newest first, and how many there are in all;
    none in a store from before alerts, or no store yet. Read-only: safe while others write."""
    empty = QueryResult(_RECENT_COLUMNS, [], [])
    if not Path(path).exists():
        return empty, 0
    with connect(path, read_only=True, wait_s=wait_s) as con:
        return recent_on(con, limit)


def recent_on(con: Any, limit: int) -> tuple[QueryResult, int]:
    """`recent` on a connection the caller opened (the dashboard's sandboxed one)."""
    try:
        if not scalar(con, _HAS_ALERTS):
            return QueryResult(_RECENT_COLUMNS, [], []), 0
        cursor = con.execute(_RECENT, {"limit": limit})
        rows = cursor.fetchall()
        types = [str(d[1]) for d in cursor.description]
        total = int(scalar(con, _TOTAL))
    except duckdb.Error as exc:
        raise StoreError(f"alerts: could not read the alert log: {exc}") from exc
    return QueryResult(list(_RECENT_COLUMNS), types, rows), total


def _events(cursor: Any) -> list[AlertEvent]:
    events = [
        AlertEvent(
            event_id=row[0],
            rule=row[1],
            subject=row[2],
            fired_at=row[3],
            value=row[4],
            threshold=row[5],
            channel=row[6],
            detail=row[7],
            facts=json.loads(row[8]),
            attempts=row[9],
        )
        for row in cursor.fetchall()
    ]
    # RETURNING has no order: sorted, so a batch reads the same on every run.
    return sorted(events, key=lambda e: (e.channel, e.fired_at, e.event_id))
