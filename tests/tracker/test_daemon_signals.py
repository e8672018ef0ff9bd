"""A stop signal while the daemon command starts: from the moment it takes the store's lock
(its PID file tells a service manager the daemon is there) a SIGTERM, SIGINT or SIGHUP is caught and
remembered, and the daemon, once built, stops before it starts, exit 0. The handlers are
recorded, not installed, so the test run keeps its own."""

from __future__ import annotations

import logging
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from collectors import REGISTRY
from tracker.config import from_dict
from tracker.daemon import service
from tracker.daemon.entry import catch_stop_signals
from tracker.daemon.service import Daemon
from tracker.running.state import daemon_running

Handler = Callable[[int, Any], None]


@pytest.fixture
def handlers(monkeypatch: pytest.MonkeyPatch) -> dict[int, Handler]:
    """The signal handlers the daemon installs, by signal (none reaches the process)."""
    installed: dict[int, Handler] = {}

    def record(signum: int, handler: Handler) -> None:
        installed[signum] = handler

    monkeypatch.setattr(service.signal, "signal", record)
    return installed


def test_signals_before_the_daemon_is_built_are_remembered(handlers: dict[int, Handler]) -> None:
    caught = catch_stop_signals()
    assert set(handlers) == {signal.SIGTERM, signal.SIGINT, signal.SIGHUP}
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        handlers[signum](signum, None)
    assert caught == [signal.SIGTERM, signal.SIGINT, signal.SIGHUP]


def test_a_signal_caught_early_stops_the_daemon_before_it_starts(
    tmp_path: Path, handlers: dict[int, Handler], caplog: pytest.LogCaptureFixture
) -> None:
    providers: dict[str, Any] = {name: {"enabled": False} for name in REGISTRY}
    providers["lambdalabs"] = {"interval": "1h"}
    store = tmp_path / "prices.duckdb"
    config = from_dict({"storage": {"path": str(store)}, "providers": providers}, source=None)
    early = catch_stop_signals()
    handlers[signal.SIGTERM](signal.SIGTERM, None)  # while the ports were being bound
    daemon = Daemon(config, {})
    with caplog.at_level(logging.INFO, logger="tracker.daemon"):
        assert daemon.run(early=early) == 0
    assert handlers[signal.SIGTERM] == daemon.request_stop  # the daemon's own from then on
    said = [r.getMessage() for r in caplog.records]
    assert "daemon: SIGTERM received, stopping" in said
    assert "daemon stopped before it started" in said
    assert not daemon.scheduler.running
    assert not daemon_running(store)  # the lock released
