"""The dashboard's HTTP server: a handful of routes, GET only, and bounds on everything a
caller controls (the time to send a request, the connections, the request line, the `Host`,
the time and rows of a query).

Connections are read by `tracker.web.intake` on one thread; only whole requests reach the
`MAX_WORKERS` threads that read the store, so slow or idle clients never take their turn. The
store is opened for each request and closed after it (`storage.reads.dashboard`), so a page left
open never keeps the daemon from writing; a failed or slow read answers that request with an
error and leaves the server serving. `close()` stops accepting, lets the requests in flight
finish (their reads interrupted after a grace) and joins every thread, so the process never
exits with a thread inside DuckDB.
"""

from __future__ import annotations

import io
import json
import logging
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from collectors.common import ConfigError, StoreError
from storage.query import QueryStopped
from storage.reads import dashboard
from storage.runs import LastRun
from tracker.collecting.logs import escape
from tracker.config import Config
from tracker.config.web import WebSettings
from tracker.config.workloads import Workloads
from tracker.web import api, hosts, market, pages, panels
from tracker.web.cache import PageCache
from tracker.web.pool import GRACE_S, PooledServer

log = logging.getLogger("tracker.web")

MAX_URL = 4096  # a dashboard's query string is a few options
SOCKET_TIMEOUT_S = 30  # the longest an answer's sending may take
_MISDIRECTED = b"this dashboard answers only to its own host names (see its docs, Security)\n"
ASSETS = ("app.js", "style.css")
# Only the tracker's own script and styles; the SVG charts carry inline styles.
_POLICY = (
    "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "frame-ancestors 'none'"
)
_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}


@dataclass(frozen=True)
class Site:
    """What the pages read: the store, the query time limit, and the health of collections
    (`status(runs)`: `tracker.running.status.gather` for this config, given the runs the page
    read on its own bounded connection)."""

    store: Path
    timeout_s: float
    status: Callable[[dict[str, LastRun]], Any]
    workloads: Workloads | None = None  # [workloads]; None: the bundled ones
    followed: tuple[str, ...] = ()  # the GPUs the Market panel shows ([review] gpus); (): all


class WebServer(PooledServer):
    def __init__(self, address: tuple[str, int], site: Site, admitted: hosts.Hosts) -> None:
        self.site = site
        self.hosts = admitted
        self.assets = {name: _asset(name) for name in ASSETS}
        self.pages = PageCache(site.store)
        self.address_family = _family(address[0])
        self._refused: set[str] = set()
        super().__init__(address, Handler)
        self.pages.start()

    def refused_host(self, header: str, who: str) -> None:
        """A request for a host name not admitted: said once per name (a rebinding page asks
        again and again), then only with -v."""
        name = escape(header, newlines=True)[:200]
        first = name not in self._refused and len(self._refused) < 1000
        if first:
            self._refused.add(name)
        log.log(
            logging.WARNING if first else logging.DEBUG,
            "web: %s: refused a request for host '%s' (not one of this dashboard's names; "
            "admit it with --allow-remote NAME or [web] allowed_hosts)",
            who,
            name,
        )

    def stop(self, grace_s: float = GRACE_S) -> None:
        super().stop(grace_s)
        self.pages.close()


@dataclass
class Running:
    """A server answering on its own threads; `close()` stops it and frees the port."""

    server: WebServer
    thread: threading.Thread

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        host = host.decode() if isinstance(host, bytes) else str(host)
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{port}/"

    def close(self, grace_s: float = GRACE_S) -> None:
        self.server.shutdown()
        self.thread.join()
        self.server.stop(grace_s)


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
    """Listen on `settings` (port 0: any free one) and answer on threads of its own."""
    admitted = hosts.allowed(
        settings.host, allow_remote=settings.allow_remote, extra=settings.allowed_hosts
    )
    server = WebServer((str(settings.host), settings.port), site, admitted)
    thread = threading.Thread(target=server.serve_forever, name="web")
    thread.start()
    return Running(server, thread)


