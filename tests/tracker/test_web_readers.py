"""Eight clients read the dashboard while the daemon collects every two seconds: through the
daemon's own `[web]`, and through `gpu-tracker serve` in a process of its own beside a daemon.
Not one collection fails or goes unrecorded, and not one answer is empty or an error.

Real processes on loopback for tens of seconds: marked `daemon`, left out of the default run.
The clients read until the daemon has stored a number of runs, a state, not a time."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pytest

from tests.tracker.daemon_support import DaemonProcess, gpu_tracker, replayed, wait_until

pytestmark = pytest.mark.daemon

CLIENTS = 8
RUNS = 6  # collections each test waits for while the clients read
PAGES = (
    "/api/latest?kind=on-demand",
    "/",
    "/api/history?gpu=A100",
    "/health",
    "/history?gpu=A100",
    "/api/latest?gpu=H100",
    "/decide?gpu=A100",
    "/api/tco?gpu=A100",
)


@dataclass
class Clients:
    """Answers of the clients, by outcome."""

    good: int = 0
    bad: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _read(port: int, page: str) -> str | None:
    """None for a good answer, else what was wrong with it."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.request("GET", page)
        answer = connection.getresponse()
        body = answer.read()
    except OSError as exc:
        return f"{page}: {exc!r}"
    finally:
        connection.close()
    if answer.status != 200 or not body:
        return f"{page}: HTTP {answer.status}, {body[:200]!r}"
    if page.startswith("/api/") and not json.loads(body):
        return f"{page}: an empty answer"
    return None


@contextmanager
def reading(port: int) -> Iterator[Clients]:
    """`CLIENTS` threads reading the pages in turn until the block ends."""
    clients, stop = Clients(), threading.Event()

    def client(first: int) -> None:
        n = first
        while not stop.is_set():
            wrong = _read(port, PAGES[n % len(PAGES)])
            with clients.lock:
                if wrong is None:
                    clients.good += 1
                else:
                    clients.bad.append(wrong)
            n += 1

    threads = [threading.Thread(target=client, args=(n,)) for n in range(CLIENTS)]
    for thread in threads:
        thread.start()
    try:
        yield clients
    finally:
        stop.set()
        for thread in threads:
            thread.join(120)


def _runs(store: Path) -> list[tuple[str, str]]:
    # Read as a user's own DuckDB session would, once the daemon has stopped.
    with duckdb.connect(str(store), read_only=True) as con:
        return con.execute("SELECT provider, status FROM collection_runs ORDER BY 1").fetchall()


def _after(daemon: DaemonProcess, store: Path, clients: Clients) -> None:
    assert daemon.stop(signal.SIGTERM) == 0, daemon.text()
    assert clients.bad == [], clients.bad[:5]
    assert clients.good >= RUNS * CLIENTS // 2  # the clients really read all along
    runs = _runs(store)
    said = daemon.count(" ok: ")
    assert len(runs) >= RUNS and {status for _, status in runs} == {"ok"}, runs
    assert said == len(runs), daemon.text()  # every collection the daemon ran is recorded
    assert "failed" not in daemon.text() and "Traceback" not in daemon.text()


def test_the_daemons_own_page_read_by_eight_clients_costs_no_collection(
    tmp_path: Path,
) -> None:
    port = _free_port()
    web = {"web": {"listen": f"127.0.0.1:{port}"}}
    with (
        replayed(tmp_path, names=("azure", "lambdalabs"), interval="2s", extra=web) as setup,
        DaemonProcess(setup) as daemon,
    ):
        daemon.wait_for(lambda lines: sum(" ok: " in line for line in lines) >= 2)
        with reading(port) as clients:
            daemon.wait_for(lambda lines: sum(" ok: " in line for line in lines) >= RUNS + 2)
        _after(daemon, setup.store, clients)


def test_serve_read_by_eight_clients_beside_a_daemon_costs_no_collection(
    tmp_path: Path,
) -> None:
    port = _free_port()
    with (
        replayed(tmp_path, names=("azure", "lambdalabs"), interval="2s") as setup,
        DaemonProcess(setup) as daemon,
    ):
        daemon.wait_for(lambda lines: sum(" ok: " in line for line in lines) >= 2)
        serve = subprocess.Popen(
            gpu_tracker(setup.config_path, "serve", "--listen", f"127.0.0.1:{port}"),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **setup.env},
        )
        try:
            wait_until(lambda: _read(port, "/health") is None, "serve answering", timeout=120)
            with reading(port) as clients:
                daemon.wait_for(lambda lines: sum(" ok: " in line for line in lines) >= RUNS + 2)
        finally:
            serve.send_signal(signal.SIGINT)
            _, errors = serve.communicate(timeout=60)
        assert "Traceback" not in errors, errors
        _after(daemon, setup.store, clients)
