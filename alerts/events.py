"""The alert event log: an alert is a row before it is a message.

Each fired subject becomes one 'pending' row per channel, in the same transaction that moved
its rule's state. A run then claims the rows that are due, sends them with the store closed,
and marks each 'sent', or bumps its attempts and pushes `next_attempt_at` back (exponential,
capped); after the last attempt it is 'failed', its last (redacted) error kept.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import pyarrow as pa

from alerts.evaluate import Fired
from alerts.message import detail, facts
from alerts.notify import AlertEvent
from alerts.settings import RetryPolicy

# While a run sends, its claimed rows are not due for anyone else; if the run dies before it
# records the outcome, they come due again once this has passed.
CLAIM_LEASE = timedelta(minutes=15)

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
_OUTCOMES = pa.schema([("event_id", pa.int64()), ("error", pa.string()), ("wait_s", pa.float64())])


@dataclass(frozen=True)
class Outcome:
    """What one send did to one event: error None = the channel accepted it."""

    event_id: int
    attempts: int  # before this one
    error: str | None = None
    retry_after_s: float | None = None  # how long the channel asked us to wait


def new_events(fired: Sequence[Fired], now: datetime) -> list[AlertEvent]:
    """The events the fired subjects make, one per channel of their rule (not yet stored)."""
    events = []
    for f in fired:
        fact = facts(f.rule, f.row)
        for channel in f.rule.channels:
            events.append(
                AlertEvent(
                    0,
                    f.rule.name,
                    f.subject,
                    now,
                    f.row["value"],
                    f.row["threshold"],
                    channel,
                    detail(fact),
                    fact,
                )
            )
    return events


def record(con: Any, events: Sequence[AlertEvent], now: datetime) -> None:
    """Store `events` as pending, due now (in the caller's transaction)."""
    if not events:
        return
    columns = {name: [getattr(e, name) for e in events] for name in _NEW_EVENTS.names}
    columns["facts"] = [json.dumps(e.facts, sort_keys=True) for e in events]
    con.register("new_events", pa.table(columns, schema=_NEW_EVENTS))
    try:
        con.execute(_INSERT, {"now": now})
    finally:
        con.unregister("new_events")


def claim_due(con: Any, now: datetime) -> list[AlertEvent]:
    """The pending events due at `now`, held back from other runs for CLAIM_LEASE."""
    return _events(con.execute(_CLAIM, {"now": now, "lease_end": now + CLAIM_LEASE}))


def due(con: Any, now: datetime) -> list[AlertEvent]:
    """The pending events due at `now`, untouched (for a dry run)."""
    return _events(con.execute(_DUE, {"now": now}))


def mark(con: Any, outcomes: Sequence[Outcome], now: datetime, policy: RetryPolicy) -> None:
    """Record what the sends did (in the caller's transaction)."""
    if not outcomes:
        return
    # The backoff, unless the channel asked for a longer wait (Slack's Retry-After).
    waits = [max(policy.delay_s(o.attempts + 1), o.retry_after_s or 0) for o in outcomes]
    table = pa.table(
        {
            "event_id": [o.event_id for o in outcomes],
            "error": [o.error for o in outcomes],
            "wait_s": waits,
        },
        schema=_OUTCOMES,
    )
    con.register("outcomes", table)
    try:
        con.execute(_MARK_SENT, {"now": now})
        con.execute(_MARK_FAILED, {"now": now, "max_attempts": policy.max_attempts})
    finally:
        con.unregister("outcomes")


def _events(cursor: Any) -> list[AlertEvent]:
    rows = cursor.fetchall()
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
        for row in rows
    ]
    return sorted(events, key=lambda e: (e.channel, e.fired_at, e.event_id))