class Handler(BaseHTTPRequestHandler):
    server: WebServer
    timeout = SOCKET_TIMEOUT_S
    server_version = "gpu-tracker"
    sys_version = ""

    def setup(self) -> None:
        # The intake read the head already: the request is parsed from it, answered on the socket.
        self.request, head = self.request
        super().setup()
        self.rfile = io.BytesIO(head)

    def parse_request(self) -> bool:
        if not super().parse_request():
            return False
        header = self.headers.get("Host")
        if self.server.hosts.admits(header):
            return True
        self.server.refused_host(str(header), self.client_address[0])
        self.close_connection = True
        self._send(HTTPStatus.MISDIRECTED_REQUEST, "text/plain", _MISDIRECTED)
        return False

    def do_GET(self) -> None:
        if len(self.path) > MAX_URL:
            self._send(HTTPStatus.REQUEST_URI_TOO_LONG, "text/plain", b"request line too long")
            return
        url = urlsplit(self.path)
        query = parse_qs(url.query, keep_blank_values=True)
        try:
            self._route(url.path, query)
        except api.BadRequest as exc:
            self._json(HTTPStatus.BAD_REQUEST, {"error": str(exc)})
        except QueryStopped as exc:
            self._error(HTTPStatus.SERVICE_UNAVAILABLE, url.path, f"{exc}; narrow the question")
        except StoreError as exc:
            self._error(HTTPStatus.SERVICE_UNAVAILABLE, url.path, str(exc))

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_POST(self) -> None:
        self._send(HTTPStatus.METHOD_NOT_ALLOWED, "text/plain", b"read-only: GET only")

    do_PUT = do_DELETE = do_PATCH = do_POST

    def _route(self, path: str, query: dict[str, list[str]]) -> None:
        site = self.server.site
        if path.startswith("/api/"):
            answer = self._api(path, query)
            if answer is not None:
                self._json(HTTPStatus.OK, answer)
            return
        if path.startswith("/assets/") and path[8:] in self.server.assets:
            asset = self.server.assets[path[8:]]
            self._send(HTTPStatus.OK, _TYPES[Path(path).suffix], asset, cache=True)
            return
        filled = {k: v for k, vs in query.items() if (v := [x for x in vs if x])}
        if path == "/":
            html = self.server.pages.get("/", lambda: self._page("/", self._now()))
            self._send(HTTPStatus.OK, "text/html; charset=utf-8", html)
            return
        if path == "/history":
            body = panels.history_panel(site.store, filled, _models(), site.timeout_s)
        elif path == "/decide":
            body = panels.decide_panel(
                site.store, filled, _models(), site.timeout_s, site.workloads
            )
        elif path == "/market":
            body = market.market_panel(site.store, filled, site.followed, site.timeout_s)
        elif path == "/health":
            found = dashboard.health(site.store, 20, timeout_s=site.timeout_s)
            body = pages.health_panel(site.status(found.runs), found.alerts, found.total_alerts)
        else:
            self._send(HTTPStatus.NOT_FOUND, "text/plain", b"no such page")
            return
        self._send(HTTPStatus.OK, "text/html; charset=utf-8", self._page(path, body))

    def _now(self) -> str:
        site = self.server.site
        read_at = datetime.now(UTC)
        offers = dashboard.offers(site.store, timeout_s=site.timeout_s)
        return pages.now_panel(offers, read_at, site.workloads)

    @staticmethod
    def _page(path: str, body: str) -> bytes:
        return pages.page(dict(pages.PANELS).get(path, ""), path, body).encode()

    def _api(self, path: str, query: dict[str, list[str]]) -> list[dict[str, Any]] | None:
        site = self.server.site
        if path == "/api/latest":
            return api.latest(site.store, query, timeout_s=site.timeout_s, workloads=site.workloads)
        if path == "/api/history":
            return api.history(site.store, query, timeout_s=site.timeout_s)
        if path == "/api/tco":
            return api.tco(site.store, query, timeout_s=site.timeout_s, workloads=site.workloads)
        if path == "/api/index":
            return market.api_index(site.store, query, timeout_s=site.timeout_s)
        self._json(HTTPStatus.NOT_FOUND, {"error": f"no such endpoint {path}"})
        return None

    def _error(self, status: HTTPStatus, path: str, message: str) -> None:
        if path.startswith("/api/"):
            self._json(status, {"error": message})
            return
        body = pages.page("error", path, pages.problem(message)).encode()
        self._send(status, "text/html; charset=utf-8", body)

    def _json(self, status: HTTPStatus, document: Any) -> None:
        body = json.dumps(document, indent=2, default=str).encode()
        self._send(status, "application/json", body)

    def _send(self, status: HTTPStatus, kind: str, body: bytes, *, cache: bool = False) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Content-Security-Policy", _POLICY)
        self.send_header("Cache-Control", "max-age=3600" if cache else "no-store")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        # What the client sent (the request line) is escaped whole, newlines too.
        line = escape(format % args, newlines=True)
        log.info("web: %s %s", self.address_string(), line)


def _asset(name: str) -> bytes:
    return resources.files("tracker.web").joinpath("assets", name).read_bytes()


def _family(host: str) -> int:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def _models() -> list[str]:
    """The GPUs the forms offer: every model and memory variant (`A100 80GB`, `H100 NVL`)."""
    from collectors import gpus
    from tracker.config import gpu_names

    return list(gpu_names(gpus.models()).accepted)
