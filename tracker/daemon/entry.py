"""The daemon's way in: what `gpu-tracker daemon` starts once its config is loaded. The store's
lock, the stop signals caught early, the metrics and dashboard ports, then the scheduler
(`tracker.daemon.service`) until it stops (docs/daemon.md)."""

from __future__ import annotations

import signal
from collections.abc import Callable, Mapping
from types import FrameType
from typing import Any, Literal

from storage.connection import probe
from tracker.collecting.preflight import check_store_path
from tracker.config import Config
from tracker.daemon.service import Daemon
from tracker.running.state import DaemonLock

# Every signal that stops the daemon: SIGHUP too (a closed terminal, or a service manager's
# reload it does not have), which otherwise killed it with collections in flight.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def catch_stop_signals() -> list[int]:
    """From now on SIGTERM, SIGINT and SIGHUP are remembered in the returned list, not fatal. The
    daemon command calls this before it takes the store's lock, whose PID file tells a service
    manager (or a test) that the daemon is there to stop; `Daemon.run(early=...)` then acts on
    what came. Without it a signal while the ports were bound killed the process outright."""
    caught: list[int] = []

    def remember(signum: int, _frame: FrameType | None) -> None:
        caught.append(signum)

    for signum in STOP_SIGNALS:
        signal.signal(signum, remember)
    return caught


def serve(
    config: Config,
    env: Mapping[str, str],
    *,
    log_format: Literal["text", "json"],
    verbose: bool,
    start_web: Callable[[Config], Any],
) -> int:
    """Run the daemon until it stops; its exit status. `start_web` starts the dashboard when
    [web] asks for it (the command line's, so the daemon imports no web server). ConfigError
    and StoreError come out as they are; the ports are closed and the lock released first."""
    metrics, server, web = None, None, None
    lock = DaemonLock(config.store_path)
    try:
        check_store_path(config.store_path, config.store_key, config.source)
        # A stop from the moment the lock names this process: kept for the daemon to act on.
        early = catch_stop_signals()
        # The store's lock before anything is bound: a second daemon is refused as such, not
        # for the metrics port the first one holds.
        lock.acquire()
        probe(config.store_path)  # a damaged store file: exit 2 before any port is bound
        if config.metrics.enabled:
            from tracker.daemon.metrics import Metrics  # prometheus_client only when asked for

            metrics = Metrics()
            server = metrics.serve(config.metrics)
        if config.web.enabled:  # after the lock too: a second daemon never takes the port
            web = start_web(config)
        daemon = Daemon(config, env, metrics, log_format=log_format, verbose=verbose)
        return daemon.run(lock, early)
    finally:
        if server is not None:
            server.close()
        if web is not None:
            web.close()
        lock.release()
