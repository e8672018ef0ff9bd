"""Fixtures of the collector tests: loopback replay servers, stopped after each test."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.collectors.support import recording
from tracker.collecting.replay import Exchange, Recording, ReplayServer


@pytest.fixture
def serve() -> Iterator[Callable[..., ReplayServer]]:
    """A server answering the exchanges given (`rewrite`: upstream hosts its links name)."""
    servers: list[ReplayServer] = []

    def start(*exchanges: Exchange, rewrite: Sequence[str] = ()) -> ReplayServer:
        server = ReplayServer(Recording(list(exchanges), rewrite=list(rewrite))).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def answering(tmp_path: Path) -> Iterator[Callable[..., ReplayServer]]:
    """A loopback server that gives every request the same answer (200, "{}" unless told)."""
    servers: list[ReplayServer] = []

    def start(**answer: Any) -> ReplayServer:
        exchange = {"match": {}, "content_type": "application/json", "body": "{}", **answer}
        server = ReplayServer(Recording.load(recording(tmp_path, exchange))).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()
