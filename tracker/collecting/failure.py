"""Error text as people and the store get it: one readable line for a provider that could not
be reached, and no credential anywhere in it.

Redaction: every credential the tracker holds (key IDs and session tokens too, not only the
secret halves) is masked in every error text before it is printed, logged or stored, whatever
echoed it (an API whose 401 body quotes the Authorization header, an SDK that puts the URL with
its `?key=` in the exception). `hold` takes the values; `redact` masks text; from the first
`hold` on, every log record of the process is masked as it is made, so no handler (the CLI's,
the daemon's text or JSON log, a test's capture) ever sees a secret.

The one line:

A refused connection reaches the pipeline wrapped three or four times (socket error ->
urllib3's NewConnectionError -> MaxRetryError -> requests' ConnectionError -> FetchError, or
botocore's EndpointConnectionError), and each wrapper's text repeats the one below with its
repr. The run summary wants what a person can act on: which host, what went wrong, how many
tries. The full text stays for `-v` and the store's `collection_runs.error`.
"""

from __future__ import annotations

import errno
import logging
import socket
import ssl
import threading
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from collectors.common import Redactor

if TYPE_CHECKING:
    from tracker.config import Config

# No real key is shorter; a stand-in such as "test" or "demo" is not masked (see Redactor).
MIN_SECRET_LENGTH = 8

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


class _Held:
    """The credentials this process holds, and the log-record factory that masks them."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.redactor = Redactor()
        self.factory_installed = False


_HELD = _Held()


def secrets_of(config: Config, env: Mapping[str, str]) -> list[str]:
    """The value of every credential variable `config` names (every provider's, enabled or
    not, the optional ones too, and the alert channels'), where `env` sets it."""
    names: list[str] = []
    for provider in config.providers.values():
        names += [*provider.credential_vars.values(), *provider.optional_credential_vars.values()]
    slack, email = config.alerts.slack, config.alerts.email
    if slack is not None:
        names.append(slack.webhook_url_env)
    if email is not None:
        names += [email.username_env, email.password_env]
    return [env[name] for name in names if env.get(name)]


def hold(secrets: Iterable[str]) -> None:
    """Mask `secrets` (with those held already) in `redact` and in every log record made from
    now on in this process."""
    with _HELD.lock:
        _HELD.redactor = Redactor(*_HELD.redactor.secrets, *secrets, min_length=MIN_SECRET_LENGTH)
        if not _HELD.factory_installed:
            logging.setLogRecordFactory(_masking_factory(logging.getLogRecordFactory()))
            _HELD.factory_installed = True


def redact(text: str) -> str:
    """`text` with every held credential masked."""
    return _HELD.redactor(text)


def _masking_factory(make: Any) -> Any:
    """A log-record factory that masks the message, its arguments and the traceback."""

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record: logging.LogRecord = make(*args, **kwargs)
        if not _HELD.redactor.pieces:
            return record
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: logging reports it when the record is emitted
            return record
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info:  # formatted now, masked, and kept as the text every formatter uses
            text = redact(logging.Formatter().formatException(record.exc_info))
            record.exc_info, record.exc_text = None, text
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return record

    return factory


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
