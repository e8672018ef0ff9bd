"""One alerts run: evaluate and record, close the store, send, record what the sends did.

The store is open only for the two short transactions, never while a channel is being talked
to (DuckDB lets no one else even read while we hold it):

1. evaluate every rule, move the per-subject state, insert the new events as pending (one
   per channel) and claim every pending event that is due; commit; close.
2. send the claimed events, grouped per channel into one message each.
3. mark each event sent, or count the failed attempt and schedule the next (backoff).

A channel accepting a message and step 3 not committing (a crash, the store still locked when
the wait runs out) is the only way an alert can be sent twice; nothing is ever lost (the claim
expires and the event comes due again). A channel that cannot send at all (`Unavailable`: its
secret is not set) is a setup problem, not a failed attempt: its alerts keep every attempt for
when it is set, and every run reports it (not ok) while alerts wait on it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import groupby
from pathlib import Path
from typing import Any

from alerts import digest
from alerts import events as event_log
from alerts.evaluate import evaluate
from alerts.notify import AlertEvent, ChannelError, Notifier, Unavailable
from alerts.rules import Rule
from alerts.settings import RetryPolicy
from collectors.common import StoreError
from storage.alerts import log as alert_log

log = logging.getLogger("alerts")
DEFAULT_RETRY = RetryPolicy()


@dataclass(frozen=True)
class Delivery:
    """One message to one channel: how many alerts it carried and, if it failed, why."""

    channel: str
    events: int
    error: str | None = None


@dataclass(frozen=True)
class AlertReport:
    fired: list[AlertEvent]  # new this run, one per channel (a dry run: what would fire)
    due: list[AlertEvent] = field(default_factory=list)  # sent (or, dry run, would be) now
    deliveries: list[Delivery] = field(default_factory=list)
    pending: int = 0  # left for a later run
    gave_up: int = 0  # marked 'failed' this run: out of attempts
    dry_run: bool = False

    @property
    def ok(self) -> bool:
        """True when every channel accepted what it was given, and none that alerts wait on is
        unavailable."""
        return all(d.error is None for d in self.deliveries)


def run(
    store_path: Path | str,
    rules: Sequence[Rule],
    channels: Mapping[str, Notifier],
    *,
    now: datetime | None = None,
    dry_run: bool = False,
    retry: RetryPolicy = DEFAULT_RETRY,
    lock_wait_s: float = 30.0,
    store_lock: AbstractContextManager[Any] | None = None,
) -> AlertReport:
    """Evaluate `rules` over the store at `store_path` and deliver what is due through
    `channels` (dry run: evaluate only, store and channels untouched). `store_lock` (a
    threading.Lock, say) is held around each store session, never while sending: the daemon
    passes the one its collections write under."""
    now = now or datetime.now(UTC)
    path = Path(store_path)
    guard = store_lock if store_lock is not None else nullcontext()
    if not path.exists():
        raise StoreError(f"no price store at {path} yet: run `gpu-tracker collect` first")
    if dry_run:
        with guard:
            return _dry_run(path, rules, now, lock_wait_s)
    with guard, alert_log.session(path, wait_s=lock_wait_s) as con:
        fired, due, waiting = _evaluate_and_claim(con, rules, now)
    outcomes, deliveries = deliver(due, channels)
    deliveries = _with_unavailable(deliveries, channels, waiting)
    if not outcomes:  # nothing was tried: the pending ones wait for their next attempt
        return AlertReport(fired, due, deliveries, pending=sum(waiting.values()))
    with guard, alert_log.session(path, wait_s=lock_wait_s) as con:
        pending, gave_up = _mark(con, outcomes, now, retry)
    return AlertReport(fired, due, deliveries, pending, gave_up)


def deliver(
    due: Sequence[AlertEvent], channels: Mapping[str, Notifier]
) -> tuple[list[event_log.Outcome], list[Delivery]]:
    """Send `due` grouped per channel, one message each (a review: a message of its own);
    what happened to every event."""
    outcomes: list[event_log.Outcome] = []
    deliveries: list[Delivery] = []
    for channel, batch in _batches(due):
        notifier = channels.get(channel)
        if isinstance(notifier, Unavailable):
            # Not an attempt: its claim runs out and the alerts come due again, all attempts
            # left, so they go out once the variable is set rather than ending 'failed'.
            deliveries.append(Delivery(channel, len(batch), notifier.reason))
            continue
        error, retry_after = _send(channel, batch, channels)
        deliveries.append(Delivery(channel, len(batch), error))
        outcomes.extend(
            event_log.Outcome(e.event_id, e.attempts, error, retry_after) for e in batch
        )
    return outcomes, deliveries


def _batches(due: Sequence[AlertEvent]) -> list[tuple[str, list[AlertEvent]]]:
    """Per channel: its alerts as one batch, and each review as a batch of its own (a digest is
    a whole message; its outcome must not be an alert's)."""
    batches: list[tuple[str, list[AlertEvent]]] = []
    for channel, group in groupby(sorted(due, key=lambda e: e.channel), key=lambda e: e.channel):
        events = list(group)
        alerts = [e for e in events if e.facts.get("kind") != digest.KIND]
        batches.extend((channel, [e]) for e in events if e.facts.get("kind") == digest.KIND)
        if alerts:
            batches.append((channel, alerts))
    return batches


def _send(
    channel: str, batch: list[AlertEvent], channels: Mapping[str, Notifier]
) -> tuple[str | None, float | None]:
    notifier = channels.get(channel)
    if notifier is None:
        return f"{channel}: the channel is not configured any more", None
    try:
        notifier.send(batch)
    except ChannelError as exc:
        log.info("alerts: %d alerts not delivered to %s: %s", len(batch), channel, exc)
        return str(exc), exc.retry_after_s
    except Exception as exc:  # a bug in one channel must not lose the others' outcomes
        # No message: an unexpected error's text may quote a secret the channel holds.
        log.error("alerts: %s failed unexpectedly (%s)", channel, type(exc).__name__)
        return f"{channel}: unexpected {type(exc).__name__}", None
    log.info("alerts: %d alerts delivered to %s", len(batch), channel)
    return None, None


def _with_unavailable(
    deliveries: list[Delivery], channels: Mapping[str, Notifier], waiting: Mapping[str, int]
) -> list[Delivery]:
    """`deliveries`, where an unavailable channel counts every alert waiting on it (due now or
    not): a run where none was due still says why they wait."""
    unavailable = {name: n.reason for name, n in channels.items() if isinstance(n, Unavailable)}
    kept = [d for d in deliveries if d.channel not in unavailable]
    held = [
        Delivery(name, waiting[name], reason)
        for name, reason in sorted(unavailable.items())
        if waiting.get(name)
    ]
    return kept + held


def _evaluate_and_claim(
    con: Any, rules: Sequence[Rule], now: datetime
) -> tuple[list[AlertEvent], list[AlertEvent], dict[str, int]]:
    """What fired, what is due now (claimed), and how many alerts are pending per channel (the
    due ones included)."""
    new = event_log.new_events(evaluate(con, rules, now), now)
    event_log.record(con, new, now)
    due = event_log.claim_due(con, now)
    return new, due, alert_log.pending_per_channel(con)


def _mark(
    con: Any, outcomes: list[event_log.Outcome], now: datetime, retry: RetryPolicy
) -> tuple[int, int]:
    event_log.mark(con, outcomes, now, retry)
    return alert_log.pending_and_failed(con, [o.event_id for o in outcomes])


def _dry_run(path: Path, rules: Sequence[Rule], now: datetime, wait_s: float) -> AlertReport:
    with alert_log.dry_session(path, wait_s=wait_s) as con:
        fired = event_log.new_events(evaluate(con, rules, now), now)
        due = event_log.due(con, now)
    return AlertReport(fired, due, dry_run=True)
