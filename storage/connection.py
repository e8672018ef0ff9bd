"""Opening the DuckDB file: short-lived connections, waiting out the file lock, UTC, and a
damaged store answered in one line.

DuckDB lets one process write a file, and while it holds the file no other process may even
read it. So every user of the store opens, does its work and closes at once; whoever finds the
file locked retries (a reader briefly, a writer long enough to outlast a reader's query) and
says who holds it. Every DuckDB error that means the file itself is unusable (not a DuckDB
file, truncated, a checksum error, a directory, unreadable) becomes one `StoreDamaged` line
naming the file, whether it shows when opening or only when a damaged block is read.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb

from collectors.common import StoreError

LOCK_WAIT_S = 5.0
_FIRST_BACKOFF_S = 0.02
# The longest pause between two tries. A reader's is short: a busy daemon hands the file from
# one write to the next, so the reader's turn is a gap of a fraction of a second between them,
# which tries half a second apart keep missing until the reader gives up. A writer waits out a
# reader's whole query, and a failed try costs a file open: it need not look so often.
READ_BACKOFF_MAX_S = 0.05
WRITE_BACKOFF_MAX_S = 0.5
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


class StoreDamaged(StoreError):
    """The store file cannot be used as it is (damaged, not a store, unreadable): nothing was
    read or written, and retrying will not help (a usage error for the commands: exit 2)."""


def _is_lock_error(exc: Exception) -> bool:
    text = str(exc).lower()
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


def _connect(path: Path, read_only: bool, wait_s: float, wait_setting: str | None) -> Any:
    deadline = time.monotonic() + wait_s
    delay = _FIRST_BACKOFF_S
    said = False
    while True:
        try:
            return duckdb.connect(str(path), read_only=read_only)
        except duckdb.Error as exc:
            if not _is_lock_error(exc):
                raise _unusable(path, exc) from exc
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
    who = holder(exc)
    if wait_setting:
        return (
            f"the store {path} is locked by another process, {who}, and stayed so for "
            f"{wait_s:g} s, the longest a write waits ({wait_setting}; raise it, or end the "
            "long reader); nothing of this write was stored"
        )
    return (
        f"the store {path} is locked by another process, {who} (a collection or the daemon "
        f"writing); waited {wait_s:g} s. Try again in a moment"
    )


@contextmanager
def connect(
    path: Path | str,
    *,
    read_only: bool,
    wait_s: float = LOCK_WAIT_S,
    wait_setting: str | None = None,
) -> Iterator[Any]:
    """A connection to the store, closed on exit; times in UTC.

    A locked file is retried for `wait_s` seconds; `wait_setting` names the setting that gives
    it (a writer's `[storage] write_wait`): the wait is logged, naming who holds the file, and
    the error when it runs out names the setting. A damaged file raises `StoreDamaged`, also
    when the damage shows only inside the block."""
    path = Path(path)
    if read_only and not path.exists():
        raise StoreError(
            f"no price store at {path} yet: run `gpu-tracker collect` (or `gpu-tracker demo`)"
        )
    if not read_only:
        path.parent.mkdir(parents=True, exist_ok=True)
    con = _connect(path, read_only, wait_s, wait_setting)
    try:
        con.execute("SET TimeZone = 'UTC'")
        yield con
    except Exception as exc:
        damaged = damage(path, exc)
        if damaged is not None and damaged is not exc:
            raise damaged from exc
        raise
    finally:
        con.close()


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
