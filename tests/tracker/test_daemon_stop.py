"""Stopping and starting the daemon the ways it really happens: a signal to the whole process
group (Ctrl-C in a terminal, `systemctl stop`), a signal while it is still starting, a restart
after a long stop, a collection that hangs, a lock file that cannot be made.

Real processes for tens of seconds: marked `daemon`, left out of the default run."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import psutil
import pytest

from tests.tracker.daemon_support import (
    DaemonProcess,
    gpu_tracker,
    hold,
    replayed,
    wait_for_request,
    wait_until,
)
from tracker.collecting.replay import Exchange
from tracker.running.state import lock_path

pytestmark = pytest.mark.daemon


def _read(store: Path, query: str) -> list[tuple[object, ...]]:
    with duckdb.connect(str(store), read_only=True) as con:
        return con.execute(query).fetchall()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_the_whole_group_lets_the_collection_finish(
    tmp_path: Path, sig: signal.Signals
) -> None:
    extra = {"daemon": {"shutdown_grace": "60s"}}
    with replayed(tmp_path, names=("lambdalabs",), interval="1h", extra=extra) as setup:
        release = hold(setup, "lambdalabs")
        with DaemonProcess(setup, own_group=True) as daemon:
            wait_for_request(setup, "lambdalabs")  # the child is inside the held answer
            daemon.signal(sig, group=True)  # the child gets it too, and must not die of it
            daemon.wait_for(lambda lines: any(f"{sig.name} received" in ln for ln in lines))
            release.set()
            assert daemon.wait() == 0
    assert daemon.count("lambdalabs ok: 27 records") == 1, daemon.text()
    assert "Traceback" not in daemon.text()
    runs = _read(setup.store, "SELECT provider, status FROM collection_runs")
    assert runs == [("lambdalabs", "ok")]


def test_a_signal_while_starting_stops_it_cleanly(tmp_path: Path) -> None:
    with replayed(tmp_path, names=("azure",), interval="1h") as setup:
        setup.store.parent.mkdir(parents=True, exist_ok=True)
        holder = duckdb.connect(str(setup.store))  # another process holds the store
        lock = lock_path(setup.store)
        with DaemonProcess(setup) as daemon:
            # It writes its lock file just before it plans, where it waits for the store.
            wait_until(lambda: lock.exists() and "pid" in lock.read_text(), "the daemon's lock")
            daemon.signal(signal.SIGTERM)
            daemon.wait_for(lambda lines: any("SIGTERM received" in line for line in lines))
            holder.close()
            assert daemon.wait() == 0
    assert "daemon stopped before it started" in daemon.text()
    assert _read(setup.store, "SELECT count(*) FROM collection_runs") == [(0,)]


def test_a_collection_that_hangs_is_stopped_at_its_time_limit(tmp_path: Path) -> None:
    extra = {"daemon": {"job_timeout": "2s"}}
    with replayed(tmp_path, names=("lambdalabs",), interval="1h", extra=extra) as setup:
        hold(setup, "lambdalabs")  # no answer while the daemon runs (nor an HTTP timeout)
        with DaemonProcess(setup) as daemon:
            daemon.wait_for(lambda lines: any("lambdalabs failed" in line for line in lines))
            assert daemon.stop(signal.SIGTERM) == 0
    assert "took longer than 2 s and was stopped (daemon.job_timeout)" in daemon.text()
    (status, error) = _read(setup.store, "SELECT status, error FROM collection_runs")[0]
    assert status == "failed" and "daemon.job_timeout" in str(error)


def test_a_restart_after_a_long_stop_raises_no_stale_alert_for_a_slow_provider(
    tmp_path: Path,
) -> None:
    with replayed(tmp_path, names=("azure", "lambdalabs"), interval="1h") as setup:
        with DaemonProcess(setup) as first:
            first.wait_for(lambda lines: sum(" ok: " in line for line in lines) >= 2)
            assert first.stop(signal.SIGTERM) == 0
        # Down for three hours, longer than twice the interval: both are stale now.
        with duckdb.connect(str(setup.store)) as con:
            con.execute(
                "UPDATE runs SET started_at = started_at - INTERVAL 3 HOUR, "
                "finished_at = finished_at - INTERVAL 3 HOUR, "
                "observed_at = observed_at - INTERVAL 3 HOUR"
            )
        release = hold(setup, "lambdalabs")  # and Lambda answers late after the restart
        with DaemonProcess(setup) as again:
            # Azure's run evaluates the rules while Lambda's first run is still going.
            again.wait_for(lambda lines: any("azure ok" in line for line in lines))
            release.set()
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


def _failed_jobs(lines: list[str]) -> list[dict[str, Any]]:
    jobs = (json.loads(line) for line in lines if line.startswith("{"))
    return [job for job in jobs if job.get("status") == "failed"]


def test_backed_off_runs_are_really_spaced_out(tmp_path: Path) -> None:
    extra = {"daemon": {"max_backoff": "4s"}}
    with replayed(tmp_path, names=("lambdalabs",), interval="1s", extra=extra) as setup:
        broken = Exchange(match={"path": "/api/v1/instance-types"}, status=404, body=b"{}")
        setup.servers["lambdalabs"].exchanges.insert(0, broken)
        with DaemonProcess(setup, "--log-format", "json") as daemon:
            daemon.wait_for(lambda lines: len(_failed_jobs(lines)) >= 5)
            assert daemon.stop(signal.SIGTERM) == 0
    jobs = _failed_jobs(daemon.lines)
    starts = [
        row[0] for row in _read(setup.store, "SELECT started_at FROM collection_runs ORDER BY 1")
    ]
    assert isinstance(starts[0], datetime) and len(starts) == len(jobs)
    # The schedule the daemon decided after each failure, not gaps a busy machine stretches:
    # 1 s after one failure (a blip), then doubling up to max_backoff.
    assert [job["interval_s"] for job in jobs[:5]] == [1, 2, 4, 4, 4]
    next_runs = [datetime.fromisoformat(job["next_run"]) for job in jobs]
    for (before, after), job in zip(itertools.pairwise(next_runs), jobs[1:], strict=True):
        assert (after - before).total_seconds() >= job["interval_s"], jobs
    # And it kept to it: no run started before the time decided for it.
    for decided, started in zip(next_runs, starts[1:], strict=False):
        assert started >= decided, (decided, started)


def test_a_timed_out_collection_leaves_no_process_behind(tmp_path: Path) -> None:
    """AWS credentials from a `credential_process` that hangs: the collection is stopped at its
    time limit, and the helper with it (not left running, or as a zombie of PID 1)."""
    marker = "31.4159"  # an odd sleep, to find our helper among the machine's processes
    aws_config = tmp_path / "aws-config"
    aws_config.write_text(f"[default]\ncredential_process = /bin/sleep {marker}\n")
    extra = {"daemon": {"job_timeout": "2s"}}
    # The demo's AWS reads the public files, which need no credentials: the APIs use the chain.
    api = {"aws": {"source": "api"}}
    with replayed(tmp_path, names=("aws",), interval="1h", extra=extra, overrides=api) as setup:
        for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
            setup.env.pop(key, None)
        setup.env["AWS_CONFIG_FILE"] = str(aws_config)
        setup.env["AWS_SHARED_CREDENTIALS_FILE"] = str(tmp_path / "none")
        with DaemonProcess(setup) as daemon:
            daemon.wait_for(lambda lines: any("aws failed" in line for line in lines))
            assert daemon.stop(signal.SIGTERM) == 0
    assert "daemon.job_timeout" in daemon.text()

    def left() -> list[int]:
        return [
            p.info["pid"]
            for p in psutil.process_iter(["pid", "cmdline"])
            if marker in " ".join(p.info["cmdline"] or [])
        ]

    # Killed processes take a moment to be reaped; a helper left running sleeps for 31 s.
    wait_until(lambda: not left(), "the credential helper to be gone", timeout=20)


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
    assert "lambdalabs ok: 27 records" in text, text
    assert "stray" not in text
