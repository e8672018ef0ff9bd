"""What every channel is: something that sends a batch of alerts as one message, or raises
ChannelError with a message that holds no secret.

A Slack webhook URL is itself the secret, and requests/urllib3 put URLs into exception
messages and warning logs. `Redactor` scrubs every secret (and a URL's path, which urllib3
logs alone) from text, and `redacted_logs` applies it to urllib3's log records while a
channel sends.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Protocol

from collectors.common import MASK as MASK  # the one redaction, shared with the collections
from collectors.common import NotifyError
from collectors.common import Redactor as Redactor
from storage.alerts.log import AlertEvent as AlertEvent  # the stored row is what is sent

_URLLIB3_LOGGERS = ("urllib3.connectionpool", "urllib3.util.retry", "urllib3.connection")


class ChannelError(NotifyError):
    """A channel refused or could not be reached; `retry_after_s` when it said how long to wait."""

    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class Notifier(Protocol):
    name: str

    def send(self, events: Sequence[AlertEvent]) -> None:
        """Deliver `events` as one message; raise ChannelError unless the channel accepted it."""


class Unavailable:
    """A configured channel that cannot send (say, its secret is not in the environment):
    every send fails with `reason`, so its alerts stay pending until it can."""

    def __init__(self, name: str, reason: str) -> None:
        self.name = name
        self.reason = reason

    def send(self, events: Sequence[AlertEvent]) -> None:
        raise ChannelError(self.reason)


class _RedactingFilter(logging.Filter):
    def __init__(self, redact: Redactor) -> None:
        super().__init__()
        self.redact = redact

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = self.redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        return True


@contextmanager
def redacted_logs(redact: Redactor) -> Iterator[None]:
    """While inside, urllib3's log records (retries name the URL) are redacted."""
    loggers = [logging.getLogger(name) for name in _URLLIB3_LOGGERS]
    log_filter = _RedactingFilter(redact)
    for logger in loggers:
        logger.addFilter(log_filter)
    try:
        yield
    finally:
        for logger in loggers:
            logger.removeFilter(log_filter)
