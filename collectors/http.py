"""The shared `requests` session for plain JSON APIs: retries, backoff and timeouts in one place.

Retries belong to well-kept code: urllib3's `Retry` already honours `Retry-After` on 429/503 and
backs off exponentially on 5xx, so collectors only build a session here and call `get`.

While a collection's answers are being kept (`listening`), each JSON document read here is
remembered with the bytes it was decoded from, so the answer is kept exactly as the server sent
it (docs/trust.md, "Raw answers").
"""

from __future__ import annotations

import codecs
from abc import abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sized
from contextlib import contextmanager
from contextvars import ContextVar
from types import TracebackType
from typing import Any, ClassVar, Self

import requests
from requests.adapters import HTTPAdapter
from urllib3.connectionpool import ConnectionPool
from urllib3.exceptions import MaxRetryError
from urllib3.response import BaseHTTPResponse
from urllib3.util.retry import Retry

from collectors.base import Collector, Payloads
from collectors.common import FetchError, PayloadShapeError

RETRY_STATUSES = (429, 500, 502, 503, 504)
AUTH_STATUSES = (401, 403)  # the key is wrong or lacks the rights: never retried
# A provider asking us to wait longer than this is treated as down for this run: the daemon
# will come back on its next interval, which beats blocking every other provider's write.
MAX_RETRY_AFTER_S = 60.0
USER_AGENT = "gpu-price-tracker/0.1 (+https://github.com/gpu-price-tracker)"


class Heard:
    """The JSON documents one collection read, each with the bytes it was decoded from, and
    what the listener's `on_answer` made of those bytes as they came (its keeping begun)."""

    def __init__(self, on_answer: Callable[[bytes], Any] | None = None) -> None:
        # By identity: the document itself is held too, so its id is never reused meanwhile.
        self._seen: dict[int, tuple[Any, bytes, Any]] = {}
        self._on_answer = on_answer

    def add(self, document: Any, content: bytes) -> None:
        begun = self._on_answer(content) if self._on_answer is not None else None
        self._seen[id(document)] = (document, content, begun)

    def bytes_of(self, document: Any) -> bytes | None:
        """The bytes `document` (that very object) was decoded from; None: not read here."""
        seen = self._seen.get(id(document))
        return seen[1] if seen is not None and seen[0] is document else None

    def begun(self, document: Any) -> Any:
        """What `on_answer` returned for the bytes of `document`; None: not read here."""
        seen = self._seen.get(id(document))
        return seen[2] if seen is not None and seen[0] is document else None

    def contents(self) -> list[bytes]:
        """The bytes of every answer read, in the order received."""
        return [content for _, content, _ in self._seen.values()]

    def all_begun(self) -> list[Any]:
        """What `on_answer` returned for every answer read, in the order received."""
        return [begun for _, _, begun in self._seen.values()]


# Per thread of control: the CLI collects providers in threads of their own, and a deadline may
# run a collection in yet another; a collection listens in the thread that fetches.
_listener: ContextVar[Heard | None] = ContextVar("heard", default=None)


@contextmanager
def listening(on_answer: Callable[[bytes], Any] | None = None) -> Iterator[Heard]:
    """What the JSON answers read in this block were decoded from, forgotten after it;
    `on_answer` is called with each answer's bytes as it arrives."""
    heard = Heard(on_answer)
    token = _listener.set(heard)
    try:
        yield heard
    finally:
        _listener.reset(token)


class _CappedRetry(Retry):
    """urllib3 Retry whose Retry-After wait is capped (older urllib3 has no retry_after_max)."""

    def get_retry_after(self, response: Any) -> float | None:
        value = super().get_retry_after(response)
        return None if value is None else min(value, MAX_RETRY_AFTER_S)

    def increment(
        self,
        method: str | None = None,
        url: str | None = None,
        response: BaseHTTPResponse | None = None,
        error: Exception | None = None,
        _pool: ConnectionPool | None = None,
        _stacktrace: TracebackType | None = None,
    ) -> Self:
        try:
            return super().increment(method, url, response, error, _pool, _stacktrace)
        except MaxRetryError as exc:
            # How many tries it took, for the run summary's one line about a provider.
            exc.tries = len(self.history) + 1  # type: ignore[attr-defined]
            raise


def make_session(
    *, max_retries: int = 4, backoff_factor: float = 0.5, retry_reads: bool = True
) -> requests.Session:
    """A session that retries connection errors, 429 (with Retry-After) and 5xx with backoff.

    `retry_reads=False` for a request that must not be repeated once it may have arrived: an
    error after it was sent (a read timeout, a dropped connection) is then raised at once.
    """
    retry = _CappedRetry(
        total=max_retries,
        connect=max_retries,
        read=max_retries if retry_reads else 0,
        # urllib3 counts a TLS error after the request was sent as "other", not "read".
        other=max_retries if retry_reads else 0,
        status=max_retries,
        status_forcelist=RETRY_STATUSES,
        allowed_methods=frozenset({"GET", "POST"}),
        backoff_factor=backoff_factor,
        respect_retry_after_header=True,
        raise_on_status=False,
    )
    session = requests.Session()
    adapter = HTTPAdapter(max_retries=retry)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    session.headers["User-Agent"] = USER_AGENT
    return session


