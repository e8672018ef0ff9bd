"""The daemon's review job and metrics endpoint, in a real daemon process: a review missed
while it was down is sent at start, once; the Prometheus endpoint serves the collections and
prices, and after a restart a provider that is down still has its last success time.

Real processes for tens of seconds: marked `daemon`, left out of the default run."""

from __future__ import annotations

import signal
import socket
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from tests.tracker.daemon_support import DaemonProcess, replayed
from tracker.collecting.replay import Exchange

pytestmark = pytest.mark.daemon


def _review_events(store: Path) -> list[tuple[object, ...]]:
    with duckdb.connect(str(store), read_only=True) as con:
        return con.execute(
            "SELECT rule, subject, channel, status FROM alert_events WHERE rule = 'review'"
        ).fetchall()


def test_a_review_missed_while_down_is_sent_at_start_once(tmp_path: Path) -> None:
    yesterday = datetime.now(UTC) - timedelta(days=1)
    cron = f"{yesterday.minute} {yesterday.hour} {yesterday.day} {yesterday.month} *"
    extra = {"review": {"enabled": True, "cron": cron}}
    with replayed(tmp_path, names=("azure",), interval="1h", extra=extra) as setup:
        # A first start has nothing to review: it collects, and sends no empty review.
        with DaemonProcess(setup) as first:
            first.wait_for(lambda lines: any(" ok: " in line for line in lines))
            assert first.stop(signal.SIGTERM) == 0
        assert _review_events(setup.store) == []
        # Restarted: yesterday's review, missed, goes out now; and on the next start not again.
        for _ in range(2):
            with DaemonProcess(setup) as daemon:
                daemon.wait_for(lambda lines: any("review of" in line for line in lines))
                assert daemon.stop(signal.SIGTERM) == 0
            events = _review_events(setup.store)
            assert len(events) == 1, daemon.text()
    rule, subject, channel, status = events[0]
    assert (rule, channel, status) == ("review", "console", "sent")
    assert str(subject).endswith(f"..{yesterday:%Y-%m-%d}")  # the period ends on its date


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def _both_ok(text: str) -> bool:
    return "azure ok" in text and "lambdalabs ok" in text


def test_metrics_endpoint_of_a_running_daemon(tmp_path: Path) -> None:
    port = _free_port()
    extra = {"metrics": {"listen": f"127.0.0.1:{port}"}}
    with replayed(tmp_path, names=("azure", "lambdalabs"), interval="3s", extra=extra) as setup:
        with DaemonProcess(setup) as daemon:
            daemon.wait_for(lambda lines: _both_ok(" ".join(lines)))
            first = _scrape(port)
            assert daemon.stop(signal.SIGTERM) == 0
        ok = ("gpu_tracker_collections_total", (("provider", "azure"), ("result", "ok")))
        assert first[ok] >= 1
        prices = {k: v for k, v in first.items() if k[0] == "gpu_tracker_price_per_gpu_hour"}
        assert prices and all(dict(k[1])["currency"] == "USD" for k in prices)
        key = ("gpu_tracker_last_success_timestamp_seconds", (("provider", "lambdalabs"),))
        assert key in first

        # Restarted with Lambda's API down: its last success is still known.
        broken = Exchange(match={"path": "/api/v1/instance-types"}, status=404, body=b"{}")
        setup.servers["lambdalabs"].exchanges.insert(0, broken)
        with DaemonProcess(setup) as again:
            again.wait_for(lambda lines: any("lambdalabs failed" in line for line in lines))
            second = _scrape(port)
            assert again.stop(signal.SIGTERM) == 0
    # From the store: the end of Lambda's last good run (the first daemon's own figure is a
    # moment later, when it counted the run; how much later depends on the machine's load).
    with duckdb.connect(str(setup.store), read_only=True) as con:
        ended = con.execute(
            "SELECT max(coalesce(finished_at, started_at)) FROM collection_runs "
            "WHERE provider = 'lambdalabs' AND status = 'ok'"
        ).fetchall()[0][0]
    assert second[key] == pytest.approx(ended.timestamp(), abs=0.001)
    failures = ("gpu_tracker_consecutive_failures", (("provider", "lambdalabs"),))
    assert second[failures] >= 1
