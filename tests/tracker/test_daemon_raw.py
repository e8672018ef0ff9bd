"""The daemon's side of trusting the history (docs/trust.md), as a real process against loopback
replays: its collection child keeps the raw answers, and a held run is logged and counted.

Real processes: marked `daemon`, left out of the default run."""

from __future__ import annotations

import signal
import socket
import urllib.request
from pathlib import Path

import duckdb
import pytest

from storage.raw import RawStore, read_listing
from tests.tracker.daemon_support import DaemonProcess, replayed, wait_until
from tests.tracker.test_held_runs import altered
from tracker.collecting.replay import Recording

pytestmark = pytest.mark.daemon


def _runs(store: Path) -> list[tuple[str, str | None]]:
    with duckdb.connect(str(store), read_only=True) as con:
        sql = "SELECT status, raw FROM collection_runs ORDER BY run_id"
        return [(str(status), raw) for status, raw in con.execute(sql).fetchall()]


def _held(port: int) -> float:
    """gpu_tracker_runs_held_total{provider="azure"} as the daemon's metrics say now."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as answer:
        text = answer.read().decode()
    name = 'gpu_tracker_runs_held_total{provider="azure"} '
    return sum(float(line[len(name) :]) for line in text.splitlines() if line.startswith(name))


def test_the_collection_child_keeps_the_answers_as_served(tmp_path: Path) -> None:
    with replayed(tmp_path, names=("lambdalabs",), interval="1h") as setup:
        with DaemonProcess(setup) as daemon:
            daemon.wait_for(lambda lines: any("lambdalabs ok: " in line for line in lines))
            assert daemon.stop(signal.SIGTERM) == 0
        server = setup.servers["lambdalabs"]
        sent = server._body(server.exchanges[0])
    ((status, listing),) = _runs(setup.store)
    (kept,) = read_listing(listing)
    assert status == "ok"
    assert RawStore(tmp_path / "prices.duckdb.state" / "raw").get(kept.sha256) == sent


def test_a_held_run_is_logged_and_counted(tmp_path: Path) -> None:
    truncated = altered(tmp_path, "truncated", lambda items: items, truncated=True)
    with socket.socket() as probe:  # a free loopback port for the metrics
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    metrics = {"metrics": {"listen": f"127.0.0.1:{port}"}}
    with (
        replayed(tmp_path, names=("azure",), interval="2s", extra=metrics) as setup,
        DaemonProcess(setup) as daemon,
    ):
        daemon.wait_for(lambda lines: any("azure ok: " in line for line in lines))
        setup.servers["azure"].serve(Recording.load(truncated))  # a walk cut short from now on
        daemon.wait_for(lambda lines: any("azure held: " in line for line in lines))
        # Counted once the job has logged it: wait for the count, not for a time.
        wait_until(lambda: _held(port) > 0, "gpu_tracker_runs_held_total to count it")
        assert daemon.stop(signal.SIGTERM) == 0
    assert "held" in [status for status, _ in _runs(setup.store)]
    assert any("WARNING" in line and "azure held: would withdraw" in line for line in daemon.lines)
