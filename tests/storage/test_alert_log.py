"""The alert event log on a real DuckDB file: pending until marked sent, claimed with a lease,
failed sends retried after their wait and given up after the last attempt, and sessions that
keep all of their block or none of it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from collectors.common import StoreError
from storage.alerts import log
from storage.query import query

NOW = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)
LEASE = timedelta(minutes=15)
WAIT_S = 1.0


def event(subject: str, channel: str = "slack") -> log.NewEvent:
    facts = {"kind": "spot_price_below", "offer": subject, "alternatives": [{"price": 2.5}]}
    return log.NewEvent("cheap", subject, 2.1, 2.5, channel, f"{subject} at 2.1", facts)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "prices.duckdb"
    with log.session(path, wait_s=WAIT_S) as con:
        log.record_pending(con, [event("a"), event("b"), event("a", "email")], NOW)
    return path


def rows(path: Path) -> list[tuple[object, ...]]:
    sql = "SELECT subject, channel, status, attempts, next_attempt_at, last_error"
    sql += " FROM alert_event_log ORDER BY event_id"
    return query(path, sql).rows


def test_a_claim_holds_the_events_for_its_lease_and_then_lets_them_come_due(store: Path) -> None:
    with log.session(store, wait_s=WAIT_S) as con:
        claimed = log.claim_due(con, NOW, LEASE)
        again = log.claim_due(con, NOW + LEASE - timedelta(seconds=1), LEASE)
    assert [(e.channel, e.subject, e.attempts) for e in claimed] == [
        ("email", "a", 0),
        ("slack", "a", 0),
        ("slack", "b", 0),
    ]
    assert claimed[0].facts == event("a").facts  # the JSON read back as it went in
    assert again == []
    with log.session(store, wait_s=WAIT_S) as con:  # the run died: due again after the lease
        assert len(log.claim_due(con, NOW + LEASE, LEASE)) == 3


def test_sent_is_final_and_a_failure_waits_then_gives_up_after_the_last_attempt(
    store: Path,
) -> None:
    with log.session(store, wait_s=WAIT_S) as con:
        a_email, a_slack, b_slack = (e.event_id for e in log.claim_due(con, NOW, LEASE))
        outcomes = [
            log.SendOutcome(a_slack, None),
            log.SendOutcome(b_slack, "slack: HTTP 500", wait_s=600),
            log.SendOutcome(a_email, "email: refused", wait_s=300),
        ]
        log.mark(con, outcomes, NOW, max_attempts=2)
        assert log.pending_and_failed(con, [a_slack, b_slack, a_email]) == (2, 0)
    assert rows(store) == [
        ("a", "slack", "sent", 1, NOW, None),
        ("b", "slack", "pending", 1, NOW + timedelta(seconds=600), "slack: HTTP 500"),
        ("a", "email", "pending", 1, NOW + timedelta(seconds=300), "email: refused"),
    ]
    later = NOW + timedelta(hours=1)
    with log.session(store, wait_s=WAIT_S) as con:
        due = log.claim_due(con, later, LEASE)
        assert [(e.event_id, e.attempts) for e in due] == [(a_email, 1), (b_slack, 1)]
        log.mark(con, [log.SendOutcome(b_slack, "slack: HTTP 500", 600)], later, max_attempts=2)
        assert log.pending_and_failed(con, [b_slack]) == (1, 1)
        assert log.pending_per_channel(con) == {"email": 1}


def test_a_dry_session_keeps_nothing(store: Path) -> None:
    with log.dry_session(store, wait_s=WAIT_S) as con:
        log.record_pending(con, [event("c")], NOW)
        assert len(log.due(con, NOW)) == 4
        assert len(log.claim_due(con, NOW, LEASE)) == 4
    with log.session(store, wait_s=WAIT_S) as con:
        assert [e.subject for e in log.due(con, NOW)] == ["a", "a", "b"]


def test_a_store_error_in_a_session_rolls_back_the_whole_block(store: Path) -> None:
    failing = pytest.raises(StoreError, match="alerts: could not update the store")
    with failing, log.session(store, wait_s=WAIT_S) as con:
        log.claim_due(con, NOW, LEASE)
        log.record_pending(con, [event("c")], NOW)
        con.execute("SELECT * FROM no_such_table")
    with log.session(store, wait_s=WAIT_S) as con:
        assert [e.subject for e in log.due(con, NOW)] == ["a", "a", "b"]  # none claimed, no c


def test_recent_events_newest_first_with_the_total(store: Path, tmp_path: Path) -> None:
    with log.session(store, wait_s=WAIT_S) as con:
        log.record_pending(con, [event("d")], NOW + timedelta(hours=1))
    result, total = log.recent(store, 2)
    assert total == 4
    assert result.columns[:5] == ["fired_at", "rule", "subject", "channel", "status"]
    assert [(row[2], row[3], row[4]) for row in result.rows] == [
        ("d", "slack", "pending"),
        ("a", "email", "pending"),  # the same time: the later event first
    ]
    nothing, none = log.recent(tmp_path / "none.duckdb", 5)  # no store yet: no alerts either
    assert (nothing.rows, none) == ([], 0)
