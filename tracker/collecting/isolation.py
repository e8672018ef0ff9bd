"""A provider's fetch and parse in a process of its own, for the daemon.

The daemon lives for months; the provider SDKs it drives were written for short scripts.
Each collection runs in a fresh child process (`python -m tracker.collecting.isolation`): the SDK's
imports, API models, caches and whatever it leaks are returned to the system when the child
exits, so the daemon's own memory stays flat (bench/bench_daemon.py). The child only fetches
and parses; the records come back to the daemon, which stores them under its store lock, so
the DuckDB file still has one writer.

The child is the daemon's to stop: it ignores SIGINT and SIGTERM (Ctrl-C reaches the whole
terminal process group, `systemctl stop` the whole unit) and is killed by the daemon when a
collection is abandoned at shutdown or outlasts its time limit, and by the kernel if the
daemon dies (Linux; armed before the child's Python starts: `start_child`). A plain subprocess
rather than multiprocessing: a spawned multiprocessing child would import the daemon's own
entry point (all of the CLI) again.
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
from pathlib import Path
from typing import Any, Literal

from collectors import collector_class
from collectors.base import ParseResult, PriceRecord, ProviderSettings
from collectors.common import CollectorError, MissingCredentials
from storage.raw import Kept
from tracker.collecting import logs
from tracker.collecting.deadline import DeadlinePassed
from tracker.collecting.failure import hold, redact
from tracker.collecting.keeping import attach, attached, fetch_and_parse

_POLL_S = 0.2
_PR_SET_PDEATHSIG = 1  # linux/prctl.h
_RECORD_FIELDS = tuple(f.name for f in fields(PriceRecord))
# The child imports the very package the daemon runs (a source checkout not installed too),
# from where the daemon found it, and nothing from its working directory.
_CHILD_ENV = {
    **os.environ,
    "PYTHONPATH": os.pathsep.join(
        p for p in (str(Path(__file__).resolve().parents[1]), os.environ.get("PYTHONPATH")) if p
    ),
}


class Abandoned(Exception):
    """The collection was given up because the daemon is stopping; nothing of it is stored."""


@dataclass(frozen=True)
class Fetched:
    """What a collector found, the regions it covered (None: all of the provider's) and the
    answers it kept (None: none, docs/trust.md)."""

    parsed: ParseResult
    covered: tuple[str, ...] | None
    kept: list[Kept] | None = None


class Isolated:
    """Runs fetch + parse in a child process. `abandon` (set when stopping) kills it; so does
    running longer than the provider's entry in `timeouts` (a failed run saying so). The
    child keeps the raw answers in `raw` (None: none)."""

    def __init__(
        self,
        abandon: threading.Event,
        *,
        timeouts: Mapping[str, float],
        log_format: Literal["text", "json"] = "text",
        verbose: bool = False,
        raw: Path | None = None,
    ) -> None:
        self.abandon, self.raw = abandon, raw
        self.timeouts = timeouts
        self.log_format = log_format
        self.verbose = verbose

    def __call__(self, name: str, settings: ProviderSettings, started_at: datetime) -> Fetched:
        request = pickle.dumps(
            (name, settings, started_at, self.log_format, self.verbose, _RECORD_FIELDS, self.raw)
        )
        child = start_child(
            # -P: not the working directory on sys.path (a stray pickle.py or collectors/ in
            # the daemon's directory, say a container's data volume, must not be imported).
            [sys.executable, "-P", "-m", "tracker.collecting.isolation"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        try:
            _send(child, request)
            output = self._communicate(child, name, settings.deadline_s)
        finally:
            _kill_group(child)
            child.wait()
            assert child.stdout is not None
            child.stdout.close()
        return _answer(name, output, child.returncode)

    def _communicate(
        self, child: subprocess.Popen[bytes], name: str, deadline_s: float | None
    ) -> bytes:
        """The child's whole answer, read while watching the clock and the stop flag: the
        provider's deadline or the daemon's job time limit, whichever comes first."""
        limit = self.timeouts.get(name, 3600.0)
        late: CollectorError = CollectorError(
            name,
            f"the collection took longer than {limit:.0f} s and was stopped (daemon.job_timeout)",
        )
        if deadline_s is not None and deadline_s < limit:
            limit, late = deadline_s, DeadlinePassed(name, deadline_s)
        deadline = time.monotonic() + limit
        assert child.stdout is not None
        stdout = child.stdout
        chunks: list[bytes] = []
        reader = threading.Thread(target=lambda: chunks.append(stdout.read()), daemon=True)
        reader.start()
        try:
            while reader.is_alive():
                reader.join(_POLL_S)
                if not reader.is_alive():
                    break
                if self.abandon.is_set():
                    raise Abandoned(name)
                if time.monotonic() > deadline:
                    raise late
        finally:
            if reader.is_alive():  # given up: end it, so its pipe can be closed
                _kill_group(child)
                reader.join(5)
        return b"".join(chunks)


def start_child(argv: list[str], **pipes: Any) -> subprocess.Popen[bytes]:
    """Start a collection's child process, dying with this one from its first instant (on
    Linux): the kernel's parent-death signal is armed between fork and exec, before Python
    starts in the child, so no child outlives a daemon killed while it was still starting.

    The signal follows the thread that started the child: the caller waits for the child in
    that same thread (`Isolated` does), so it never fires early."""
    parent = os.getpid()
    prctl = _prctl()  # looked up here: between fork and exec, only the call itself runs

    def arm() -> None:
        if prctl is not None:
            prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # the daemon died before the signal was armed
            os._exit(1)

    return subprocess.Popen(
        argv,
        # A session of its own: out of the terminal's process group (Ctrl-C is the daemon's
        # to handle), and one group to kill with whatever it started.
        start_new_session=True,
        env=_CHILD_ENV,
        preexec_fn=arm,
        **pipes,
    )


def _prctl() -> Any:
    """libc's prctl on Linux, else None."""
    with contextlib.suppress(OSError, AttributeError):
        if sys.platform.startswith("linux"):
            return ctypes.CDLL(None, use_errno=True).prctl
    return None


