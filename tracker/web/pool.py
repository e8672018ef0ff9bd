"""The dashboard server's connection machinery, without its pages: an intake thread reads
requests (`tracker.web.intake`), `MAX_WORKERS` threads answer whole ones, and `stop()` ends
them all, so a stopping process never leaves a thread inside a store read (docs/web.md).
"""

from __future__ import annotations

import contextlib
import logging
import queue
import socket
import socketserver
import sys
import threading
import time
from typing import Any

from storage.reads.sandbox import interrupt_all
from tracker.web.intake import Intake

log = logging.getLogger("tracker.web")

MAX_WORKERS = 8  # requests answered at once; more wait for a free one
MAX_WAITING = 256  # whole requests waiting for a worker; more are answered 503
GRACE_S = 5.0  # a stop waits this long for requests in flight before interrupting them
_BUSY = b"HTTP/1.0 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"

Waiting = tuple[socket.socket, Any, bytes]


class PooledServer(socketserver.TCPServer):
    """A TCP server whose handlers get `(socket, head)` as their request, on a worker."""

    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], handler: Any) -> None:
        self.waiting: queue.Queue[Waiting | None] = queue.Queue()
        self.stopping = threading.Event()  # past the grace: what still waits is dropped
        self._serving: dict[int, socket.socket] = {}
        self._failures: set[str] = set()
        super().__init__(address, handler)
        self.intake = Intake(self._enqueue)
        self.workers = [
            threading.Thread(target=self._work, name=f"web-{n}") for n in range(MAX_WORKERS)
        ]
        self.intake.start()
        for worker in self.workers:
            worker.start()

    def process_request(self, request: Any, client_address: Any) -> None:
        self.intake.add(request, client_address)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """One line for a client gone mid-answer (or a read stopped by the server's own stop);
        a traceback only for what is the server's fault."""
        exc = sys.exc_info()[1]
        who = client_address[0] if isinstance(client_address, tuple) else client_address
        if isinstance(exc, OSError):
            log.info("web: %s: connection closed by the client (%s)", who, _why(exc))
        elif self.stopping.is_set():
            log.info("web: %s: request stopped with the server", who)
        else:  # the traceback once per kind of failure: a busy server repeats them
            kind = f"{type(exc).__name__}: {str(exc)[:200]}"
            first = kind not in self._failures and len(self._failures) < 100
            if first:
                self._failures.add(kind)
            log.error("web: %s: request failed: %s", who, kind, exc_info=exc if first else None)

    def stop(self, grace_s: float = GRACE_S) -> None:
        """After `shutdown()`: no new connection; requests in flight get `grace_s`, then their
        reads are interrupted and their sockets shut; every thread joined."""
        self.socket.close()
        self.intake.close()
        for _ in self.workers:
            self.waiting.put(None)
        deadline = time.monotonic() + grace_s
        for worker in self.workers:
            worker.join(max(0.0, deadline - time.monotonic()))
        if any(worker.is_alive() for worker in self.workers):
            self.stopping.set()
            while any(worker.is_alive() for worker in self.workers):
                interrupt_all()
                for sock in list(self._serving.values()):
                    _shut(sock)
                for worker in self.workers:
                    worker.join(0.05)

    def _enqueue(self, sock: socket.socket, address: Any, head: bytes) -> None:
        if self.waiting.qsize() >= MAX_WAITING:
            with contextlib.suppress(OSError):
                sock.sendall(_BUSY)
            sock.close()
            return
        self.waiting.put((sock, address, head))

    def _work(self) -> None:
        while (item := self.waiting.get()) is not None:
            sock, address, head = item
            if self.stopping.is_set():
                sock.close()
                continue
            self._serving[threading.get_ident()] = sock
            try:
                self.finish_request((sock, head), address)  # type: ignore[arg-type]
            except Exception:
                self.handle_error(sock, address)
            finally:
                self._serving.pop(threading.get_ident(), None)
                self.shutdown_request(sock)


def _why(exc: BaseException) -> str:
    return getattr(exc, "strerror", None) or type(exc).__name__


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
