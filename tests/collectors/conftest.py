"""Fixtures of the collector tests: loopback replay servers, stopped after each test."""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import responses

from tests.collectors.support import recording
from tracker.collecting.demo import DEMO_DATA
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


@pytest.fixture
def url_of() -> Iterator[Callable[[str, ReplayServer], str]]:
    """The URL a provider's collector asks `server` at: the server's own, or, for an API that
    is not HTTP (Nebius' gRPC), that of the front its demo recording names (`front` in its
    demo.json), started over the server and stopped after the test."""
    fronts: list[Any] = []

    def url(provider: str, server: ReplayServer) -> str:
        target = json.loads((DEMO_DATA / provider / "demo.json").read_text()).get("front")
        if not target:
            return server.url
        module, _, function = target.partition(":")
        front = getattr(importlib.import_module(module), function)(server).start()
        fronts.append(front)
        return str(front.url)

    yield url
    for front in fronts:
        front.stop()


@pytest.fixture
def rsps() -> Iterator[responses.RequestsMock]:
    """`responses` mocking the requests stack for the test (a request it does not know fails)."""
    with responses.RequestsMock() as mock:
        yield mock
