"""The deadline per provider collection: a server that trickles its answer a byte at a time
never trips the per-read `timeout`, yet `collect` ends at the deadline, for the plain-HTTP
collectors and the SDK-based ones alike; the other providers still land."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from collectors import REGISTRY
from collectors.base import ProviderSettings
from collectors.common import CollectorError
from storage.query import query
from tracker.collecting.deadline import DeadlinePassed, within
from tracker.collecting.isolation import Isolated

RECORDINGS = Path(__file__).parents[2] / "tracker" / "demo_data"
# Every SDK the collectors drive (boto3, Tencent's, Alibaba's Tea, google-api-core's REST
# transport) and a plain `requests` one.
TRICKLED = ("aws", "gcp", "tencent", "alibaba", "lambdalabs")
CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "AKIDTEST",
    "AWS_SECRET_ACCESS_KEY": "test",
    "GOOGLE_API_KEY": "test",
    "TENCENTCLOUD_SECRET_ID": "test",
    "TENCENTCLOUD_SECRET_KEY": "test",
    "ALIBABA_CLOUD_ACCESS_KEY_ID": "test",
    "ALIBABA_CLOUD_ACCESS_KEY_SECRET": "test",
    "LAMBDA_API_KEY": "test",
}


class Trickler:
    """A loopback HTTP server that answers every request with headers promising a megabyte,
    then one byte per `every` seconds, for as long as the client keeps reading."""

    def __init__(self, every: float = 0.2) -> None:
        self.every = every
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.stop = threading.Event()
        self.requests = 0
        self.bytes_sent = 0
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def start(self) -> Trickler:
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def close(self) -> None:
        self.stop.set()
        self.sock.close()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(5)
            try:
                conn.recv(65536)  # the request (its body, if any, is never needed)
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    b"Content-Length: 1000000\r\n\r\n{"
                )
                with self.lock:
                    self.requests += 1
                while not self.stop.wait(self.every):  # the server's pace, not the test's
                    conn.sendall(b" ")
                    with self.lock:
                        self.bytes_sent += 1
            except OSError:  # the client gave up
                return


@pytest.fixture
def trickler() -> Iterator[Trickler]:
    server = Trickler().start()
    yield server
    server.close()


def write_config(tmp_path: Path, trickle_url: str, azure_url: str) -> Path:
    lines = ["[storage]\npath = 'prices.duckdb'"]
    for name in REGISTRY:
        if name == "azure":
            lines.append(f"[providers.azure]\nendpoint = '{azure_url}/api/retail/prices'")
        elif name not in TRICKLED:
            lines.append(f"[providers.{name}]\nenabled = false")
        elif name == "aws":
            urls = f"pricing_endpoint = '{trickle_url}'\nec2_endpoint = '{trickle_url}'"
            lines.append(f"[providers.aws]\n{urls}\nregions = ['us-east-1']")
        else:
            lines.append(f"[providers.{name}]\nendpoint = '{trickle_url}'")
        if name in TRICKLED:  # the read timeout is never reached (a byte every 0.2 s)
            lines.append("timeout = 5\ndeadline = '5s'")
    path = tmp_path / "config.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_collect_ends_at_the_deadline_and_the_others_land(
    tmp_path: Path, trickler: Trickler, replay: object
) -> None:
    azure = replay(RECORDINGS / "azure")  # type: ignore[operator]
    config = write_config(tmp_path, trickler.url, azure.url)
    env = {**os.environ, **CREDENTIALS, "AWS_EC2_METADATA_DISABLED": "true"}
    env.pop("GPU_TRACKER_DB", None)
    done = subprocess.run(
        [sys.executable, "-m", "tracker", "--config", str(config), "collect"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,  # a safety net only: the deadline ends it in seconds
        check=False,
    )
    assert done.returncode == 1, done.stderr
    store = tmp_path / "prices.duckdb"
    rows = query(store, "SELECT provider, status, error FROM collection_runs ORDER BY 1").rows
    by_provider = {p: (status, error) for p, status, error in rows}
    assert by_provider["azure"][0] == "ok"
    for name in TRICKLED:
        status, error = by_provider[name]
        assert status == "failed"
        assert error == f"{name}: deadline of 5s passed; the collection was stopped " + (
            f"(providers.{name}.deadline)"
        )
        assert f"{name}: deadline of 5s passed" in done.stderr
    assert trickler.requests >= len(TRICKLED)  # every one was really reading a trickle
    azure_prices = query(store, "SELECT count(*) FROM latest_prices WHERE provider = 'azure'")
    assert azure_prices.rows[0][0] > 0


def test_the_daemon_kills_the_collection_at_the_deadline(trickler: Trickler) -> None:
    """The daemon's collections run in a child process: killed at the deadline, which is
    shorter here than the daemon's own job time limit."""
    settings = ProviderSettings(
        endpoint=trickler.url,
        credentials={"api_key": "test"},
        timeout=5,
        deadline_s=5,  # the child's start and imports count here: room for a busy machine
    )
    fetch = Isolated(threading.Event(), timeouts={"lambdalabs": 3600})
    with pytest.raises(DeadlinePassed, match=r"^lambdalabs: deadline of 5s passed"):
        fetch("lambdalabs", settings, datetime.now(UTC))
    assert trickler.requests == 1


def test_within_hands_back_the_result_or_the_error() -> None:
    assert within("x", 5, lambda: 42) == 42
    assert within("x", None, lambda: 43) == 43
    with pytest.raises(CollectorError, match="boom"):
        within("x", 5, _boom)
    release = threading.Event()
    with pytest.raises(DeadlinePassed, match=r"^x: deadline of 0.01s passed"):
        within("x", 0.01, release.wait)  # never set: it outlasts the deadline
    release.set()
    assert str(DeadlinePassed("aws", 600)).startswith("aws: deadline of 10m passed;")


def _boom() -> None:
    raise CollectorError("x", "boom")
