"""Opening the DuckDB file: short-lived connections, a brief retry on the file lock, UTC.

DuckDB lets one process write a file, and while it holds the file no other process may even
read it. So every user of the store opens, does its work and closes at once; whoever finds the
file locked retries briefly and then says clearly who holds it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb

from collectors.common import StoreError

LOCK_WAIT_S = 5.0
_FIRST_BACKOFF_S = 0.02


def _is_lock_error(exc: Exception) -> bool:
    text = str(exc).lower()
    return "lock" in text and ("conflicting" in text or "could not set" in text)


def _connect(path: Path, read_only: bool, wait_s: float) -> Any:
    deadline = time.monotonic() + wait_s
    delay = _FIRST_BACKOFF_S
    while True:
        try:
            return duckdb.connect(str(path), read_only=read_only)
        except duckdb.IOException as exc:
            if not _is_lock_error(exc):
                raise StoreError(f"cannot open the store {path}: {exc}") from exc
            if time.monotonic() >= deadline:
                raise StoreError(
                    f"the store {path} is locked by another process (a collection or the daemon "
                    f"writing); waited {wait_s:.0f} s. Try again in a moment. ({exc})"
                ) from exc
            time.sleep(delay)
            delay = min(delay * 2, 0.5)


@contextmanager
def connect(path: Path | str, *, read_only: bool, wait_s: float = LOCK_WAIT_S) -> Iterator[Any]:
    """A connection to the store, closed on exit; times in UTC."""
    path = Path(path)
    if read_only and not path.exists():
        raise StoreError(
            f"no price store at {path} yet: run `gpu-tracker collect` (or `gpu-tracker demo`)"
        )
    if not read_only:
        path.parent.mkdir(parents=True, exist_ok=True)
    con = _connect(path, read_only, wait_s)
    try:
        con.execute("SET TimeZone = 'UTC'")
        yield con
    finally:
        con.close()


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
