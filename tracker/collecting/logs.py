"""The daemon's log: one line per job on stderr, as text or as JSON (one object per line).

JSON lines carry the job's figures as fields (`provider`, `status`, `records`, `changes`,
`duration_s`, ...) so a log shipper can chart them without parsing sentences. The console
alert channel writes into the log too (`LogStream`), so a JSON log stays one object per line.
"""

from __future__ import annotations

import io
import logging
import sys
from typing import Literal

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# APScheduler says "Running job ..." for every run, and warns "skipped: maximum number of
# running instances reached" each interval a long collection is still going; the collectors
# tell of pages and skipped rows. The daemon's own line per job says what matters, once (with
# the duration). `--verbose` lets them all through.
_QUIET = {"apscheduler": logging.ERROR, "collectors": logging.WARNING}
# Even then, the SDKs' and HTTP stack's own debug lines (every botocore hook, every signing
# step) would bury the collectors' in tens of thousands of lines per run.
_CHATTY = ("botocore", "boto3", "urllib3", "google", "grpc", "tencentcloud", "alibabacloud")


def setup(log_format: Literal["text", "json"], *, verbose: bool = False) -> None:
    """Route every log record to stderr in the chosen format (replacing earlier handlers)."""
    handler = logging.StreamHandler(sys.stderr)
    if log_format == "json":  # json escapes what it writes; imported only when chosen
        from pythonjsonlogger.json import JsonFormatter

        handler.setFormatter(
            JsonFormatter(
                "%(asctime)s %(levelname)s %(name)s %(message)s",
                rename_fields={"asctime": "time", "levelname": "level", "name": "logger"},
                datefmt="%Y-%m-%dT%H:%M:%S%z",
            )
        )
    else:
        handler.setFormatter(SafeText(TEXT_FORMAT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
    for name, level in _QUIET.items():
        logging.getLogger(name).setLevel(logging.INFO if verbose else level)
    for name in _CHATTY:
        logging.getLogger(name).setLevel(logging.INFO)


# C0 controls but the newline, DEL and C1: a terminal acts on them (ESC starts a sequence that
# can rewrite what the operator sees), and a log shipper may cut a record at a carriage return.
_CONTROLS = {c: f"\\x{c:02x}" for c in (*range(0x20), *range(0x7F, 0xA0)) if c != 0x0A}
_ALL_CONTROLS = {**_CONTROLS, 0x0A: "\\n"}


def escape(text: str, *, newlines: bool = False) -> str:
    """`text` with its control characters as `\\xNN` escapes; `newlines`: those too (a value
    a client sent, which must stay on its own log line)."""
    return text.translate(_ALL_CONTROLS if newlines else _CONTROLS)


class SafeText(logging.Formatter):
    """The text log's formatter: no record writes a control character raw (a request line or
    a provider's error can carry any), whatever logged it. Newlines stay: a traceback's lines."""

    def format(self, record: logging.LogRecord) -> str:
        return escape(super().format(record))


class LogStream(io.TextIOBase):
    """A text stream whose every line becomes a log record (the console alert channel's
    output, inside the daemon)."""

    def __init__(self, logger: logging.Logger, level: int = logging.WARNING) -> None:
        super().__init__()
        self.logger = logger
        self.level = level
        self._partial = ""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        lines = (self._partial + text).split("\n")
        self._partial = lines.pop()
        for line in lines:
            if line.strip():
                self.logger.log(self.level, line)
        return len(text)

    def flush(self) -> None:
        if self._partial.strip():
            self.logger.log(self.level, self._partial)
        self._partial = ""
