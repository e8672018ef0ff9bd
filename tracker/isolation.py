"""A provider's fetch and parse in a process of its own, for the daemon.

The daemon lives for months; the provider SDKs it drives were written for short scripts.
Each collection runs in a fresh child process (spawned, not forked: the daemon has threads):
the SDK's imports, API models, caches and whatever it leaks are returned to the system when
the child exits, so the daemon's own memory stays flat (bench/bench_daemon.py). The child
only fetches and parses; the records come back to the daemon, which stores them under its
store lock, so the DuckDB file still has one writer.

It also makes stopping clean: a collection that outlasts the shutdown grace is abandoned by
killing its child, which never held the store.
"""

from __future__ import annotations

import ctypes
import logging
import multiprocessing
import os
import signal
import sys
import threading
from dataclasses import dataclass
from datetime import datetime
from multiprocessing.connection import Connection
from typing import Any, Literal

from collectors import collector_class
from collectors.base import CollectorError, MissingCredentials, ParseResult, ProviderSettings
from tracker import logs

log = logging.getLogger("tracker.isolation")
_CONTEXT = multiprocessing.get_context("spawn")
_POLL_S = 0.2
_PR_SET_PDEATHSIG = 1  # linux/prctl.h


class Abandoned(Exception):
    """The collection was given up because the daemon is stopping; nothing of it is stored."""


@dataclass(frozen=True)
class Fetched:
    """What a collector found, and the regions it covered (None: all of the provider's)."""

    parsed: ParseResult
    covered: tuple[str, ...] | None


class Isolated:
    """Runs fetch + parse in a child process; `abandon` (set when stopping) kills it."""

    def __init__(
        self, abandon: threading.Event, log_format: Literal["text", "json"] = "text"
    ) -> None:
        self.abandon = abandon
        self.log_format = log_format

    def __call__(self, name: str, settings: ProviderSettings, started_at: datetime) -> Fetched:
        parent, child = _CONTEXT.Pipe(duplex=False)
        process = _CONTEXT.Process(
            target=_child,
            args=(child, name, settings, started_at, self.log_format),
            name=f"gpu-tracker {name}",
            daemon=True,
        )
        process.start()
        child.close()  # ours is closed: a child that dies leaves EOF, not a hang
        try:
            answer = self._wait(parent, process, name)
        finally:
            parent.close()
            process.join(5)
            if process.is_alive():
                process.kill()
                process.join()
        return _result(name, answer)

    def _wait(self, conn: Connection, process: Any, name: str) -> tuple[Any, ...]:
        while not conn.poll(_POLL_S):
            if self.abandon.is_set():
                process.kill()
                raise Abandoned(name)
            if not process.is_alive() and not conn.poll(0):
                raise CollectorError(
                    name, f"the collector process died (exit code {process.exitcode})"
                )
        try:
            answer: tuple[Any, ...] = conn.recv()
        except EOFError:
            raise CollectorError(
                name, f"the collector process died (exit code {process.exitcode})"
            ) from None
        return answer


def _result(name: str, answer: tuple[Any, ...]) -> Fetched:
    kind = answer[0]
    if kind == "ok":
        return Fetched(answer[1], answer[2])
    if kind == "skipped":
        raise _ChildSkipped(name, answer[1])
    raise _ChildFailed(name, answer[1])


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


def _child(
    conn: Connection,
    name: str,
    settings: ProviderSettings,
    started_at: datetime,
    log_format: Literal["text", "json"],
) -> None:
    """In the child: collect, send back what happened (as plain data: exceptions of ours do
    not all pickle), exit."""
    _die_with_parent()
    logs.setup(log_format)
    try:
        collector = collector_class(name)(settings, None)
        collector.check_credentials()
        parsed = collector.parse(collector.fetch(), observed_at=started_at)
        answer: tuple[Any, ...] = ("ok", parsed, collector.regions or None)
    except MissingCredentials as exc:
        answer = ("skipped", str(exc))
    except CollectorError as exc:
        answer = ("failed", str(exc))
    except Exception as exc:  # a bug in one collector: reported like any failure
        logging.getLogger("tracker.pipeline").exception("%s: unexpected error", name)
        answer = ("failed", f"{name}: {type(exc).__name__}: {exc}")
    try:
        conn.send(answer)
        conn.close()
    except OSError:  # the daemon is gone (killed): nobody to tell
        pass


def _die_with_parent() -> None:
    """On Linux, have the kernel kill this child when the daemon dies (even by kill -9), so
    no collection of a dead daemon goes on fetching."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:  # the daemon died before we asked
        os._exit(1)
