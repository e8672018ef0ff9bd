"""`gpu-tracker daemon` as a real process against loopback replays of every provider API:
several short cycles while another process queries the store, JSON logs, a second daemon
refused, SIGTERM during a collection (finished, or abandoned whole), kill -9 then restart.

Real processes for tens of seconds: marked `daemon`, left out of the default run."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import urllib.request
from pathlib import Path

import duckdb
import pytest

from tests.tracker.daemon_support import (
    DaemonProcess,
    Replayed,
    gpu_tracker,
    hold,
    replayed,
    wait_for_request,
)
from tracker.collecting.demo import recordings
from tracker.collecting.replay import Exchange

pytestmark = pytest.mark.daemon
PROVIDERS = len(recordings())  # every provider the demo replays
# The same offer twice in the current view would be a duplicate; so would two intervals of one
# offer overlapping in time.
_OFFER = "provider, region, coalesce(zone, ''), instance_type, price_kind, "
_OFFER += "coalesce(term_months, 0), coalesce(payment_option, ''), coalesce(offering_class, '')"
_DUPLICATE_CURRENT = (
    f"SELECT count(*) FROM (SELECT {_OFFER} FROM latest_prices GROUP BY ALL HAVING count(*) > 1)"
)
_OVERLAPS = f"""
SELECT count(*) FROM (
    SELECT {_OFFER}, valid_from, valid_to,
           lead(valid_from) OVER (PARTITION BY {_OFFER} ORDER BY valid_from) AS next_from
    FROM prices)
WHERE next_from < coalesce(valid_to, TIMESTAMPTZ 'infinity')
"""
_LATER_CHANGES = """
SELECT coalesce(sum(changed), 0) FROM (
    SELECT changed, row_number() OVER (PARTITION BY provider ORDER BY started_at) AS n
    FROM collection_runs WHERE status = 'ok')