def get_json(
    session: requests.Session,
    provider: str,
    url: str,
    *,
    timeout: float,
    what: str,
    auth_hint: str | None = None,
    **kwargs: Any,
) -> Any:
    """GET a JSON document; any failure becomes a FetchError that names the provider and `what`.

    `auth_hint` is added to the message of a 401/403 (which credential to check)."""
    return _json_answer(session, "GET", provider, url, timeout, what, auth_hint, kwargs)


def post_json(
    session: requests.Session,
    provider: str,
    url: str,
    *,
    body: Any,
    timeout: float,
    what: str,
    auth_hint: str | None = None,
) -> Any:
    """POST `body` as JSON (a search or a GraphQL query) and read the JSON answer, with the
    failures of `get_json`. Only for requests that read: the session retries them."""
    return _json_answer(session, "POST", provider, url, timeout, what, auth_hint, {"json": body})


class OneAnswer(Collector):
    """A provider whose prices are one JSON answer of one endpoint that takes its key in a
    header (Lambda, RunPod, JarvisLabs, Fluidstack, Seeweb): the fetch is this one. A subclass
    names the path, the payload key, the credential and its variable, what the answer is, the
    hint for a refused key, how the key is sent (`headers`: a bearer token unless it says
    otherwise), a GraphQL `query` to POST if any, and how to count the answer's rows (`rows`:
    a changed shape fails there, in fetch, not in parse)."""

    default_endpoint: ClassVar[str]
    path: ClassVar[str]
    payload_key: ClassVar[str]
    credential_name: ClassVar[str] = "api_key"
    credential_variable: ClassVar[str]
    what: ClassVar[str]
    auth_hint: ClassVar[str]
    query: ClassVar[str | None] = None

    def headers(self, key: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {key}"}

    @abstractmethod
    def rows(self, payloads: Payloads) -> Sized:
        """The answer's rows (a PayloadShapeError when its shape changed)."""

    def check_credentials(self) -> None:
        self.credential(self.credential_name, self.credential_variable)

    def fetch(self) -> Payloads:
        url = (self.settings.endpoint or self.default_endpoint).rstrip("/") + self.path
        key = self.credential(self.credential_name, self.credential_variable)
        body = keyed_json(self.name, url, self.headers(key), max_retries=self.settings.max_retries,
                          timeout=self.settings.timeout, what=self.what, auth_hint=self.auth_hint,
                          body=None if self.query is None else {"query": self.query})  # fmt: skip
        payloads: Payloads = {self.payload_key: body}
        self.progress(1, len(self.rows(payloads)))
        return payloads


def keyed_json(
    provider: str,
    url: str,
    headers: Mapping[str, str],
    *,
    max_retries: int,
    timeout: float,
    what: str,
    auth_hint: str,
    body: Any = None,
) -> Any:
    """One JSON answer of an API that takes its key in `headers`: a GET, or a POST of `body`
    when there is one (a GraphQL query), with the failures of `get_json`."""
    with make_session(max_retries=max_retries) as session:
        session.headers.update(headers)
        if body is None:
            return get_json(session, provider, url, timeout=timeout, what=what, auth_hint=auth_hint)
        return post_json(
            session, provider, url, body=body, timeout=timeout, what=what, auth_hint=auth_hint
        )


def _json_answer(
    session: requests.Session,
    method: str,
    provider: str,
    url: str,
    timeout: float,
    what: str,
    auth_hint: str | None,
    kwargs: dict[str, Any],
) -> Any:
    try:
        response = session.request(method, url, timeout=timeout, **kwargs)
    except requests.RequestException as exc:
        raise FetchError(provider, f"{what}: {type(exc).__name__}: {exc}") from exc
    if response.status_code != 200:
        hint = f" ({auth_hint})" if auth_hint and response.status_code in AUTH_STATUSES else ""
        raise FetchError(
            provider, f"{what}: HTTP {response.status_code}{hint}: {response.text[:300].strip()}"
        )
    try:
        document = response.json()
    except ValueError as exc:
        raise FetchError(provider, f"{what}: answer is not JSON: {response.text[:200]!r}") from exc
    except RecursionError as exc:  # a hostile or broken answer: arrays in arrays in arrays ...
        raise PayloadShapeError(provider, f"{what}: the answer is JSON nested too deeply") from exc
    if _listener.get() is not None and _decoded_as_utf8(response):
        received(document, response.content)
    return document


def received(document: Any, content: bytes) -> None:
    """Tell the collection listening in this thread, if any, that `document` was decoded from
    `content` (a JSON answer read otherwise than through this module, a benchmark's)."""
    heard = _listener.get()
    if heard is not None:
        heard.add(document, content)


def _decoded_as_utf8(response: requests.Response) -> bool:
    """Whether `json.loads(response.content)` gives what `response.json()` gave: the bytes
    were read as UTF-8 (or guessed, as `json.loads` guesses), or are ASCII whatever the charset
    a server claimed (a UTF-8 answer labelled Latin-1 is decoded wrongly, and kept as read)."""
    encoding = response.encoding
    try:
        utf8 = not encoding or codecs.lookup(encoding).name == "utf-8"
    except LookupError:  # a charset Python does not know: requests decoded it leniently
        utf8 = False
    return utf8 or response.content.isascii()
