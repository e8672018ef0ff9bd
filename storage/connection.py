"""Opening the DuckDB file: short-lived connections, waiting out the file lock, UTC, and a
damaged store answered in one line.

DuckDB lets one process write a file, and while it holds the file no other process may even
read it. So every user of the store opens, does its work and closes at once, in its turn
(`storage.gate`: readers together, a writer alone and first); whoever finds the file locked by
another process retries (a reader briefly, a writer long enough to outlast a reader's query)
and says who holds it. Every DuckDB error that means the file itself is unusable (not a DuckDB
file, truncated, a checksum error, a directory, unreadable) becomes one `StoreDamaged` line
naming the file, whether it shows when opening or only when a damaged block is read.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb

from collectors.common import StoreError
from storage.gate import GateTimeout, Kind, announce, turn

LOCK_WAIT_S = 5.0
_FIRST_BACKOFF_S = 0.02
# The longest pause between two tries. A reader's is short: a busy daemon hands the file from
# one write to the next, so the reader's turn is a gap of a fraction of a second between them,
# which tries half a second apart keep missing until the reader gives up. A writer waits out a
# reader's whole query; readers stop opening the file while it waits (`storage.gate`), so the
# readers already in finish soon and it looks often enough to get in right after them.
READ_BACKOFF_MAX_S = 0.05
WRITE_BACKOFF_MAX_S = 0.1
# The settings every sandboxed reader of the process shares, set by whoever opens the instance,
# the lock last so nothing after it can change the others (storage/reads/sandbox.py says why).
LOCKDOWN = (
    "SET GLOBAL TimeZone = 'UTC'",
    "SET enable_external_access = false",
    "SET autoinstall_known_extensions = false",
    "SET autoload_known_extensions = false",
    "SET allow_community_extensions = false",
    "SET lock_configuration = true",
)
_HOLDER = re.compile(r"lock is held in (?P<exe>.+?) \(PID (?P<pid>\d+)\)")
# What DuckDB says when the bytes of the file cannot be what it wrote.
_DAMAGE_SIGNS = (
    "not a valid duckdb database file",
    "corrupt database file",
    "checksum",
    "could not read enough bytes",
    "read past end of file",
)

log = logging.getLogger("storage.connection")
_settling = threading.Lock()


class StoreDamaged(StoreError):
    """The store file cannot be used as it is (damaged, not a store, unreadable): nothing was
    read or written, and retrying will not help (a usage error for the commands: exit 2)."""


def _is_lock_error(exc: Exception) -> bool:
    text = str(exc).lower()
    if "different configuration than existing connections" in text:
        # Someone of this process opened the file outside the gate (a plugin, a test's own
        # duckdb.connect): busy, as a lock held by another process is.
        return True
    return "lock" in text and ("conflicting" in text or "could not set" in text)


def holder(exc: Exception) -> str:
    """Who holds the store, in words, from DuckDB's lock error: the program and its PID, with
    its command line where the system shows it (`gpu-tracker sql ...`)."""
    found = _HOLDER.search(str(exc))
    if not found:
        return "another process"
    pid = found["pid"]
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        # Arguments may span lines (a query, a script): one line of words in a log or message.
        command = " ".join(" ".join(a.decode(errors="replace").split()) for a in argv if a)
    except OSError:
        command = found["exe"]
    command = command if len(command) <= 80 else command[:77] + "..."
    return f"process {pid} ({command})"


def damage(path: Path, exc: BaseException) -> StoreDamaged | None:
    """The one-line StoreDamaged that `exc` (or what it was raised from) means, else None."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, StoreDamaged):
            return seen
        text = str(seen).lower()
        if isinstance(seen, duckdb.Error) and any(sign in text for sign in _DAMAGE_SIGNS):
            first = str(seen).strip().splitlines()[0]
            return StoreDamaged(
                f"the store {path} is damaged ({first}); nothing was read or written. Move it "
                "aside and restore a backup (a collection into a new path starts a fresh store)"
            )
        seen = seen.__cause__
    return None


def _unusable(path: Path, exc: duckdb.Error) -> StoreError:
    text = str(exc).lower()
    if path.is_dir() or "is a directory" in text:
        return StoreDamaged(
            f"the store {path} is a directory, not a DuckDB file: point --db (or [storage] "
            "path) at the store file"
        )
    if "permission denied" in text:
        return StoreDamaged(
            f"cannot open the store {path}: permission denied; run as the user that owns it "
            "or give this user read access (and write access to collect)"
        )
    first = str(exc).strip().splitlines()[0]
    return damage(path, exc) or StoreError(f"cannot open the store {path}: {first}")


