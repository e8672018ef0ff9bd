"""The dashboard against slow and hostile clients, through a real server on loopback: trickling
and idle connections do not keep a normal request out, a request must arrive whole within its
deadline, the `Host` must be one of the page's names, a reset is one log line, and no log line
carries a control character raw."""

from __future__ import annotations

import contextlib
import io
import logging
import re
import shutil
import socket
import struct
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.tracker.daemon_support import wait_until
from tracker import config as config_mod
from tracker.cli import cli
from tracker.collecting.logs import SafeText, escape
from tracker.config.web import WebSettings
from tracker.web import hosts, intake
from tracker.web.server import Running, start_for


@pytest.fixture(scope="module")
def store(demo_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return Path(shutil.copy(demo_store, tmp_path_factory.mktemp("guard") / "prices.duckdb"))


def serving(store: Path, settings: WebSettings) -> Running:
    config = config_mod.from_dict({"storage": {"path": str(store)}}, source=None)
    return start_for(config, settings, "web.listen")


@pytest.fixture(scope="module")
def server(store: Path) -> Iterator[Running]:
    running = serving(store, WebSettings("127.0.0.1", 0, allowed_hosts=("dash.example.com",)))
    yield running
    running.close()


def port(server: Running) -> int:
    return server.address[1]


def ask(server: Running, head: str) -> tuple[int, bytes]:
    """A raw request (its head as given); the status and the body."""
    with socket.create_connection(("127.0.0.1", port(server)), timeout=60) as sock:
        sock.sendall(head.encode("latin-1"))
        answer = b""
        while (chunk := sock.recv(65536)) and not _whole(answer := answer + chunk):
            pass
    status_line, _, rest = answer.partition(b"\r\n")
    return int(status_line.split()[1]), rest.partition(b"\r\n\r\n")[2]


def _whole(answer: bytes) -> bool:
    """Whether the answer is all there (the connection may be kept alive after it)."""
    head, end, body = answer.partition(b"\r\n\r\n")
    length = re.search(rb"(?i)\r\ncontent-length: *(\d+)", head)
    return bool(end) and length is not None and len(body) >= int(length[1])


def test_slow_and_idle_clients_do_not_keep_a_request_out(server: Running) -> None:
    stop = threading.Event()
    idle = [socket.create_connection(("127.0.0.1", port(server))) for _ in range(8)]
    slow = [socket.create_connection(("127.0.0.1", port(server))) for _ in range(10)]

    def trickle(sock: socket.socket) -> None:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        while not stop.wait(2.0):  # a header byte every 2 s: never a whole request
            try:
                sock.sendall(b"X")
            except OSError:
                return

    threads = [threading.Thread(target=trickle, args=(s,), daemon=True) for s in slow]
    for thread in threads:
        thread.start()
    try:
        heads = intake.pending(server.server.server_state)
        wait_until(lambda: len(heads) >= 18, "the 18 connections being read")
        # Waited on, not timed: answered while the 18 connections still send their heads.
        status, body = ask(server, "GET /api/latest?limit=1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert status == 200 and body.startswith(b"[")
        assert len(heads) >= 18 and not any(s.fileno() == -1 for s in idle + slow)
    finally:
        stop.set()
        for sock in idle + slow:
            sock.close()


def test_a_request_must_arrive_whole_within_its_deadline(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(intake, "DEADLINE_S", 1.0)
    running = serving(store, WebSettings("127.0.0.1", 0))
    try:
        client = socket.create_connection(("127.0.0.1", port(running)))
        client.sendall(b"GET / HTTP/1.1\r\n")
        client.settimeout(0.2)
        answer, closed = b"", False
        deadline = time.monotonic() + 60  # only a failure bound
        while not closed and time.monotonic() < deadline:
            try:
                chunk = client.recv(1024)
            except TimeoutError:  # nothing yet: one more byte, never the end of the headers
                with contextlib.suppress(OSError):
                    client.sendall(b"X")
                continue
            except ConnectionResetError:
                chunk = b""
            answer += chunk
            closed = not chunk
        client.close()
    finally:
        running.close()
    assert closed  # cut off, though it never stopped sending
    assert answer == b"" or answer.startswith(b"HTTP/1.1 408")


def test_at_the_cap_of_one_address_the_oldest_connection_is_dropped(
    server: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(intake, "MAX_PER_CLIENT", 3)
    heads = intake.pending(server.server.server_state)
    clients = []
    for n in range(4):
        clients.append(socket.create_connection(("127.0.0.1", port(server))))
        wait_until(lambda: len(heads) == min(n + 1, 3), "the connection being read")  # noqa: B023
    clients[0].settimeout(60)
    assert clients[0].recv(1) == b""  # the oldest, closed for the newest
    clients[3].settimeout(60)
    clients[3].sendall(b"GET /assets/app.js HTTP/1.0\r\n\r\n")
    assert clients[3].recv(12) == b"HTTP/1.1 200"
    for client in clients:
        client.close()


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1", "localhost", "LOCALHOST:8080", "[::1]", "[::1]:80", "dash.example.com:443"],
)
def test_the_pages_own_names_are_answered(server: Running, host: str) -> None:
    assert ask(server, f"GET /assets/app.js HTTP/1.1\r\nHost: {host}\r\n\r\n")[0] == 200


def test_a_request_without_host_is_answered(server: Running) -> None:
    assert ask(server, "GET /assets/app.js HTTP/1.0\r\n\r\n")[0] == 200


def test_another_host_is_refused_and_said_once(
    server: Running, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="tracker.web"):
        for _ in range(3):
            status, body = ask(server, "GET /api/latest HTTP/1.1\r\nHost: evil.example:80\r\n\r\n")
            assert status == 421
            assert b"answers only to its own host names" in body and b"[" not in body
    refused = [r for r in caplog.records if "refused a request for host" in r.getMessage()]
    assert [r.levelno for r in refused] == [logging.WARNING, logging.DEBUG, logging.DEBUG][
        : len(refused)
    ]
    assert sum(r.levelno == logging.WARNING for r in refused) == 1
    assert "evil.example:80" in refused[0].getMessage()


def test_allow_remote_admits_this_machine_and_addresses() -> None:
    local = hosts.allowed("127.0.0.1", allow_remote=False)
    assert not local.admits("192.168.1.5:8080") and not local.admits(socket.gethostname())
    remote = hosts.allowed("0.0.0.0", allow_remote=True, extra=("Dash.Example.com.",))
    assert remote.admits("192.168.1.5:8080") and remote.admits("[fe80::1]")
    assert remote.admits(socket.gethostname()) and remote.admits("dash.example.com")
    assert not remote.admits("evil.example") and not remote.admits("0.0.0.0.evil.example")
    for broken in ("a b", "host:port", "[::1", "user@host", ""):
        assert not remote.admits(broken), broken


def test_allow_remote_takes_names(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["--db", str(tmp_path / "p.duckdb"), "serve", "--allow-remote", "not a name"]
    )
    assert result.exit_code == 2
    assert "--allow-remote: 'not a name' is not a host name" in result.stderr


def test_resets_are_one_line_each(server: Running, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="tracker.web"):
        for _ in range(10):
            sock = socket.create_connection(("127.0.0.1", port(server)))
            sock.sendall(b"GET /assets/style.css HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.close()  # a reset, before the answer is read
        assert ask(server, "GET /assets/app.js HTTP/1.0\r\n\r\n")[0] == 200
        connections = server.server.server_state.connections
        wait_until(lambda: not connections, "an idle server")
        try:  # and what the server says of one it met while answering
            raise ConnectionResetError(104, "Connection reset by peer")
        except ConnectionResetError as exc:
            server.dashboard.failures.report("192.0.2.1", exc)
    web = [r for r in caplog.records if r.name == "tracker.web"]
    assert not [r for r in web if r.levelno >= logging.ERROR]
    assert "Traceback" not in caplog.text
    closed = [r.getMessage() for r in web if "connection closed by the client" in r.getMessage()]
    assert 1 <= len(closed) <= 11
    assert "web: 192.0.2.1: connection closed by the client (Connection reset by peer)" in closed


def test_no_log_line_carries_a_control_character_raw() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(SafeText("%(levelname)s %(message)s"))
    logger = logging.getLogger("tests.web_guard")
    logger.addHandler(handler)
    try:
        logger.warning("request %s", "GET /\x1b[2J\x1b]0;owned\x07\r\x9b HTTP/1.1")
        logger.warning("two\nlines")
    finally:
        logger.removeHandler(handler)
    text = stream.getvalue()
    assert "\x1b" not in text and "\x07" not in text and "\r" not in text and "\x9b" not in text
    assert "GET /\\x1b[2J\\x1b]0;owned\\x07\\x0d\\x9b HTTP/1.1" in text
    assert "two\nlines" in text  # a message's own newlines stay (a traceback's lines)
    assert escape("a\nb", newlines=True) == "a\\nb"


def test_the_access_log_escapes_what_the_client_sent(
    server: Running, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO):
        # A control character in the request line is no request at all (h11 refuses it)...
        assert ask(server, "GET /\x1b[31mred HTTP/1.0\r\n\r\n")[0] == 400
        # ... and one in a header the log names is escaped.
        assert ask(server, "GET / HTTP/1.1\r\nHost: \x1b[31mred\r\n\r\n")[0] == 421
        wait_until(lambda: any("red" in r.getMessage() for r in caplog.records), "the log line")
    assert not [r for r in caplog.records if "\x1b" in r.getMessage()]
    line = next(r.getMessage() for r in caplog.records if "red" in r.getMessage())
    assert "\\x1b[31mred" in line


def test_a_failure_repeated_shows_its_traceback_once(
    server: Running, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="tracker.web"):
        for _ in range(3):
            try:
                raise RuntimeError("a bug in a page")
            except RuntimeError as exc:
                server.dashboard.failures.report("192.0.2.2", exc)
    failed = [r for r in caplog.records if "a bug in a page" in r.getMessage()]
    assert len(failed) == 3
    assert caplog.text.count("Traceback") == 1, caplog.text


def test_the_daemons_web_table_takes_allowed_hosts() -> None:
    from collectors.common import ConfigError
    from tracker.config.web import parse_web

    got = parse_web({"listen": "127.0.0.1:8080", "allowed_hosts": ["dash.example.com"]})
    assert got.allowed_hosts == ("dash.example.com",) and not got.allow_remote
    with pytest.raises(ConfigError, match=r"web\.allowed_hosts: 'dash/x' is not a host name"):
        parse_web({"allowed_hosts": ["dash/x"]})
    with pytest.raises(ConfigError, match=r"web\.allowed_hosts: expected a list of host names"):
        parse_web({"allowed_hosts": "dash.example.com"})


def test_reads_run_on_a_bounded_pool_and_waiting_requests_hold_no_thread(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tracker.web import app
    from tracker.web.server import Site, start

    monkeypatch.setattr(app, "MAX_WORKERS", 2)
    release, inside = threading.Event(), []

    def status(_runs: object) -> object:  # the Health panel's read, held until released
        inside.append(1)
        release.wait(60)
        raise RuntimeError("released")

    running = start(WebSettings("127.0.0.1", 0), Site(store, 60.0, status))
    answers: list[int] = []
    asking = [
        threading.Thread(
            target=lambda: answers.append(ask(running, "GET /health HTTP/1.0\r\n\r\n")[0])
        )
        for _ in range(5)
    ]
    try:
        for thread in asking:
            thread.start()

        def limiter_full() -> bool:
            found = running.dashboard._limiter
            waiting = found is not None and found.statistics().tasks_waiting == 3
            return waiting and len(inside) == 2

        wait_until(limiter_full, "two reads running and three waiting their turn")
        assert len(inside) == 2 and running.dashboard._limiter is not None
        assert running.dashboard._limiter.borrowed_tokens == 2
        # The event loop is free meanwhile: what needs no read is answered.
        assert ask(running, "GET /assets/app.js HTTP/1.0\r\n\r\n")[0] == 200
    finally:
        release.set()
        for thread in asking:
            thread.join(60)
        running.close()
    assert answers == [500] * 5 and len(inside) == 5
