"""The dashboard's first stage: reading requests off accepted connections, on one thread.

A request's head (request line and headers) must arrive whole within `deadline_s` of the
connection, however it trickles in; only a whole head is handed on to the few workers that
read the store, so idle or slow clients never hold one of them. Connections still being read
are capped in all and per client address; at a cap the oldest of them is dropped, so a client
that opens connections and sends nothing cannot keep a new request out (docs/web.md).
"""

from __future__ import annotations

import contextlib
import logging
import selectors
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger("tracker.web")

DEADLINE_S = 10.0  # from connect to the end of the headers
MAX_HEAD = 64 * 1024  # request line and headers
MAX_PENDING = 512  # connections being read, in all
MAX_PER_CLIENT = 64  # of those, from one address
_TIMED_OUT = b"HTTP/1.0 408 Request Timeout\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
_TOO_LARGE = (
    b"HTTP/1.0 431 Request Header Fields Too Large\r\nContent-Length: 0\r\n"
    b"Connection: close\r\n\r\n"
)

HandOn = Callable[[socket.socket, Any, bytes], None]


@dataclass
class _Pending:
    sock: socket.socket
    address: Any
    due: float
    head: bytearray = field(default_factory=bytearray)


class Intake:
    """Reads heads on a thread of its own; `hand_on(sock, address, head)` gets each whole one
    (the socket back in blocking mode), on this thread: it must not block."""

    def __init__(self, hand_on: HandOn, *, deadline_s: float = DEADLINE_S) -> None:
        self.hand_on = hand_on
        self.deadline_s = deadline_s
        self._selector = selectors.DefaultSelector()
        self._pending: OrderedDict[socket.socket, _Pending] = OrderedDict()  # oldest first
        self._new: list[tuple[socket.socket, Any]] = []
        self._lock = threading.Lock()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._selector.register(self._wake_r, selectors.EVENT_READ)
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="web-intake")

    def start(self) -> None:
        self.thread.start()

    def add(self, sock: socket.socket, address: Any) -> None:
        """A connection just accepted (from the accepting thread)."""
        with self._lock:
            self._new.append((sock, address))
        self._wake()

    def close(self) -> None:
        """Stop reading and close every connection not handed on."""
        self._stop.set()
        self._wake()
        if self.thread.is_alive():
            self.thread.join()
        with self._lock:
            late, self._new = self._new, []
        for sock, _address in late:
            _close(sock)
        self._selector.close()
        self._wake_r.close()
        self._wake_w.close()

    def _wake(self) -> None:
        # Closed, or its buffer full: the loop is awake either way.
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                self._admit()
                timeout = self._expire()
                for key, _events in self._selector.select(timeout):
                    if key.fileobj is self._wake_r:
                        self._drain_wake()
                    else:
                        self._read(self._pending.get(key.fileobj))  # type: ignore[call-overload]
        finally:
            for pending in list(self._pending.values()):
                self._drop(pending)

    def _admit(self) -> None:
        with self._lock:
            new, self._new = self._new, []
        for sock, address in new:
            self._make_room(address)
            sock.setblocking(False)
            pending = _Pending(sock, address, time.monotonic() + self.deadline_s)
            self._pending[sock] = pending
            self._selector.register(sock, selectors.EVENT_READ)

    def _make_room(self, address: Any) -> None:
        """At a cap, the oldest connection (of this address, at its own cap) is dropped."""
        host = _host(address)
        mine = [p for p in self._pending.values() if _host(p.address) == host]
        if len(mine) >= MAX_PER_CLIENT:
            self._drop(mine[0])
        elif len(self._pending) >= MAX_PENDING:
            self._drop(next(iter(self._pending.values())))

    def _expire(self) -> float:
        """Close the connections past their deadline; the wait until the next one's."""
        now = time.monotonic()
        for pending in [p for p in self._pending.values() if p.due <= now]:
            log.debug(
                "web: %s sent no whole request in %g s: closed", pending.address[0], self.deadline_s
            )
            self._drop(pending, _TIMED_OUT)
        nearest = min((p.due for p in self._pending.values()), default=now + 1.0)
        return max(0.0, min(nearest - now, 1.0))

    def _read(self, pending: _Pending | None) -> None:
        if pending is None:
            return
        try:
            chunk = pending.sock.recv(8192)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""
        if not chunk:  # the client went away
            self._drop(pending)
            return
        pending.head += chunk
        if b"\r\n\r\n" in pending.head or b"\n\n" in pending.head:
            self._forget(pending)
            pending.sock.setblocking(True)
            self.hand_on(pending.sock, pending.address, bytes(pending.head))
        elif len(pending.head) > MAX_HEAD:
            self._drop(pending, _TOO_LARGE)

    def _drain_wake(self) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except OSError:
            pass

    def _forget(self, pending: _Pending) -> None:
        self._pending.pop(pending.sock, None)
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(pending.sock)

    def _drop(self, pending: _Pending, answer: bytes = b"") -> None:
        self._forget(pending)
        if answer:
            with contextlib.suppress(OSError):  # non-blocking: what fits, else nothing
                pending.sock.send(answer)
        _close(pending.sock)


def _host(address: Any) -> Any:
    return address[0] if isinstance(address, tuple) else address


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.close()
