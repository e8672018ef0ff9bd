"""The dashboard's HTTP server: the standard library's threading server, a handful of routes,
GET only, and bounds on everything a caller controls (the request line, the threads, the time
and rows of a query).

The store is opened for each request and closed after it (`storage.reads.dashboard`), so a
page left open never keeps the daemon from writing; a failed or slow read answers that
request with an error and leaves the server serving.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from collectors.common import ConfigError, StoreError
from storage.query import QueryStopped
from storage.reads import dashboard
from storage.runs import LastRun
from tracker.config import Config
from tracker.config.web import WebSettings
from tracker.web import api, pages, panels
from tracker.web.cache import PageCache

log = logging.getLogger("tracker.web")

MAX_URL = 4096  # a dashboard's query string is a few options
MAX_THREADS = 8  # requests answered at once; more wait for a free one
SOCKET_TIMEOUT_S = 30  # a client that stops sending mid-request
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


class WebServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], site: Site) -> None:
        self.site = site
        self.slots = threading.BoundedSemaphore(MAX_THREADS)
        self.assets = {name: _asset(name) for name in ASSETS}
        self.pages = PageCache(site.store)
        self.address_family = _family(address[0])
        super().__init__(address, Handler)
        self.pages.start()

    def server_close(self) -> None:
        self.pages.close()
        super().server_close()

    def process_request(self, request: Any, client_address: Any) -> None:
        self.slots.acquire()
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()


@dataclass
class Running:
    """A server answering on its own thread; `close()` stops it and frees the port."""

    server: WebServer
    thread: threading.Thread

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        host = host.decode() if isinstance(host, bytes) else str(host)
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{port}/"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


def start_for(config: Config, settings: WebSettings, key: str) -> Running:
    """The dashboard of `config`'s store on `settings`; a ConfigError naming `key` when the
    address cannot be had."""
    from tracker.running import status

    site = Site(
        config.store_path, config.store.query_timeout_s, lambda last: status.gather(config, last)
    )
    try:
        return start(settings, site)
    except OSError as exc:
        why = exc.strerror or str(exc)
        raise ConfigError(f"{key}: cannot listen on {settings.address}: {why}") from exc


def start(settings: WebSettings, site: Site) -> Running:
    """Listen on `settings` (port 0: any free one) and answer on a thread of its own."""
    server = WebServer((str(settings.host), settings.port), site)
    thread = threading.Thread(target=server.serve_forever, name="web", daemon=True)
    thread.start()
    return Running(server, thread)


class Handler(BaseHTTPRequestHandler):
    server: WebServer
    timeout = SOCKET_TIMEOUT_S
    server_version = "gpu-tracker"
    sys_version = ""

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
            body = panels.decide_panel(site.store, filled, _models(), site.timeout_s)
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
        return pages.now_panel(offers, read_at)

    @staticmethod
    def _page(path: str, body: str) -> bytes:
        return pages.page(dict(pages.PANELS).get(path, ""), path, body).encode()

    def _api(self, path: str, query: dict[str, list[str]]) -> list[dict[str, Any]] | None:
        site = self.server.site
        if path == "/api/latest":
            return api.latest(site.store, query, timeout_s=site.timeout_s)
        if path == "/api/history":
            return api.history(site.store, query, timeout_s=site.timeout_s)
        if path == "/api/tco":
            return api.tco(site.store, query, timeout_s=site.timeout_s)
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
        log.info("web: %s " + format, self.address_string(), *args)


def _asset(name: str) -> bytes:
    return resources.files("tracker.web").joinpath("assets", name).read_bytes()


def _family(host: str) -> int:
    import socket

    return socket.AF_INET6 if ":" in host else socket.AF_INET


def _models() -> list[str]:
    """The GPUs the forms offer: every model and memory variant (`A100 80GB`, `H100 NVL`)."""
    from collectors import gpus
    from tracker.config import gpu_names

    return list(gpu_names(gpus.models()).accepted)
