"""One readable line for a provider that could not be reached, found in the exception chain.

A refused connection reaches the pipeline wrapped three or four times (socket error ->
urllib3's NewConnectionError -> MaxRetryError -> requests' ConnectionError -> FetchError, or
botocore's EndpointConnectionError), and each wrapper's text repeats the one below with its
repr. The run summary wants what a person can act on: which host, what went wrong, how many
tries. The full text stays for `-v` and the store's `collection_runs.error`.
"""

from __future__ import annotations

import errno
import socket
import ssl
from collections.abc import Iterator
from urllib.parse import urlsplit

# Checked in order: the first cause in the chain that is one of these names the failure.
_REASONS: tuple[tuple[type[BaseException], str], ...] = (
    (ConnectionRefusedError, "connection refused"),
    (ConnectionResetError, "connection reset"),
    (ConnectionAbortedError, "connection aborted"),
    (socket.gaierror, "host name not found"),
    (ssl.SSLError, "TLS failed"),
    (TimeoutError, "timed out"),
)
_ERRNO_WORDS = {
    errno.ENETUNREACH: "network unreachable",
    errno.EHOSTUNREACH: "host unreachable",
}


def one_line(provider: str, exc: BaseException) -> str | None:
    """`aws: cannot reach pricing.us-east-1.amazonaws.com (connection refused) after 5 tries`,
    or None when `exc` is not about reaching the API (its own message is readable then)."""
    chain = list(_chain(exc))
    reason = _reason(chain)
    if reason is None:
        return None
    host = next((h for h in map(_host, chain) if h), None)
    where = host or "the API"
    text = f"no answer from {where}" if reason == "timed out" else f"cannot reach {where}"
    tries = next((t for t in (getattr(e, "tries", None) for e in chain) if t), None)
    return f"{provider}: {text} ({reason})" + (f" after {tries} tries" if tries else "")


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """`exc` and every exception behind it: causes, contexts, and the errors that HTTP
    libraries and SDKs keep in attributes or arguments instead (urllib3's `reason`, requests'
    args, botocore's kwargs, Tea's `inner_exception`)."""
    seen: set[int] = set()
    todo = [exc]
    while todo:
        current = todo.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        inner = [current.__cause__, current.__context__, getattr(current, "reason", None)]
        inner.append(getattr(current, "inner_exception", None))  # the Alibaba SDK (Tea) keeps it
        inner += list(current.args)
        kwargs = getattr(current, "kwargs", None)  # botocore keeps the cause as kwargs["error"]
        if isinstance(kwargs, dict):
            inner.append(kwargs.get("error"))
        todo += [e for e in inner if isinstance(e, BaseException)]


def _reason(chain: list[BaseException]) -> str | None:
    for kind, words in _REASONS:
        if any(isinstance(e, kind) for e in chain):
            return words
    for e in chain:
        if isinstance(e, OSError) and e.errno in _ERRNO_WORDS:
            return _ERRNO_WORDS[e.errno]
    # urllib3, requests and botocore time-outs are not the builtin TimeoutError.
    if any(type(e).__name__.endswith(("Timeout", "TimeoutError")) for e in chain):
        return "timed out"
    return None


def _host(e: BaseException) -> str | None:
    """The host an HTTP library's exception says it was talking to, if it says."""
    for holder in ("conn", "pool"):  # urllib3: the connection, or the pool, has the host
        host = getattr(getattr(e, holder, None), "host", None)
        if isinstance(host, str) and host:
            return host
    request = getattr(e, "request", None)  # requests
    kwargs = getattr(e, "kwargs", None)  # botocore
    for url in (
        getattr(request, "url", None),
        kwargs.get("endpoint_url") if isinstance(kwargs, dict) else None,
    ):
        if isinstance(url, str) and urlsplit(url).hostname:
            return urlsplit(url).hostname
    return None