def _connect(
    path: Path, read_only: bool, wait_s: float, deadline: float, wait_setting: str | None
) -> Any:
    delay = _FIRST_BACKOFF_S
    said = False
    while True:
        try:
            return duckdb.connect(str(path), read_only=read_only)
        except duckdb.Error as exc:
            if not _is_lock_error(exc):
                raise _unusable(path, exc) from exc
            if not read_only:
                announce(path, deadline)  # readers of every process now let this writer in
            if time.monotonic() >= deadline:
                raise StoreError(_gave_up(path, exc, wait_s, wait_setting)) from exc
            if wait_setting and not said:  # a writer's wait is long enough to be worth a line
                log.warning(
                    "the store %s is held by %s; waiting up to %g s for it (%s)",
                    path,
                    holder(exc),
                    wait_s,
                    wait_setting,
                )
                said = True
            time.sleep(delay)
            delay = min(delay * 2, READ_BACKOFF_MAX_S if read_only else WRITE_BACKOFF_MAX_S)


def _gave_up(path: Path, exc: Exception, wait_s: float, wait_setting: str | None) -> str:
    if isinstance(exc, GateTimeout):
        held = f"the store {path} is held by {exc.holder}"
    else:
        held = f"the store {path} is locked by another process, {holder(exc)}"
    if wait_setting:
        return (
            f"{held}, and stayed so for "
            f"{wait_s:g} s, the longest a write waits ({wait_setting}; raise it, or end the "
            "long reader); nothing of this write was stored"
        )
    return (
        f"{held} (a collection or the daemon writing); waited {wait_s:g} s. Try again in a moment"
    )


@contextmanager
def connect(
    path: Path | str,
    *,
    read_only: bool,
    wait_s: float = LOCK_WAIT_S,
    wait_setting: str | None = None,
    outside: bool = False,
) -> Iterator[Any]:
    """A connection to the store, closed on exit; times in UTC.

    A read-only connection is sandboxed (it reaches no file but the store, its settings are
    locked) unless `outside` (an export's COPY writes files): the two kinds take turns in the
    process, as readers and writers do (`storage.gate`). A file locked by another process is
    retried for `wait_s` seconds, the turn included; `wait_setting` names the setting that
    gives it (a writer's `[storage] write_wait`): the wait is logged, naming who holds the
    file, and the error when it runs out names the setting. A damaged file raises
    `StoreDamaged`, also when the damage shows only inside the block."""
    path = Path(path)
    if read_only and not path.exists():
        raise StoreError(
            f"no price store at {path} yet: run `gpu-tracker collect` (or `gpu-tracker demo`)"
        )
    if not read_only:
        path.parent.mkdir(parents=True, exist_ok=True)
    kind: Kind = "write" if not read_only else "outside" if outside else "read"
    deadline = time.monotonic() + wait_s
    try:
        with turn(path, kind, deadline):
            con = _connect(path, read_only, wait_s, deadline, wait_setting)
            try:
                _settle(con, kind)
                yield con
            except Exception as exc:
                damaged = damage(path, exc)
                if damaged is not None and damaged is not exc:
                    raise damaged from exc
                raise
            finally:
                con.close()
    except GateTimeout as exc:
        raise StoreError(_gave_up(path, exc, wait_s, wait_setting)) from exc


def _settle(con: Any, kind: Kind) -> None:
    """Times in UTC, and a reader's sandbox. A reader's settings belong to the instance every
    reader of the process shares: the first one in sets them, and the others wait until it has
    (a SET of theirs would meet the lock)."""
    if kind != "read":
        con.execute("SET TimeZone = 'UTC'")
        return
    with _settling:
        if not scalar(con, "SELECT current_setting('lock_configuration')"):
            for statement in LOCKDOWN:
                con.execute(statement)


def probe(path: Path | str) -> None:
    """Raise StoreDamaged now when the store at `path` exists but is not a usable store, so a
    collection fails before it fetches anything; a missing or busy store passes (the write
    creates it, or waits for it)."""
    path = Path(path)
    if not path.is_file():
        return
    try:
        with connect(path, read_only=True, wait_s=0):
            pass
    except StoreDamaged:
        raise
    except StoreError:  # locked by a writer: the write itself will wait for it
        return


@contextmanager
def transaction(con: Any, *, commit: bool = True) -> Iterator[Any]:
    """One transaction on `con`: committed when the block ends, rolled back when it raises
    (`commit=False`: rolled back in any case, for a dry run that must keep nothing).

    The one place the store says BEGIN, COMMIT and ROLLBACK, so no caller can leave a
    transaction open (DuckDB would then refuse the connection's next BEGIN)."""
    con.execute("BEGIN TRANSACTION")
    try:
        yield con
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT" if commit else "ROLLBACK")


def scalar(con: Any, sql: str, params: Any = None) -> Any:
    """The single value a statement returns, with its result fully consumed (DuckDB 2 refuses
    new work on a connection whose last result was only partly fetched)."""
    return con.execute(sql, params).fetchall()[0][0]
