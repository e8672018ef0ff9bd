"""Alerts as events: what the fired subjects make, and what a send did to them.

Each fired subject becomes one event per channel of its rule, logged as pending in the same
transaction that moved its rule's state (`storage.alerts.log` keeps the rows). A run then claims
the due ones, sends them with the store closed, and records each outcome: sent, or one more
attempt due again after the backoff (or the longer wait a channel asked for); after the last
attempt it is 'failed', its last (redacted) error kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from alerts.evaluate import Fired
from alerts.message import detail, facts
from alerts.notify import AlertEvent
from alerts.settings import RetryPolicy
from storage.alerts import log as alert_log

# While a run sends, its claimed rows are not due for anyone else; if the run dies before it
# records the outcome, they come due again once this has passed.
CLAIM_LEASE = timedelta(minutes=15)


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
    alert_log.record_pending(
        con,
        [
            alert_log.NewEvent(
                e.rule, e.subject, e.value, e.threshold, e.channel, e.detail, e.facts
            )
            for e in events
        ],
        now,
    )


def claim_due(con: Any, now: datetime) -> list[AlertEvent]:
    """The pending events due at `now`, held back from other runs for CLAIM_LEASE."""
    return alert_log.claim_due(con, now, CLAIM_LEASE)


def due(con: Any, now: datetime) -> list[AlertEvent]:
    """The pending events due at `now`, untouched (for a dry run)."""
    return alert_log.due(con, now)


def mark(con: Any, outcomes: Sequence[Outcome], now: datetime, policy: RetryPolicy) -> None:
    """Record what the sends did (in the caller's transaction)."""
    # The backoff, unless the channel asked for a longer wait (Slack's Retry-After).
    alert_log.mark(
        con,
        [
            alert_log.SendOutcome(
                o.event_id, o.error, max(policy.delay_s(o.attempts + 1), o.retry_after_s or 0)
            )
            for o in outcomes
        ],
        now,
        policy.max_attempts,
    )
