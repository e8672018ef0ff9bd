"""Whose turn it is to open the store: readers share it, a writer has it alone, and a writer
that is waiting goes first, in this process and across processes.

DuckDB keeps one database instance per file per process, shared by every connection that
opens the file, with one set of settings. So inside a process, a read-write connection cannot
open while a read-only one is open (DuckDB refuses: "a different configuration than existing
connections"), nor the other way round, and the sandbox's locked settings, once one reader set
them, hold for every reader of that instance. Across processes, DuckDB's file lock lets one
writer or any number of readers in.

The gate of a store (one per resolved path, per process) admits one kind of connection at a
time:

- `read`: read-only and sandboxed (the settings every reader of the process shares, set once
  by whoever opens the instance). Any number at once.
- `outside`: read-only, reaching files outside the store (an export's COPY). Any number.
- `write`: read-write. One at a time.

A thread that waits for another kind stops newcomers of the kind in turn from joining, so
neither a stream of dashboard reads nor a long export starves anyone; a waiting writer goes
before every reader. Across processes the same rule is kept through a small file beside the
store, `<store>.writer.lock`: a writer that finds the store held by another process's readers
takes an exclusive flock on it and keeps it until it has closed the store, and a reader in any
process that finds it held waits rather than open the store again, so the writer gets in as
soon as the readers already in finish (docs/daemon.md, "Readers and writers"). A writer that
gets in at once writes no such file.
"""

from __future__ import annotations

import errno
import fcntl
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Literal

Kind = Literal["read", "outside", "write"]
_POLL_FIRST_S = 0.005
_POLL_MAX_S = 0.05


class GateTimeout(Exception):
    """The turn did not come within the wait; `holder` says who had the store."""

    def __init__(self, holder: str) -> None:
        super().__init__(holder)
        self.holder = holder


@dataclass
class _Gate:
    path: Path
    cond: threading.Condition = field(default_factory=threading.Condition)
    kind: Kind | None = None
    holders: int = 0
    waiting: dict[Kind, int] = field(default_factory=lambda: {"read": 0, "outside": 0, "write": 0})
    owners: dict[int, int] = field(default_factory=dict)  # thread id -> turns it holds
    intent: IO[bytes] | None = None  # the writer's flock, held through the write turn

    def admits(self, kind: Kind) -> bool:
        if self.holders == 0:
            # Free: a waiting writer first, then anyone.
            return kind == "write" or self.waiting["write"] == 0
        if kind == "write" or kind != self.kind:
            return False
        # Join the shared turn only while nobody of another kind waits for it to end.
        return all(count == 0 for other, count in self.waiting.items() if other != kind)


_gates: dict[str, _Gate] = {}
_gates_lock = threading.Lock()


def _gate(path: Path) -> _Gate:
    key = os.path.realpath(path)
    with _gates_lock:
        found = _gates.get(key)
        if found is None:
            found = _gates[key] = _Gate(Path(key))
        return found


def intent_path(store: Path) -> Path:
    """The file whose flock says a writer holds, or waits for, the store."""
    return store.with_name(store.name + ".writer.lock")


@contextmanager
def turn(path: Path, kind: Kind, deadline: float) -> Iterator[None]:
    """Hold `kind`'s turn on the store at `path` until the block ends; GateTimeout when the
    turn does not come by `deadline` (time.monotonic())."""
    gate = _gate(path)
    me = threading.get_ident()
    with gate.cond:
        if gate.owners.get(me) and gate.kind == kind:
            # The same thread again (a read inside a read): joining never waits for itself.
            reentered = True
        elif gate.owners.get(me):
            # A write inside this thread's own read would wait for itself until its deadline.
            raise RuntimeError(f"a {kind} of {gate.path} inside this thread's {gate.kind}")
        else:
            reentered = False
            gate.waiting[kind] += 1
            try:
                while not gate.admits(kind):
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise GateTimeout(_holder_words(gate))
                    gate.cond.wait(left)
            except GateTimeout:
                # Newcomers held back for this one may join the turn in progress now.
                gate.cond.notify_all()
                raise
            finally:
                gate.waiting[kind] -= 1
        gate.kind = kind
        gate.holders += 1
        gate.owners[me] = gate.owners.get(me, 0) + 1
    try:
        if kind != "write" and not reentered:
            _await_writers(gate.path, deadline)
        yield
    finally:
        with gate.cond:
            gate.holders -= 1
            gate.owners[me] -= 1
            if not gate.owners[me]:
                del gate.owners[me]
            # Only the end of the turn admits anyone new: joining one in progress is never
            # held back by a holder, only by a waiter.
            if gate.holders == 0:
                gate.kind = None
                if gate.intent is not None:
                    gate.intent.close()  # closing the file drops its flock
                    gate.intent = None
                gate.cond.notify_all()


def _holder_words(gate: _Gate) -> str:
    kinds = {"read": "readers", "outside": "exports", "write": "writer"}
    return f"this process's own {kinds[gate.kind or 'read']} ({gate.holders} open)"


def announce(path: Path, deadline: float) -> None:
    """Say, for the rest of this thread's write turn, that a writer waits for the store at
    `path`: readers of every process stop opening it. Waits for another process's writer that
    said so first (GateTimeout at `deadline`). Once per turn; nothing when the file cannot be
    made (a folder this user cannot write: the write itself will say so)."""
    gate = _gate(path)
    if gate.intent is None and gate.kind == "write":
        gate.intent = _flock_intent(gate.path, deadline)


def _flock_intent(store: Path, deadline: float) -> IO[bytes] | None:
    try:
        handle = intent_path(store).open("a+b")
    except OSError:
        return None
    try:
        _flock(handle, fcntl.LOCK_EX, deadline)
    except BaseException:
        handle.close()
        raise
    return handle


def _await_writers(store: Path, deadline: float) -> None:
    """Wait while a writer in another process holds or waits for the store, so readers stop
    opening it and the writer gets in; no file, or one this user cannot open, means none."""
    try:
        handle = intent_path(store).open("rb")
    except OSError:
        return
    with handle:  # closing the handle drops the probe's shared lock
        _flock(handle, fcntl.LOCK_SH, deadline)


def _flock(handle: IO[bytes], operation: int, deadline: float) -> None:
    """Take `operation`'s flock on `handle`, trying again while another process's writer holds
    it (GateTimeout at `deadline`); a file system without flock counts as nobody holding it."""
    delay = _POLL_FIRST_S
    while True:
        try:
            fcntl.flock(handle, operation | fcntl.LOCK_NB)
            return
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                return
            if time.monotonic() >= deadline:
                raise GateTimeout("a writer in another process") from None
            time.sleep(delay)
            delay = min(delay * 2, _POLL_MAX_S)
