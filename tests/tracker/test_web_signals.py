"""Stop signals with page requests in flight: `gpu-tracker serve` and a daemon serving `[web]`,
as real processes, while clients keep asking. Every trial of SIGTERM, SIGINT and SIGHUP exits
0, never aborts inside DuckDB ("terminate called"), and the daemon leaves no run unfinished.

Real processes started several times each: marked `daemon`, left out of the default run."""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path

import duckdb
import pytest

from tests.tracker.daemon_support import DaemonProcess, replayed, wait_until

pytestmark = pytest.mark.daemon

STOPS = [signal.SIGTERM, signal.SIGINT, signal.SIGHUP]
TRIALS = 2
PAGES = ("/", "/health", "/api/latest?limit=5", "/history?gpu=H100", "/assets/app.js")
_URL = re.compile(r"(http://127\.0\.0\.1:\d+)/")


class Traffic:
    """Clients asking for pages in a loop until `stop()`; `answered` counts full answers."""

    def __init__(self, base: str, clients: int = 4) -> None:
        self.base = base
        self.answered = 0
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._ask, args=(n,), daemon=True) for n in range(clients)
        ]
        for thread in self._threads:
            thread.start()

    def _ask(self, n: int) -> None:
        i = n
        while not self._stop.is_set():
            try:
                with urllib.request.urlopen(self.base + PAGES[i % len(PAGES)], timeout=30) as got:
                    got.read()
                self.answered += 1
            except urllib.error.HTTPError:  # a 503 while the store is busy: still an answer
                self.answered += 1
            except OSError:  # the server stopped under it
                pass
            i += 1

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(60)


class Lines:
    """A process's stderr, gathered line by line."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))

    def url(self) -> str:
        def found() -> bool:
            assert self.proc.poll() is None, "\n".join(self.lines)
            return any(_URL.search(line) for line in self.lines)

        wait_until(found, "the server's address")
        match = next(m for line in self.lines if (m := _URL.search(line)))
        return match.group(1)


def serve_command(store: Path) -> list[str]:
    listen = ["--listen", "127.0.0.1:0"]
    return [sys.executable, "-m", "tracker", "--db", str(store), "-v", "serve", *listen]


@pytest.fixture(scope="module")
def store(demo_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return Path(shutil.copy(demo_store, tmp_path_factory.mktemp("signals") / "prices.duckdb"))


@pytest.mark.parametrize("sig", STOPS, ids=lambda s: s.name)
def test_serve_stops_cleanly_with_requests_in_flight(store: Path, sig: signal.Signals) -> None:
    for _trial in range(TRIALS):
        with subprocess.Popen(
            serve_command(store), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        ) as proc:
            err = Lines(proc)
            try:
                traffic = Traffic(err.url())
                wait_until(lambda: traffic.answered >= 8, "answers to the clients")  # noqa: B023
                proc.send_signal(sig)
                code = proc.wait(60)
                traffic.stop()
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait(10)
            err.reader.join(30)
        text = "\n".join(err.lines)
        assert code == 0, text
        assert "terminate called" not in text
        assert f"{sig.name} received: stopping" in text
        assert text.rstrip().endswith("stopped")


@pytest.mark.parametrize("sig", STOPS, ids=lambda s: s.name)
def test_the_daemon_with_its_page_stops_cleanly_in_every_trial(
    tmp_path: Path, sig: signal.Signals
) -> None:
    web = {"web": {"listen": "127.0.0.1:0"}}
    for trial in range(TRIALS):
        where = tmp_path / f"trial-{trial}"
        where.mkdir()
        with (
            replayed(where, names=("azure",), interval="2s", extra=web) as setup,
            DaemonProcess(setup) as daemon,
        ):
            daemon.wait_for(lambda lines: any(_URL.search(line) for line in lines))
            base = next(m for line in daemon.lines if (m := _URL.search(line))).group(1)
            daemon.wait_for(lambda lines: any(" ok: " in line for line in lines))
            traffic = Traffic(base)
            wait_until(lambda: traffic.answered >= 8, "answers to the clients")  # noqa: B023
            code = daemon.stop(sig)
            traffic.stop()
        assert code == 0, daemon.text()
        assert "terminate called" not in daemon.text()
        assert daemon.said(f"daemon: {sig.name} received, stopping")
        with duckdb.connect(str(setup.store), read_only=True) as con:
            unfinished = con.execute(
                "SELECT count(*) FROM collection_runs WHERE finished_at IS NULL"
            ).fetchall()
        assert unfinished == [(0,)]
