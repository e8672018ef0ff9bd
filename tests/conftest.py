"""Shared test fixtures: a fixed collection time, fixture folders, loopback replay servers."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tracker.replay import Recording, ReplayServer

FIXTURES = Path(__file__).parent / "fixtures"
OBSERVED_AT = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--live", action="store_true", help="also run tests against the real APIs")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--live"):
        return
    skip = pytest.mark.skip(reason="live test: run with --live (and credentials)")
    for item in items:
        if "live" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def observed_at() -> datetime:
    return OBSERVED_AT


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES


@pytest.fixture
def replay() -> Iterator[object]:
    """Start a loopback server over one or more recording folders: `replay(FIXTURES / "aws")`."""
    servers: list[ReplayServer] = []

    def start(*folders: Path) -> ReplayServer:
        server = ReplayServer(*(Recording.load(f) for f in folders)).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()
