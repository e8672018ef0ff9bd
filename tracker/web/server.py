"""The dashboard's server: the Starlette application (`tracker.web.app`) on uvicorn, in a
thread of its own, so that `gpu-tracker serve` and the daemon keep their main thread (and
their signals: uvicorn installs no handler off the main thread).

The listening socket is bound here, before the thread starts, so an address that cannot be had
is the caller's error at once. Connections are read on the event loop (`tracker.web.intake`:
a slow client holds no thread); store reads run on at most `app.MAX_WORKERS` threads. `close()`
stops accepting, lets the requests in flight finish (their reads interrupted after a grace) and
joins the thread, so the process never exits with a thread inside DuckDB.
"""

from __future__ import annotations

import socket
import threading
from dataclasses import dataclass

import uvicorn

from collectors.common import ConfigError
from storage.reads.sandbox import interrupt_all
from tracker.config import Config
from tracker.config.web import WebSettings
from tracker.web import app, hosts, intake
from tracker.web.app import Dashboard, Site

__all__ = ["GRACE_S", "Running", "Site", "start", "start_for"]

GRACE_S = 5.0  # a stop waits this long for requests in flight before interrupting them
MAX_CONNECTIONS = 1024  # open at once; a request past it is answered 503
KEEP_ALIVE_S = 5  # an idle kept-alive connection is closed after this long


@dataclass
class Running:
    """A server answering on its own thread; `close()` stops it and frees the port."""

    server: uvicorn.Server
    dashboard: Dashboard
    sock: socket.socket
    thread: threading.Thread

    @property
    def address(self) -> tuple[str, int]:
        host, port = self.sock.getsockname()[:2]
        return str(host), int(port)

    @property
    def url(self) -> str:
        host, port = self.address
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{port}/"

    def close(self, grace_s: float = GRACE_S) -> None:
        """No new connection; requests in flight get `grace_s`, then their reads are
        interrupted until the server's thread has ended."""
        self.server.config.timeout_graceful_shutdown = max(1, round(grace_s))
        self.server.should_exit = True
        self.thread.join(grace_s + 1.0)
        while self.thread.is_alive():
            interrupt_all()
            self.thread.join(0.05)
        self.sock.close()
        self.dashboard.pages.close(grace_s)


def start_for(config: Config, settings: WebSettings, key: str) -> Running:
    """The dashboard of `config`'s store on `settings`; a ConfigError naming `key` when the
    address cannot be had."""
    from tracker.running import status

    site = Site(
        config.store_path,
        config.store.query_timeout_s,
        lambda last: status.gather(config, last),
        config.workloads,
        config.review.gpus,
    )
    try:
        return start(settings, site)
    except OSError as exc:
        why = exc.strerror or str(exc)
        raise ConfigError(f"{key}: cannot listen on {settings.address}: {why}") from exc


def start(settings: WebSettings, site: Site) -> Running:
    """Listen on `settings` (port 0: any free one) and answer on a thread of its own."""
    admitted = hosts.allowed(
        settings.host, allow_remote=settings.allow_remote, extra=settings.allowed_hosts
    )
    host = str(settings.host)
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, settings.port))
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    guarded, dashboard = app.build(site, admitted)
    config = uvicorn.Config(
        guarded,
        loop="asyncio",
        http=intake.Intake,
        ws="none",
        lifespan="off",
        log_config=None,
        log_level="warning",
        access_log=False,  # the guard logs each request, escaped
        server_header=False,
        limit_concurrency=MAX_CONNECTIONS,
        timeout_keep_alive=KEEP_ALIVE_S,
        timeout_graceful_shutdown=int(GRACE_S),
        h11_max_incomplete_event_size=intake.MAX_HEAD,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="web")
    dashboard.pages.start()
    threading.Thread(target=dashboard.warm, name="web-warm", daemon=True).start()
    thread.start()
    return Running(server, dashboard, sock, thread)
