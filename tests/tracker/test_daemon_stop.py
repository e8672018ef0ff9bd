"""Stopping and starting the daemon the ways it really happens: a signal to the whole process
group (Ctrl-C in a terminal, `systemctl stop`), a signal while it is still starting, a restart
after a long stop, a collection that hangs, a lock file that cannot be made."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import duckdb
import psutil
import pytest

from tests.tracker.daemon_support import DaemonProcess, Replayed, gpu_tracker, replayed
from tracker.replay import Exchange


def _read(store: Path, query: str) -> list[tuple[object, ...]]:
    with duckdb.connect(str(store), read_only=True) as con:
        return con.execute(query).fetchall()


def _slow(setup: Replayed, provider: str, seconds: float) -> None:
    for exchange in setup.servers[provider].exchanges:
        exchange.delay = seconds


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_the_whole_group_lets_the_collection_finish(
    tmp_path: Path, sig: signal.Signals
) -> None:
    with replayed(tmp_path, names=("lambdalabs",), interval="1h") as setup:
        _slow(setup, "lambdalabs", 1.5)
        with DaemonProcess(setup, own_group=True) as daemon:
            daemon.wait_for(lambda lines: any("daemon started" in line for line in lines))
            time.sleep(0.7)  # the child is inside the slow answer
            assert daemon.stop(sig, group=True) == 0
    assert daemon.count("lambdalabs ok: 24 records") == 1, daemon.text()
    assert "Traceback" not in daemon.text()
    runs = _read(setup.store, "SELECT provider, status FROM collection_runs")
    assert runs == [("lambdalabs", "ok")]


def test_a_signal_while_starting_stops_it_cleanly(tmp_path: Path) -> None:
    with replayed(tmp_path, names=("azure",), interval="1h") as setup:
        setup.store.parent.mkdir(parents=True, exist_ok=True)
        holder = duckdb.connect(str(setup.store))  # another process holds the store
        with DaemonProcess(setup) as daemon:
            time.sleep(1.5)  # the daemon waits for the store while it plans
            daemon.proc.send_signal(signal.SIGTERM)
            time.sleep(0.3)
            holder.close()
            assert daemon.proc.wait(30) == 0
    assert "daemon stopped before it started" in daemon.text()
    assert _read(setup.store, "SELECT count(*) FROM collection_runs") == [(0,)]


def test_a_collection_that_hangs_is_stopped_at_its_time_limit(tmp_path: Path) -> None:
    extra = {"daemon": {"job_timeout": "2s"}}
    with replayed(tmp_path, names=("lambdalabs",), interval="1h", extra=extra) as setup:
        _slow(setup, "lambdalabs", 20)  # under the HTTP timeout (30 s) of a single read
        with DaemonProcess(setup) as daemon:
            daemon.wait_for(lambda lines: any("lambdalabs failed" in line for line in lines))
            assert daemon.stop(signal.SIGTERM) == 0
    assert "took longer than 2 s and was stopped (daemon.job_timeout)" in daemon.text()
    (status, error) = _read(setup.store, "SELECT status, error FROM collection_runs")[0]
    assert status == "failed" and "daemon.job_timeout" in str(error)


def test_a_restart_after_a_long_stop_raises_no_stale_alert_for_a_slow_provider(
    tmp_path: Path,
) -> None:
    with replayed(tmp_path, names=("azure", "lambdalabs"), interval="2s") as setup:
        with DaemonProcess(setup) as first:
            first.wait_for(lambda lines: sum(" ok: " in line for line in lines) >= 2)
            assert first.stop(signal.SIGTERM) == 0
        time.sleep(5)  # down for longer than twice the interval: both are stale now
        _slow(setup, "lambdalabs", 2)  # and Lambda answers slowly after the restart
        with DaemonProcess(setup) as again:
            again.wait_for(lambda lines: any("lambdalabs ok" in line for line in lines))
            assert again.stop(signal.SIGTERM) == 0
    assert _read(setup.store, "SELECT count(*) FROM alert_events") == [(0,)], again.text()


def test_an_unusable_lock_file_is_a_clear_error(tmp_path: Path) -> None:
    with replayed(tmp_path, names=("azure",), interval="1h") as setup:
        (tmp_path / "prices.duckdb.daemon.lock").mkdir()  # in the way
        result = subprocess.run(
            gpu_tracker(setup.config_path, "daemon"), capture_output=True, text=True, timeout=60
        )
    assert result.returncode == 2
    assert "cannot create the daemon's lock file" in result.stderr
    assert "Traceback" not in result.stderr


def test_backed_off_runs_are_really_spaced_out(tmp_path: Path) -> None:
    extra = {"daemon": {"max_backoff": "4s"}}
    with replayed(tmp_path, names=("lambdalabs",), interval="1s", extra=extra) as setup:
        broken = Exchange(match={"path": "/api/v1/instance-types"}, status=404, body=b"{}")
        setup.servers["lambdalabs"].exchanges.insert(0, broken)
        with DaemonProcess(setup) as daemon:
            daemon.wait_for(lambda lines: sum("lambdalabs failed" in ln for ln in lines) >= 5)
            assert daemon.stop(signal.SIGTERM) == 0
    starts = [
        row[0] for row in _read(setup.store, "SELECT started_at FROM collection_runs ORDER BY 1")
    ]
    gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(starts)]
    assert isinstance(starts[0], datetime)
    # 1 s, then backed off to 2 s and 4 s (runs start on the scheduler's tick: a little slack).
    assert gaps[0] == pytest.approx(1, abs=0.5)
    assert gaps[1] == pytest.approx(2, abs=0.5)
    assert all(gap == pytest.approx(4, abs=0.5) for gap in gaps[2:])


def test_a_timed_out_collection_leaves_no_process_behind(tmp_path: Path) -> None:
    """AWS credentials from a `credential_process` that hangs: the collection is stopped at its
    time limit, and the helper with it (not left running, or as a zombie of PID 1)."""
    marker = "31.4159"  # an odd sleep, to find our helper among the machine's processes
    aws_config = tmp_path / "aws-config"
    aws_config.write_text(f"[default]\ncredential_process = /bin/sleep {marker}\n")
    extra = {"daemon": {"job_timeout": "2s"}}
    with replayed(tmp_path, names=("aws",), interval="1h", extra=extra) as setup:
        for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
            setup.env.pop(key, None)
        setup.env["AWS_CONFIG_FILE"] = str(aws_config)
        setup.env["AWS_SHARED_CREDENTIALS_FILE"] = str(tmp_path / "none")
        with DaemonProcess(setup) as daemon:
            daemon.wait_for(lambda lines: any("aws failed" in line for line in lines))
            assert daemon.stop(signal.SIGTERM) == 0
    assert "daemon.job_timeout" in daemon.text()
    time.sleep(0.5)
    left = [
        p.info["pid"]
        for p in psutil.process_iter(["pid", "cmdline"])
        if marker in " ".join(p.info["cmdline"] or [])
    ]
    assert left == []


def test_the_collector_ignores_modules_in_the_working_directory(tmp_path: Path) -> None:
    """Under the console script (as systemd and Docker start it), the daemon's working directory
    (a container's data volume) is not on the collector child's import path."""
    console_script = Path(sys.executable).parent / "gpu-tracker"
    if not console_script.exists():
        pytest.skip("the gpu-tracker console script is not installed beside this Python")
    workdir = tmp_path / "work"
    workdir.mkdir()
    (workdir / "pickle.py").write_text("raise SystemExit('a stray pickle.py was imported')\n")
    with replayed(tmp_path, names=("lambdalabs",), interval="1h") as setup:
        proc = subprocess.Popen(
            [str(console_script), "--config", str(setup.config_path), "daemon"],
            cwd=workdir,
            env={**os.environ, **setup.env},
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            deadline = time.monotonic() + 60
            lines: list[str] = []
            assert proc.stderr is not None
            while time.monotonic() < deadline:
                line = proc.stderr.readline()
                lines.append(line)
                if "lambdalabs ok" in line or "lambdalabs failed" in line or not line:
                    break
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)
        finally:
            if proc.poll() is None:
                proc.kill()
            if proc.stderr is not None:
                proc.stderr.close()
    text = "".join(lines)
    assert "lambdalabs ok: 24 records" in text, text
    assert "stray" not in text