def _send(child: subprocess.Popen[bytes], request: bytes) -> None:
    """The whole request, then EOF (communicate() would send only what fits in the pipe on
    its first call when it times out)."""
    assert child.stdin is not None
    with contextlib.suppress(BrokenPipeError):  # it died at once: its exit code says why
        child.stdin.write(request)
    with contextlib.suppress(BrokenPipeError):
        child.stdin.close()


def _kill_group(child: subprocess.Popen[bytes]) -> None:
    """The child and anything it started (a credential helper, say), so a timed-out or
    abandoned collection leaves no process behind; after a normal exit, only strays."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, signal.SIGKILL)


def _answer(name: str, output: bytes, returncode: int) -> Fetched:
    try:
        kind, *rest = pickle.loads(output)
    except Exception:  # EOF or garbage: the child died before answering
        reason = f"killed by signal {-returncode}" if returncode < 0 else f"exit code {returncode}"
        raise CollectorError(name, f"the collector process died ({reason})") from None
    if kind == "ok":
        rows, unknown, skipped, sold_out, unreadable, covered, *more, kept = rest
        records = [PriceRecord(*row) for row in rows]
        parsed = ParseResult(records, unknown, skipped, sold_out, unreadable, *more)
        return Fetched(parsed, covered, kept)
    if kind == "skipped":
        raise _ChildSkipped(name, rest[0])
    failed = _ChildFailed(name, rest[0])
    attach(failed, rest[1] if len(rest) > 1 else None)  # kept before its parse failed
    raise failed


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


def _collect(
    name: str,
    settings: ProviderSettings,
    started_at: datetime,
    wanted: tuple[str, ...],
    raw: Path | None = None,
) -> tuple[Any, ...]:
    """Fetch and parse; what happened as plain data (records as tuples of the daemon's
    `wanted` fields, in its order: pickling dataclasses costs several times more, and a
    daemon older than the installed package would otherwise take fields in the wrong
    places)."""
    if wanted != _RECORD_FIELDS:
        return ("failed", f"{name}: the installed package changed under the daemon: restart it")
    try:
        collector = collector_class(name)(settings, None)
        collector.check_credentials()
        parsed, kept = fetch_and_parse(collector, started_at, raw)
    except MissingCredentials as exc:
        return ("skipped", redact(str(exc)))
    except CollectorError as exc:  # masked here too: the daemon stores and logs it
        return ("failed", redact(str(exc)), attached(exc))
    except Exception as exc:  # a bug in one collector: reported like any failure
        logging.getLogger("tracker.pipeline").exception("%s: unexpected error", name)
        return ("failed", redact(f"{name}: {type(exc).__name__}: {exc}"), attached(exc))
    rows = [tuple(getattr(r, f) for f in wanted) for r in parsed.records]
    extra = (parsed.unknown_instance_types, parsed.skipped_rows, parsed.sold_out)
    bands = parsed.interruption  # a few hundred small frozen dataclasses at most
    covered = collector.regions or None
    zoned, market = parsed.spot_zoned, parsed.market  # market: a few hundred small dataclasses
    facts, transfer = parsed.facts, parsed.transfer  # transfer: a few hundred tiers at most
    more = (parsed.unreadable, covered, parsed.notes, bands, zoned, market, facts, transfer, kept)
    return ("ok", rows, *extra, *more)


def main() -> None:
    """The child: a pickled request on stdin, the pickled answer on stdout (both pipes from
    the daemon, which runs the same installed package)."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    request = sys.stdin.buffer.read()
    if not request:  # the daemon died before it could ask
        sys.exit(1)
    # The answer gets the real stdout; anything a library prints goes to the log instead.
    answer = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    name, settings, started_at, log_format, verbose, wanted, raw = pickle.loads(request)
    hold(settings.credentials.values())  # before any log line: the child logs to the daemon's
    logs.setup(log_format, verbose=verbose)
    with contextlib.suppress(OSError):  # the daemon is gone: nobody to tell
        answer.write(pickle.dumps(_collect(name, settings, started_at, tuple(wanted), raw)))
        answer.close()


if __name__ == "__main__":
    main()
