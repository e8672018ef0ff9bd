"""A loopback HTTP server that answers like a provider API, from recorded wire-format payloads.

The offline demo, the tests and the benchmarks point the real collectors (boto3, requests, the
SDKs) at it, so everything from request signing to response parsing runs as it would against
the real API. A recording is a folder with `exchanges.json`:

    {"rewrite": ["https://prices.azure.com:443"],     # upstream bases replaced by our own URL
     "exchanges": [
        {"match": {"method": "GET", "path": "/api/retail/prices", "query": {"$skip": null}},
         "status": 200, "content_type": "application/json", "body_file": "page1.json"},
        ...]}

A request takes the first exchange whose `match` holds: `method`, `path`, and subset matches on
`query` (GET parameters), `form` (url-encoded body), `json` (JSON body; lists match when every
pattern element is found), `headers`, and `region` (the SigV4 credential scope, which is how
one endpoint stands in for every AWS region). A `null` pattern value means "absent". `times`
limits how often an exchange answers (a 429 once, then the page); `delay` stalls the answer
(timeouts) and `hold` keeps it until released. Unmatched requests get a 404 and are kept in
`unmatched` for the tests.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

_SIGV4_SCOPE = re.compile(r"Credential=[^/]+/\d{8}/([^/]+)/")


@dataclass
class Exchange:
    match: dict[str, Any]
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "application/json"
    body: bytes = b""
    times: int | None = None
    delay: float = 0.0
    # The answer waits until this is set: a test holds a collection in flight for as long
    # as it needs, rather than guessing how long a delay must be on a busy machine.
    hold: threading.Event | None = None


@dataclass
class Recording:
    exchanges: list[Exchange]
    rewrite: list[str] = field(default_factory=list)

    @classmethod
    def load(cls, folder: Path | str, name: str = "exchanges.json") -> Recording:
        folder = Path(folder)
        spec = json.loads((folder / name).read_text())
        exchanges = []
        for i, raw in enumerate(spec["exchanges"]):
            if "body_file" in raw:
                body = (folder / raw["body_file"]).read_bytes()
            else:
                body = str(raw.get("body", "")).encode()
            if "match" not in raw:
                raise ValueError(f"{folder}/{name}: exchange {i} has no 'match'")
            exchanges.append(
                Exchange(
                    match=raw["match"],
                    status=raw.get("status", 200),
                    headers=raw.get("headers", {}),
                    content_type=raw.get("content_type", "application/json"),
                    body=body,
                    times=raw.get("times"),
                    delay=raw.get("delay", 0.0),
                )
            )
        return cls(exchanges, spec.get("rewrite", []))


@dataclass
class _Request:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes

    def form(self) -> dict[str, str]:
        return {k: v[-1] for k, v in parse_qs(self.body.decode(), keep_blank_values=True).items()}

    def json(self) -> Any:
        try:
            return json.loads(self.body or b"null")
        except ValueError:
            return None

    def region(self) -> str | None:
        found = _SIGV4_SCOPE.search(self.headers.get("authorization", ""))
        return found.group(1) if found else None


def _subset(pattern: Any, actual: Any) -> bool:
    if isinstance(pattern, dict):
        if not isinstance(actual, dict):
            return False
        for key, want in pattern.items():
            if want is None:
                if key in actual:
                    return False
            elif key not in actual or not _subset(want, actual[key]):
                return False
        return True
    if isinstance(pattern, list):
        return isinstance(actual, list) and all(any(_subset(p, a) for a in actual) for p in pattern)
    return bool(pattern == actual)


def _matches(match: dict[str, Any], req: _Request) -> bool:
    if match.get("method", req.method) != req.method:
        return False
    if match.get("path", req.path) != req.path:
        return False
    checks: dict[str, Callable[[], Any]] = {
        "query": lambda: req.query,
        "form": req.form,
        "json": req.json,
        "headers": lambda: req.headers,
    }
    for key, actual in checks.items():
        if key in match:
            pattern = match[key]
            if key == "headers":
                pattern = {k.lower(): v for k, v in pattern.items()}
            if not _subset(pattern, actual()):
                return False
    return "region" not in match or match["region"] == req.region()


class ReplayServer:
    """Serves one or more recordings on 127.0.0.1 from a background thread."""

    def __init__(self, *recordings: Recording) -> None:
        self.exchanges: list[Exchange] = []
        self.rewrite: list[str] = []
        self.used: dict[int, int] = {}
        self.requests: list[_Request] = []
        self.unmatched: list[_Request] = []
        self._lock = threading.Lock()
        self.serve(*recordings)
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        # A short poll interval: stop() waits for the serving loop to notice (0.5 s by default).
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> ReplayServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def serve(self, *recordings: Recording) -> None:
        """Answer from these recordings from now on (the first one whose exchange matches wins):
        how the demo replays a provider's earlier snapshot, then its current one, on one URL."""
        with self._lock:
            self.exchanges = [e for r in recordings for e in r.exchanges]
            self.rewrite = [base for r in recordings for base in r.rewrite]
            self.used = {}

    def _pick(self, req: _Request) -> Exchange | None:
        with self._lock:
            self.requests.append(req)
            for i, ex in enumerate(self.exchanges):
                if ex.times is not None and self.used.get(i, 0) >= ex.times:
                    continue
                if _matches(ex.match, req):
                    self.used[i] = self.used.get(i, 0) + 1
                    return ex
            self.unmatched.append(req)
            return None

    def answer(
        self, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, bytes, threading.Event | None, float] | None:
        """The recorded answer to a request that came another way than HTTP (a gRPC front's
        call, as the Nebius recording is served): status, body, hold and delay of the exchange
        it takes, or None when none matches (kept in `unmatched`)."""
        lowered = {key.lower(): value for key, value in headers.items()}
        ex = self._pick(_Request(method, path, {}, lowered, body))
        return None if ex is None else (ex.status, self._body(ex), ex.hold, ex.delay)

    def _body(self, ex: Exchange) -> bytes:
        body = ex.body
        for base in self.rewrite:
            body = body.replace(base.encode(), self.url.encode())
        return body

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in two writes: with Nagle on, each keep-alive answer
            # waits for the client's delayed ACK (~40 ms a request).
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:  # quiet: tests read output
                pass

            def _serve(self) -> None:
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                req = _Request(
                    method=self.command,
                    path=parts.path,
                    query={
                        k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()
                    },
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=self.rfile.read(length) if length else b"",
                )
                ex = server._pick(req)
                if ex is None:
                    body = json.dumps({"error": "no recorded exchange matches", "path": self.path})
                    self._send(404, "application/json", body.encode(), {})
                    return
                if ex.hold is not None:
                    ex.hold.wait()
                if ex.delay:
                    time.sleep(ex.delay)
                self._send(ex.status, ex.content_type, server._body(ex), ex.headers)

            def _send(self, status: int, ctype: str, body: bytes, headers: dict[str, str]) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", ctype)
                    self.send_header("Content-Length", str(len(body)))
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test): nothing left to tell it

            do_GET = do_POST = _serve

        return Handler
