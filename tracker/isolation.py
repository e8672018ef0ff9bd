"""A provider's fetch and parse in a process of its own, for the daemon.

The daemon lives for months; the provider SDKs it drives were written for short scripts.
Each collection runs in a fresh child process (`python -m tracker.isolation`): the SDK's
imports, API models, caches and whatever it leaks are returned to the system when the child
exits, so the daemon's own memory stays flat (bench/bench_daemon.py). The child only fetches
and parses; the records come back to the daemon, which stores them under its store lock, so
the DuckDB file still has one writer.

The child is the daemon's to stop: it ignores SIGINT and SIGTERM (Ctrl-C reaches the whole
terminal process group, `systemctl stop` the whole unit) and is killed by the daemon when a
collection is abandoned at shutdown or outlasts its time limit, and by the kernel if the
daemon dies (Linux). A plain subprocess rather than multiprocessing: a spawned
multiprocessing child would import the daemon's own entry point (all of the CLI) again.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any, Literal

from collectors import collector_class
from collectors.base import (
    CollectorError,
    MissingCredentials,
    ParseResult,
    PriceRecord,
    ProviderSettings,
)
from tracker import logs

_POLL_S = 0.2
_PR_SET_PDEATHSIG = 1  # linux/prctl.h
_RECORD_FIELDS = tuple(f.name for f in fields(PriceRecord))


class Abandoned(Exception):
    """The collection was given up because the daemon is stopping; nothing of it is stored."""


@dataclass(frozen=True)
class Fetched:
    """What a collector found, and the regions it covered (None: all of the provider's)."""

    parsed: ParseResult
    covered: tuple[str, ...] | None


class Isolated:
    """Runs fetch + parse in a child process. `abandon` (set when stopping) kills it; so does
    running longer than the provider's entry in `timeouts` (a failed run saying so)."""

    def __init__(
        self,
        abandon: threading.Event,
        *,
        timeouts: Mapping[str, float],
        log_format: Literal["text", "json"] = "text",
        verbose: bool = False,
    ) -> None:
        self.abandon = abandon
        self.timeouts = timeouts
        self.log_format = log_format
        self.verbose = verbose

    def __call__(self, name: str, settings: ProviderSettings, started_at: datetime) -> Fetched:
        request = pickle.dumps((name, settings, started_at, self.log_format, self.verbose))
        child = subprocess.Popen(
            [sys.executable, "-m", "tracker.isolation"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            # Out of the terminal's process group: Ctrl-C is the daemon's to handle.
            start_new_session=True,
        )
        try:
            output = self._communicate(child, name, request)
        finally:
            if child.poll() is None:
                child.kill()
            child.wait()
        return _answer(name, output, child.returncode)

    def _communicate(self, child: subprocess.Popen[bytes], name: str, request: bytes) -> bytes:
        limit = self.timeouts.get(name, 3600.0)
        deadline = time.monotonic() + limit
        given: bytes | None = request
        while True:
            try:
                output, _ = child.communicate(given, timeout=_POLL_S)
                return output
            except subprocess.TimeoutExpired:
                given = None  # sent with the first call; later calls go on reading
            if self.abandon.is_set():
                raise Abandoned(name)
            if time.monotonic() > deadline:
                raise CollectorError(
                    name,
                    f"the collection took longer than {limit:.0f} s and was stopped "
                    "(daemon.job_timeout)",
                )


def _answer(name: str, output: bytes, returncode: int) -> Fetched:
    try:
        kind, *rest = pickle.loads(output)
    except Exception:  # EOF or garbage: the child died before answering
        reason = f"killed by signal {-returncode}" if returncode < 0 else f"exit code {returncode}"
        raise CollectorError(name, f"the collector process died ({reason})") from None
    if kind == "ok":
        rows, unknown, skipped, sold_out, unreadable, covered = rest
        records = [PriceRecord(*row) for row in rows]
        return Fetched(ParseResult(records, unknown, skipped, sold_out, unreadable), covered)
    if kind == "skipped":
        raise _ChildSkipped(name, rest[0])
    raise _ChildFailed(name, rest[0])


class _ChildSkipped(MissingCredentials):
    """The child's missing-credentials error, its message kept word for word."""

    def __init__(self, provider: str, message: str) -> None:
        Exception.__init__(self, message)
        self.provider, self.variable = provider, ""


class _ChildFailed(CollectorError):
    """The child's collector error, its message kept word for word."""

    def __init__(self, provider: str, message: str) -> None:
        Exception.__init__(self, message)
        self.provider = provider


def _collect(name: str, settings: ProviderSettings, started_at: datetime) -> tuple[Any, ...]:
    """Fetch and parse; what happened as plain data (records as tuples: pickling them as
    dataclasses costs several times more)."""
    try:
        collector = collector_class(name)(settings, None)
        collector.check_credentials()
        parsed = collector.parse(collector.fetch(), observed_at=started_at)
    except MissingCredentials as exc:
        return ("skipped", str(exc))
    except CollectorError as exc:
        return ("failed", str(exc))
    except Exception as exc:  # a bug in one collector: reported like any failure
        logging.getLogger("tracker.pipeline").exception("%s: unexpected error", name)
        return ("failed", f"{name}: {type(exc).__name__}: {exc}")
    rows = [tuple(getattr(r, f) for f in _RECORD_FIELDS) for r in parsed.records]
    extra = (parsed.unknown_instance_types, parsed.skipped_rows, parsed.sold_out)
    return ("ok", rows, *extra, parsed.unreadable, collector.regions or None)


def _die_with_parent() -> None:
    """On Linux, have the kernel kill this child when the daemon dies (even by kill -9), so
    no collection of a dead daemon goes on fetching."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def main() -> None:
    """The child: a pickled request on stdin, the pickled answer on stdout."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    _die_with_parent()
    request = sys.stdin.buffer.read()
    if not request:  # the daemon died before it could ask
        sys.exit(1)
    # The answer gets the real stdout; anything a library prints goes to the log instead.
    answer = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    name, settings, started_at, log_format, verbose = pickle.loads(request)
    logs.setup(log_format, verbose=verbose)
    with contextlib.suppress(OSError):  # the daemon is gone: nobody to tell
        answer.write(pickle.dumps(_collect(name, settings, started_at)))
        answer.close()


if __name__ == "__main__":
    main()