WHERE n > 1
"""


def _oks(lines: list[str]) -> int:
    return sum(" ok: " in line for line in lines)


def _sql(setup: Replayed, query: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        gpu_tracker(setup.config_path, "sql", query, "--format", "json"),
        capture_output=True,
        text=True,
        timeout=60,
    )


def _read(store: Path, query: str) -> list[tuple[object, ...]]:
    with duckdb.connect(str(store), read_only=True) as con:
        return con.execute(query).fetchall()


def test_cycles_while_another_process_queries(tmp_path: Path) -> None:
    # 3 s: seven collector processes starting every 2 s would keep a 2-core machine busy enough
    # to time the machine rather than the store.
    with replayed(tmp_path, interval="3s") as setup, DaemonProcess(setup) as daemon:
        daemon.wait_for(lambda lines: _oks(lines) >= PROVIDERS)
        answers = 0
        # Query as fast as we can over the next cycles. Each must get in between the daemon's
        # writes: a reader gives up (exit 1, "locked by another process") when the store stays
        # locked for its whole lock wait, so no stopwatch is needed here.
        while _oks(daemon.lines) < 3 * PROVIDERS:
            result = _sql(setup, "SELECT count(*) AS n FROM latest_prices")
            assert result.returncode == 0, result.stderr
            assert json.loads(result.stdout)[0]["n"] >= 250  # the recordings' ~300 prices
            answers += 1
        status = subprocess.run(
            gpu_tracker(setup.config_path, "status", "--format", "json"),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert daemon.stop(signal.SIGTERM) == 0
    assert answers >= 3
    document = json.loads(status.stdout)
    assert document["daemon"]["running"] is True
    rows = {row["provider"]: row for row in document["providers"]}
    assert set(rows) == set(recordings())
    assert all(row["result"] == "ok" and row["next_run"] for row in rows.values())
    # AWS from its public files: 17 on-demand, 18 reserved, 11 spot (one per region and type)
    # and 20 Savings Plans prices (tracker/demo_data/aws/README.md)
    assert rows["aws"]["records"] == 46 + 20
    assert "daemon stopped" in daemon.text()
    assert _read(setup.store, _OVERLAPS)[0][0] == 0
    assert _read(setup.store, _DUPLICATE_CURRENT)[0][0] == 0
    # Change-only: the replayed prices never change, so only each first run changed anything.
    assert _read(setup.store, _LATER_CHANGES) == [(0,)]


def test_json_log_lines_carry_the_job_figures(tmp_path: Path) -> None:
    with (
        replayed(tmp_path, names=("azure", "aws"), interval="1h") as setup,
        DaemonProcess(setup, "--log-format", "json") as daemon,
    ):
        daemon.wait_for(lambda lines: sum('"records"' in line for line in lines) >= 2)
        assert daemon.stop(signal.SIGINT) == 0
    records = [json.loads(line) for line in daemon.lines]  # every line is one JSON object
    jobs = {r["provider"]: r for r in records if "records" in r}
    assert jobs["aws"]["records"] == 46 + 20 and jobs["aws"]["changes"] == 46 + 20
    assert jobs["azure"]["status"] == "ok" and jobs["azure"]["duration_s"] > 0
    assert {"time", "level", "logger", "message"} <= set(jobs["aws"])


def test_a_second_daemon_on_the_same_store_is_refused(tmp_path: Path) -> None:
    with (
        replayed(tmp_path, names=("azure",), interval="1h") as setup,
        DaemonProcess(setup) as first,
    ):
        first.wait_for(lambda lines: _oks(lines) >= 1)
        second = subprocess.run(
            gpu_tracker(setup.config_path, "daemon"), capture_output=True, text=True, timeout=60
        )
        assert second.returncode == 2
        assert "another gpu-tracker daemon" in second.stderr
        assert "already running" in second.stderr
        assert first.proc.poll() is None  # the first one is untouched
        assert first.stop(signal.SIGTERM) == 0


def test_a_second_daemon_with_metrics_is_refused_for_the_lock_not_the_port(
    tmp_path: Path,
) -> None:
    with socket.socket() as probe:  # a free loopback port for the first daemon's metrics
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    metrics = {"metrics": {"listen": f"127.0.0.1:{port}"}}
    with (
        replayed(tmp_path, names=("azure",), interval="1h", extra=metrics) as setup,
        DaemonProcess(setup) as first,
    ):
        first.wait_for(lambda lines: _oks(lines) >= 1)
        second = subprocess.run(
            gpu_tracker(setup.config_path, "daemon"), capture_output=True, text=True, timeout=60
        )
        assert second.returncode == 2
        assert "another gpu-tracker daemon" in second.stderr
        assert "cannot listen" not in second.stderr and "metrics.listen" not in second.stderr
        assert first.proc.poll() is None  # the first one is untouched, its metrics too
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as answer:
            assert answer.status == 200
        assert first.stop(signal.SIGTERM) == 0


def test_sigterm_mid_collection_lets_it_finish_within_the_grace(tmp_path: Path) -> None:
    # A grace no busy machine outlasts: what is tested is that the daemon waits, not how fast.
    extra = {"daemon": {"shutdown_grace": "60s"}}
    with replayed(tmp_path, names=("lambdalabs",), interval="1h", extra=extra) as setup:
        release = hold(setup, "lambdalabs")
        with DaemonProcess(setup) as daemon:
            wait_for_request(setup, "lambdalabs")  # the collection is in flight
            daemon.signal(signal.SIGTERM)
            daemon.wait_for(lambda lines: any("SIGTERM received" in line for line in lines))
            release.set()  # the API answers only now, while the daemon is stopping
            assert daemon.wait() == 0
    # 24 offers in regions with capacity, 3 types sold out everywhere (region NULL)
    assert daemon.count("lambdalabs ok: 27 records") == 1
    assert _read(setup.store, "SELECT count(*) FROM latest_prices")[0][0] == 27


def test_sigterm_abandons_a_collection_that_outlasts_the_grace_whole(tmp_path: Path) -> None:
    extra = {"daemon": {"shutdown_grace": "1s"}}
    with replayed(tmp_path, names=("lambdalabs", "azure"), interval="1h", extra=extra) as setup:
        hold(setup, "lambdalabs")  # Lambda's API never answers while the daemon runs
        with DaemonProcess(setup) as daemon:
            daemon.wait_for(lambda lines: _oks(lines) >= 1)  # azure stored
            wait_for_request(setup, "lambdalabs")  # lambda in flight
            # It exits while the answer is still held back: it did not wait for it.
            assert daemon.stop(signal.SIGTERM) == 0
    assert "abandoned in flight after 1 s: lambdalabs" in daemon.text()
    runs = _read(setup.store, "SELECT provider, status FROM collection_runs")
    assert runs == [("azure", "ok")]  # no lambdalabs run, not even a failed one
    providers = _read(setup.store, "SELECT DISTINCT provider FROM prices")
    assert providers == [("azure",)]


def test_kill_9_then_restart_loses_nothing_and_duplicates_nothing(tmp_path: Path) -> None:
    with replayed(tmp_path, interval="1s") as setup, DaemonProcess(setup) as daemon:
        daemon.wait_for(lambda lines: _oks(lines) >= 2 * PROVIDERS + 3)
        committed = _oks(daemon.lines)  # every one of these logged after its commit
        daemon.proc.kill()
        daemon.proc.wait(10)
        # Its collector children die with it: the log pipe they share closes at once.
        daemon._reader.join(60)  # a safety net: a child left alive would hold the pipe for ever
        assert not daemon._reader.is_alive()
        (ok_runs,) = _read(setup.store, "SELECT count(*) FROM collection_runs WHERE status = 'ok'")[
            0
        ]
        assert ok_runs >= committed
        assert _read(setup.store, _DUPLICATE_CURRENT)[0][0] == 0
        before = _read(setup.store, "SELECT provider, count(*) FROM latest_prices GROUP BY 1")

        with DaemonProcess(setup) as again:
            again.wait_for(lambda lines: _oks(lines) >= 2 * PROVIDERS)
            assert again.stop(signal.SIGTERM) == 0
    assert _read(setup.store, _DUPLICATE_CURRENT)[0][0] == 0
    assert _read(setup.store, _OVERLAPS)[0][0] == 0
    after = _read(setup.store, "SELECT provider, count(*) FROM latest_prices GROUP BY 1")
    assert sorted(after) == sorted(before)
    assert len(after) == PROVIDERS
    assert _read(setup.store, _LATER_CHANGES) == [(0,)]


def test_a_failing_provider_backs_off_and_raises_one_stale_alert(tmp_path: Path) -> None:
    extra = {"daemon": {"max_backoff": "4s"}}
    with replayed(tmp_path, names=("lambdalabs",), interval="1s", extra=extra) as setup:
        server = setup.servers["lambdalabs"]
        broken = Exchange(match={"path": "/api/v1/instance-types"}, status=404, body=b"{}")
        server.exchanges.insert(0, broken)
        with DaemonProcess(setup) as daemon:
            daemon.wait_for(lambda lines: any("every 4s" in line for line in lines))
            daemon.wait_for(lambda lines: sum("lambdalabs failed" in ln for ln in lines) >= 5)
            server.exchanges.remove(broken)  # the API is back
            daemon.wait_for(lambda lines: any("back to every 1s" in line for line in lines))
            assert daemon.stop(signal.SIGTERM) == 0
    text = daemon.text()
    assert "backing off to every 2s" in text
    assert "backing off to every 4s" in text
    alerts = _read(
        setup.store, "SELECT rule, subject, channel, status FROM alert_events ORDER BY fired_at"
    )
    assert alerts == [("stale:lambdalabs", "lambdalabs", "console", "sent")]
    assert daemon.count("stale:lambdalabs: lambdalabs: no successful collection yet") == 1
