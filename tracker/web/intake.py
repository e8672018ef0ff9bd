"""The dashboard's connections, read on uvicorn's event loop (h11): a slow or idle client holds
no thread, only a socket, and the bounds here keep even those few (docs/web.md, "How it
treats the store").

A request's head (request line and headers) must arrive whole within `DEADLINE_S` of the
connection, or of its first byte after an answer on a kept-alive one, however it trickles in,
or the connection is answered 408 and closed. Connections still sending a head are capped in
all (`MAX_PENDING`) and per client address (`MAX_PER_CLIENT`); at a cap the oldest of them is
dropped, so a client that opens connections and sends nothing cannot keep a new request out.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger("tracker.web")

DEADLINE_S = 10.0  # from connect (or the first byte of the next request) to the end of its head
MAX_HEAD = 64 * 1024  # request line and headers (h11's bound on an incomplete event)
MAX_PENDING = 512  # connections sending a head, in all
MAX_PER_CLIENT = 64  # of those, from one address
_TIMED_OUT = b"HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


def pending(server_state: Any) -> OrderedDict[Intake, str]:
    """The connections of a server still sending a head, oldest first, with their client's
    address (kept on uvicorn's per-server state, made on first use)."""
    if not hasattr(server_state, "heads"):
        server_state.heads = OrderedDict()
    heads: OrderedDict[Intake, str] = server_state.heads
    return heads


class Intake(H11Protocol):
    """uvicorn's h11 protocol with a deadline on each request's head and the caps above."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._due: asyncio.TimerHandle | None = None
        self._heads = pending(self.server_state)

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._await_head()

    def data_received(self, data: bytes) -> None:
        if self._due is None and self._between_requests():
            self._await_head()  # the next request's first byte: its head is due from now
        super().data_received(data)
        if not self._between_requests():
            self._head_arrived()

    def connection_lost(self, exc: Exception | None) -> None:
        self._head_arrived()
        super().connection_lost(exc)

    def _between_requests(self) -> bool:
        return self.cycle is None or self.cycle.response_complete

    def _await_head(self) -> None:
        host = self.client[0] if self.client else ""
        mine = [c for c, h in self._heads.items() if h == host]
        if len(mine) >= MAX_PER_CLIENT:
            mine[0]._drop()
        elif len(self._heads) >= MAX_PENDING:
            next(iter(self._heads))._drop()
        self._heads[self] = host
        self._due = self.loop.call_later(DEADLINE_S, self._too_slow)

    def _head_arrived(self) -> None:
        if self._due is not None:
            self._due.cancel()
            self._due = None
        self._heads.pop(self, None)

    def _too_slow(self) -> None:
        self._due = None
        if self._between_requests():
            host = self.client[0] if self.client else "?"
            log.debug("web: %s sent no whole request in %g s: closed", host, DEADLINE_S)
            self._drop(_TIMED_OUT)

    def _drop(self, answer: bytes = b"") -> None:
        self._head_arrived()
        if not self.transport.is_closing():
            if answer:
                self.transport.write(answer)
            self.transport.close()
