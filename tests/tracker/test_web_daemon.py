"""The daemon serving the dashboard with `[web] listen`, as a real process against a loopback
replay: the page answers while the daemon collects, the Health panel shows the daemon's next
run, and a second daemon is refused for the store's lock, not for the page's port.

A real daemon for tens of seconds: marked `daemon`, left out of the default run."""

from __future__ import annotations

import signal
import socket
import subprocess
import urllib.request
from pathlib import Path

import pytest

from tests.tracker.daemon_support import DaemonProcess, gpu_tracker, replayed

pytestmark = pytest.mark.daemon


def _oks(lines: list[str]) -> int:
    return sum(" ok: " in line for line in lines)


def _get(port: int, path: str) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30) as answer:
        assert answer.status == 200
        return str(answer.read().decode())


def test_the_daemon_serves_the_dashboard_after_taking_the_lock(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a free loopback port for the page
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    web = {"web": {"listen": f"127.0.0.1:{port}"}}
    with (
        replayed(tmp_path, names=("azure",), interval="1h", extra=web) as setup,
        DaemonProcess(setup) as first,
    ):
        first.wait_for(lambda lines: _oks(lines) >= 1)
        health = _get(port, "/health")
        assert "a daemon is running" in health
        row = health.split("<td>azure</td>", 1)[1].split("</tr>", 1)[0]
        assert "<td>ok</td>" in row and row.count(" UTC</td>") == 2  # last run and next run
        assert "Standard_" in _get(port, "/")  # Azure's offers, from the daemon's own store
        second = subprocess.run(
            gpu_tracker(setup.config_path, "daemon"), capture_output=True, text=True, timeout=60
        )
        assert second.returncode == 2
        assert "another gpu-tracker daemon" in second.stderr
        assert "web.listen" not in second.stderr
        assert first.proc.poll() is None
        assert first.stop(signal.SIGTERM) == 0
