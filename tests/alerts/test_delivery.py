"""Delivery over several runs on a real DuckDB file: pending until a channel accepts, backoff,
giving up, grouping per channel, restarts. Slack is the real notifier behind `responses`."""

from __future__ import annotations

import json
import shutil
import socket
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import responses

from alerts.console import ConsoleNotifier
from alerts.notify import Unavailable
from alerts.settings import RetryPolicy
from alerts.slack import SlackNotifier
from tests.alerts.support import T0, Bench, H, offer, rules

URL = "https://hooks.slack.com/services/T0001/B0002/d3liv3ryS3cr3t"
MIN = timedelta(minutes=1)
RETRY = RetryPolicy(base_s=300, max_s=3600, max_attempts=4)
CHEAP = {"name": "cheap-a100-spot", "kind": "spot_price_below", "threshold": 1.10,
         "currency": "USD", "gpu_model": "A100", "channels": ["slack"]}  # fmt: skip
DEEP = {"name": "deep-spot", "kind": "spot_discount_above", "threshold": 60,
        "channels": ["slack"]}  # fmt: skip
SLACK = {"slack": {}}


@pytest.fixture(scope="module")
def collected(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The store, written once per module: each test runs its alerts on a copy."""
    bench = Bench(tmp_path_factory.mktemp("delivery") / "prices.duckdb")
    # p4d.24xlarge real prices: on-demand 21.957642, spot 8.0468 in use1-az1 (see test_evaluate)
    bench.collect([offer("21.957642"), offer("8.0468", kind="spot", zone="use1-az1")], T0)
    return bench.path


@pytest.fixture
def bench(collected: Path, tmp_path: Path) -> Bench:
    return Bench(Path(shutil.copy(collected, tmp_path / "prices.duckdb")))


def slack() -> dict[str, Any]:
    return {"slack": SlackNotifier(URL, timeout=2, max_retries=1, backoff_factor=0)}


def log(bench: Bench) -> list[tuple[Any, ...]]:
    return bench.sql(
        "SELECT rule, channel, status, attempts, next_attempt_at, sent_at, last_error "
        "FROM alert_events ORDER BY event_id"
    )


def posted(rsps: responses.RequestsMock) -> list[list[str]]:
    """The rules named in each POST Slack accepted."""
    return [
        [b["text"]["text"].split("*")[1] for b in json.loads(c.request.body)["blocks"][1:-1]
         if b["type"] == "section" and b["text"]["text"].startswith("*")]
        for c in rsps.calls if getattr(c.response, "status_code", None) == 200
    ]  # fmt: skip


def test_a_channel_down_for_several_runs_gets_each_alert_once(bench: Bench) -> None:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        rsps.post(URL, status=503, body="down")
        report = bench.check(rules(CHEAP, **SLACK), T0, slack(), retry=RETRY)
        assert not report.ok and report.pending == 1
        assert report.deliveries[0].error == "slack: HTTP 503: down"
        assert log(bench) == [
            ("cheap-a100-spot", "slack", "pending", 1, T0 + 5 * MIN, None, "slack: HTTP 503: down")
        ]
        assert len(rsps.calls) == 2  # the try and its one retry
        # Not due yet: nothing is tried, nothing fires again.
        report = bench.check(rules(CHEAP, **SLACK), T0 + 2 * MIN, slack(), retry=RETRY)
        assert report.ok and report.deliveries == [] and len(rsps.calls) == 2
        assert report.pending == 1  # still said: the alert waits for its next attempt
        # Due, still down: the wait doubles.
        bench.check(rules(CHEAP, **SLACK), T0 + 5 * MIN, slack(), retry=RETRY)
        assert log(bench)[0][2:5] == ("pending", 2, T0 + 15 * MIN)
        # Back up; meanwhile a second rule fires: one message carries both.
        rsps.replace(responses.POST, URL, body="ok")
        report = bench.check(rules(CHEAP, DEEP, **SLACK), T0 + 15 * MIN, slack(), retry=RETRY)
        assert report.ok and [e.rule for e in report.fired] == ["deep-spot"]
        assert [(d.channel, d.events, d.error) for d in report.deliveries] == [("slack", 2, None)]
        assert [row[:4] for row in log(bench)] == [
            ("cheap-a100-spot", "slack", "sent", 3),
            ("deep-spot", "slack", "sent", 1),
        ]
        assert log(bench)[0][5] == T0 + 15 * MIN
        # Later runs (a new process each) send nothing again.
        for later in (T0 + H, T0 + 5 * H):
            assert bench.check(rules(CHEAP, DEEP, **SLACK), later, slack()).deliveries == []
        assert posted(rsps) == [["cheap-a100-spot", "deep-spot"]]


def test_gives_up_after_the_last_attempt_and_keeps_the_error(bench: Bench) -> None:
    policy = RetryPolicy(base_s=60, max_s=120, max_attempts=3)
    with responses.RequestsMock() as rsps:
        rsps.post(URL, status=500, body="internal_error")
        for minutes in (0, 1, 3):  # due at T0, T0 + 1 min, T0 + 1 + 2 min
            report = bench.check(rules(CHEAP, **SLACK), T0 + minutes * MIN, slack(), retry=policy)
        assert report.gave_up == 1 and report.pending == 0
        assert log(bench)[0][2:4] == ("failed", 3)
        assert log(bench)[0][6] == "slack: HTTP 500: internal_error"
        calls = len(rsps.calls)
        assert bench.check(rules(CHEAP, **SLACK), T0 + H, slack(), retry=policy).deliveries == []
        assert len(rsps.calls) == calls


def test_the_backoff_is_capped(bench: Bench) -> None:
    policy = RetryPolicy(base_s=300, max_s=900, max_attempts=10)
    waits = []
    with responses.RequestsMock() as rsps:
        rsps.post(URL, status=503)
        now = T0
        for _ in range(4):
            bench.check(rules(CHEAP, **SLACK), now, slack(), retry=policy)
            next_at = log(bench)[0][4]
            waits.append(next_at - now)
            now = next_at
    assert waits == [5 * MIN, 10 * MIN, 15 * MIN, 15 * MIN]


def test_slacks_retry_after_is_honoured_for_the_next_attempt(bench: Bench) -> None:
    with responses.RequestsMock() as rsps:
        rsps.post(URL, status=429, headers={"Retry-After": "3600"}, body="rate_limited")
        bench.check(rules(CHEAP, **SLACK), T0, slack(), retry=RETRY)
    assert log(bench)[0][2:5] == ("pending", 1, T0 + H)  # not the 5 min backoff


def test_alerts_are_grouped_into_one_message_per_channel(bench: Bench) -> None:
    rule_set = rules(
        {**CHEAP, "channels": ["slack", "console"]},
        {**DEEP, "channels": ["slack", "console"]},
        **SLACK,
    )
    with responses.RequestsMock() as rsps:
        rsps.post(URL, body="ok")
        report = bench.check(rule_set, T0, {**slack(), "console": ConsoleNotifier(bench.console)})
        assert posted(rsps) == [["cheap-a100-spot", "deep-spot"]]
    assert sorted((d.channel, d.events) for d in report.deliveries) == [
        ("console", 2),
        ("slack", 2),
    ]
    assert bench.console.getvalue().count("== 2 GPU price alerts") == 1
    assert bench.sql("SELECT count(*) FROM alert_events WHERE status = 'sent'") == [(4,)]


def test_a_crash_before_sending_loses_nothing_and_sends_once(bench: Bench) -> None:
    def crash(request: Any) -> Any:
        raise KeyboardInterrupt  # the process dies while Slack is being called

    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        rsps.add_callback(responses.POST, URL, callback=crash)
        with pytest.raises(KeyboardInterrupt):
            bench.check(rules(CHEAP, **SLACK), T0, slack())
        # Recorded and claimed: a run right after leaves it to the claim's owner...
        assert log(bench)[0][2:4] == ("pending", 0)
        rsps.replace(responses.POST, URL, body="ok")
        assert bench.check(rules(CHEAP, **SLACK), T0 + MIN, slack()).deliveries == []
        # ... until the claim runs out: then it is sent, once.
        report = bench.check(rules(CHEAP, **SLACK), T0 + 16 * MIN, slack())
        assert [(d.channel, d.events, d.error) for d in report.deliveries] == [("slack", 1, None)]
        bench.check(rules(CHEAP, **SLACK), T0 + 2 * H, slack())
        assert posted(rsps) == [["cheap-a100-spot"]]


def test_a_channel_no_longer_configured_keeps_its_alerts_pending(bench: Bench) -> None:
    with responses.RequestsMock() as rsps:
        rsps.post(URL, status=503)
        bench.check(rules(CHEAP, **SLACK), T0, slack(), retry=RETRY)
    report = bench.check(rules(), T0 + 10 * MIN, {}, retry=RETRY)
    assert report.deliveries[0].error == "slack: the channel is not configured any more"
    assert log(bench)[0][2:4] == ("pending", 2)


def test_the_webhook_url_never_reaches_the_store(bench: Bench) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    secret = "n0tInTh3St0r3"
    url = f"http://127.0.0.1:{port}/services/T0001/B0002/{secret}"
    notifier = SlackNotifier(url, timeout=2, max_retries=1, backoff_factor=0)
    report = bench.check(rules(CHEAP, **SLACK), T0, {"slack": notifier}, retry=RETRY)
    assert not report.ok and "ConnectionError" in (report.deliveries[0].error or "")
    everything = json.dumps(bench.sql("SELECT * FROM alert_events"), default=str)
    assert "ConnectionError" in everything and secret not in everything
    with open(bench.path, "rb") as stored:
        assert secret.encode() not in stored.read()


def test_a_channel_without_its_secret_keeps_every_attempt_and_says_so(bench: Bench) -> None:
    unset = {"slack": Unavailable("slack", "slack: no webhook URL: set SLACK_WEBHOOK_URL")}
    policy = RetryPolicy(base_s=60, max_s=120, max_attempts=2)
    blocked = [("slack", 1, "slack: no webhook URL: set SLACK_WEBHOOK_URL")]
    # Due or not (the first run claimed it for 15 minutes), every run says why it waits.
    for later in (0 * MIN, 2 * MIN, 16 * MIN, 40 * MIN, 5 * H):
        report = bench.check(rules(CHEAP, **SLACK), T0 + later, unset, retry=policy)
        assert not report.ok and report.pending == 1
        assert [(d.channel, d.events, d.error) for d in report.deliveries] == blocked
    # No attempt was spent on it: set the variable and it goes out, however long it waited.
    assert log(bench)[0][2:4] == ("pending", 0)
    with responses.RequestsMock() as rsps:
        rsps.post(URL, body="ok")
        report = bench.check(rules(CHEAP, **SLACK), T0 + 6 * H, slack(), retry=policy)
        assert report.ok and posted(rsps) == [["cheap-a100-spot"]]
    assert log(bench)[0][2:4] == ("sent", 1)
