"""The dashboard as a Starlette application: its routes, GET only, and the checks every request
passes first (its `Host`, its length, its method), the same headers on every answer (the
content security policy among them), and one access-log line per request, escaped.

Pages and the JSON API read the store on worker threads, at most `MAX_WORKERS` at once (more
wait their turn, on the event loop, holding no thread); the store is opened for each request
and closed after it (`storage.reads.dashboard`). A failed or slow read answers that request
with an error and leaves the server serving (docs/web.md).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from collectors.common import StoreError
from storage.query import QueryStopped
from storage.reads import dashboard
from storage.runs import LastRun
from tracker.collecting.logs import escape
from tracker.config.workloads import Workloads
from tracker.web import api, hosts, market, pages, panels
from tracker.web.cache import PageCache

log = logging.getLogger("tracker.web")

MAX_WORKERS = 8  # store reads at once; more requests wait for a free thread
MAX_URL = 4096  # a dashboard's query string is a few options
_MISDIRECTED = b"this dashboard answers only to its own host names (see its docs, Security)\n"
ASSETS = {"app.js": "text/javascript; charset=utf-8", "style.css": "text/css; charset=utf-8"}
# Only the tracker's own script and styles; the SVG charts carry inline styles.
POLICY = (
    "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "frame-ancestors 'none'"
)
HTML = "text/html; charset=utf-8"


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


def answer(status: int, kind: str, body: bytes, *, cache: bool = False) -> Response:
    """Every answer's headers: its type and length, no sniffing, the policy, no caching but
    of the assets."""
    headers = {
        "X-Content-Type-Options": "nosniff",
        "Content-Security-Policy": POLICY,
        "Cache-Control": "max-age=3600" if cache else "no-store",
    }
    return Response(body, status, headers, media_type=kind)


def as_json(status: int, document: Any) -> Response:
    return answer(status, "application/json", json.dumps(document, indent=2, default=str).encode())


class Failures:
    """What the server says of a request that failed: the traceback once per kind of failure
    (a busy server repeats them), then one line."""

    def __init__(self) -> None:
        self._seen: set[str] = set()

    def report(self, who: str, exc: BaseException) -> None:
        if isinstance(exc, OSError):
            why = exc.strerror or type(exc).__name__
            log.info("web: %s: connection closed by the client (%s)", who, why)
            return
        kind = f"{type(exc).__name__}: {str(exc)[:200]}"
        first = kind not in self._seen and len(self._seen) < 100
        if first:
            self._seen.add(kind)
        log.error("web: %s: request failed: %s", who, kind, exc_info=exc if first else None)


class Guard:
    """The checks before any route, and the access log after (a pure ASGI middleware)."""

    def __init__(self, app: ASGIApp, admitted: hosts.Hosts) -> None:
        self.app = app
        self.hosts = admitted
        self._refused: set[str] = set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = [0]

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        target = scope["raw_path"].decode("latin-1")
        if scope["query_string"]:
            target += "?" + scope["query_string"].decode("latin-1")
        refused = self._refusal(scope, target)
        if refused is not None:
            await refused(scope, receive, sending)
        else:
            await self.app(scope, receive, sending)
        who = (scope.get("client") or ("?",))[0]
        line = f'"{scope["method"]} {target} HTTP/{scope["http_version"]}" {status[0]}'
        log.info("web: %s %s", who, escape(line, newlines=True))

    def _refusal(self, scope: Scope, target: str) -> Response | None:
        header = next((v for k, v in scope["headers"] if k == b"host"), None)
        name = None if header is None else header.decode("latin-1")
        if not self.hosts.admits(name):
            self._refused_host(str(name), (scope.get("client") or ("?",))[0])
            return answer(421, "text/plain", _MISDIRECTED)
        if len(target) > MAX_URL:
            return answer(414, "text/plain", b"request line too long")
        if scope["method"] not in ("GET", "HEAD"):
            return answer(405, "text/plain", b"read-only: GET only")
        return None

    def _refused_host(self, header: str, who: str) -> None:
        """Said once per name (a rebinding page asks again and again), then only with -v."""
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


class Dashboard:
    """The routes over one site; `pages` keeps the Now page (`tracker.web.cache`)."""

    def __init__(self, site: Site) -> None:
        self.site = site
        self.pages = PageCache(site.store)
        self.failures = Failures()
        self.assets = {name: _asset(name) for name in ASSETS}
        self._limiter: anyio.CapacityLimiter | None = None

    def warm(self) -> None:
        """What a process's first page would pay for once (the GPU table behind the forms, the
        templates), done at start on a thread of its own, off every request's path."""
        _models()
        for name in ("now.html", "history.html", "decide.html", "market.html", "chart.svg"):
            pages.environment().get_template(name)

    def routes(self) -> list[Route]:
        page = self._page
        return [
            Route("/", page(lambda q: self.pages.get("/", self._now))),
            Route("/history", page(lambda q: panels.history_page(
                self.site.store, q, _models(), self.site.timeout_s).encode())),
            Route("/decide", page(lambda q: panels.decide_page(
                self.site.store, q, _models(), self.site.timeout_s, self.site.workloads
            ).encode())),
            Route("/market", page(lambda q: market.market_page(
                self.site.store, q, self.site.followed, self.site.timeout_s).encode())),
            Route("/health", page(lambda q: self._health())),
            Route("/api/openapi.json", self._openapi),
            Route("/api/{name}", self._api),
            Route("/assets/{name}", self._asset),
        ]  # fmt: skip

    async def read(self, work: Callable[[], Any]) -> Any:
        """`work` on a worker thread, at most `MAX_WORKERS` at once."""
        if self._limiter is None:  # made on the event loop, where it is used
            self._limiter = anyio.CapacityLimiter(MAX_WORKERS)
        return await anyio.to_thread.run_sync(work, limiter=self._limiter)

    def _page(
        self, build: Callable[[api.Query], bytes]
    ) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            query = {k: v for k, vs in _query(request).items() if (v := [x for x in vs if x])}
            return await self._guarded(request, lambda: answer(200, HTML, build(query)))

        return endpoint

    async def _api(self, request: Request) -> Response:
        found = _API.get(request.path_params["name"])
        if found is None:
            return as_json(404, {"error": f"no such endpoint {request.url.path}"})
        site, query = self.site, _query(request)
        return await self._guarded(request, lambda: as_json(200, found(site, query)))

    async def _openapi(self, request: Request) -> Response:
        from importlib.metadata import version

        return as_json(200, api.openapi(version("gpu-price-tracker")))

    async def _asset(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in self.assets:
            return answer(404, "text/plain", b"no such page")
        return answer(200, ASSETS[name], self.assets[name], cache=True)

    async def _guarded(self, request: Request, work: Callable[[], Response]) -> Response:
        api_call = request.url.path.startswith("/api/")
        try:
            found: Response = await self.read(work)
            return found
        except api.BadRequest as exc:
            return as_json(400, {"error": str(exc)})
        except QueryStopped as exc:
            return _error(api_call, request.url.path, f"{exc}; narrow the question")
        except StoreError as exc:
            return _error(api_call, request.url.path, str(exc))
        except Exception as exc:
            self.failures.report((request.client or ("?",))[0], exc)
            return _error(api_call, request.url.path, "the server failed to answer", 500)

    def _now(self) -> bytes:
        site = self.site
        read_at = datetime.now(UTC)
        offers = dashboard.offers(site.store, timeout_s=site.timeout_s)
        return pages.now_page(offers, read_at, site.workloads).encode()

    def _health(self) -> bytes:
        site = self.site
        found = dashboard.health(site.store, 20, timeout_s=site.timeout_s)
        return pages.health_page(site.status(found.runs), found.alerts, found.total_alerts).encode()


def build(site: Site, admitted: hosts.Hosts) -> tuple[Guard, Dashboard]:
    """The application (its guard outermost) and the dashboard whose routes it serves."""
    dashboard_ = Dashboard(site)

    async def not_found(request: Request, exc: Exception) -> Response:
        code = exc.status_code if isinstance(exc, HTTPException) else 500
        if request.url.path.startswith("/api/"):
            return as_json(code, {"error": f"no such endpoint {request.url.path}"})
        return answer(code, "text/plain", b"no such page")

    app = Starlette(routes=dashboard_.routes(), exception_handlers={HTTPException: not_found})
    return Guard(app, admitted), dashboard_


_API: dict[str, Callable[[Site, api.Query], list[dict[str, Any]]]] = {
    "latest": lambda s, q: api.latest(s.store, q, timeout_s=s.timeout_s, workloads=s.workloads),
    "history": lambda s, q: api.history(s.store, q, timeout_s=s.timeout_s),
    "tco": lambda s, q: api.tco(s.store, q, timeout_s=s.timeout_s, workloads=s.workloads),
    "index": lambda s, q: market.api_index(s.store, q, timeout_s=s.timeout_s),
}


def _query(request: Request) -> dict[str, list[str]]:
    params = request.query_params
    return {key: params.getlist(key) for key in params}


def _error(api_call: bool, path: str, message: str, status: int = 503) -> Response:
    if api_call:
        return as_json(status, {"error": message})
    return answer(status, HTML, pages.error_page(path, message).encode())


def _asset(name: str) -> bytes:
    return resources.files("tracker.web").joinpath("assets", name).read_bytes()


def _models() -> list[str]:
    """The GPUs the forms offer: every model and memory variant (`A100 80GB`, `H100 NVL`)."""
    from collectors import gpus
    from tracker.config import gpu_names

    return list(gpu_names(gpus.models()).accepted)
