"""The sandbox for SQL a user writes: a read-only connection to the store that can read the
store and nothing else, and a time limit on the query.

DuckDB's own settings make the sandbox: `enable_external_access = false` closes every file
but the store (read_csv, read_text, glob, COPY ... TO, EXPORT, ATTACH, an https:// path), no
extension may be installed or loaded, and `lock_configuration` keeps SET, PRAGMA and RESET from
undoing any of it. They are set after the store is opened (the database file and its WAL are
then already open) and after the store's own settings (UTC). DuckDB shares them among every
read-only connection of the process, so `storage.connection` sets them for every reader, once
per instance, and an export (which writes files) takes its turn apart from readers. A
statement check in front only makes the common refusals read well; the settings are what
hold.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb

from collectors.common import StoreError
from storage.connection import LOCK_WAIT_S, connect

# Statement kinds that only read. MULTI is a PIVOT (DuckDB runs it as a few statements of its
# own); PRAGMA and CALL are the table functions (table_info, storage_info): a PRAGMA that would
# change a setting meets the locked configuration.
_READ_KINDS = {"SELECT", "EXPLAIN", "MULTI", "PRAGMA", "CALL"}
# After the time limit, the interrupt is repeated until the query gives up: one sent in the
# moment before the query started would otherwise be lost.
_REPEAT_S = 0.05
# The connections inside `time_limit` now, for `interrupt_all`.
_LIVE: set[Any] = set()
_LIVE_LOCK = threading.Lock()


class QueryRefused(StoreError):
    """The statement is not a read of the store (a usage error, not a store failure)."""


class QueryStopped(StoreError):
    """The query ran past its time limit and was interrupted."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"query stopped after {seconds:g} s (its time limit)")
        self.seconds = seconds


@contextmanager
def sandboxed(path: Path | str, *, wait_s: float = LOCK_WAIT_S) -> Iterator[Any]:
    """A read-only connection to the store at `path` that reaches nothing outside it and
    whose settings cannot change; closed on exit."""
    with connect(path, read_only=True, wait_s=wait_s) as con:
        yield con


def check_statement(con: Any, sql: str) -> None:
    """Refuse, with one clear line, anything but exactly one statement that reads."""
    try:
        # The store's own connection parses it: duckdb.extract_statements() would start a
        # second, in-memory database for this alone (a third of a short query's time).
        statements = con.extract_statements(sql)
    except duckdb.Error as exc:
        raise QueryRefused(f"SQL does not parse: {one_line(exc)}") from exc
    if len(statements) != 1:
        raise QueryRefused(f"give exactly one SQL statement (got {len(statements)})")
    kind = statements[0].type.name
    if kind not in _READ_KINDS:
        raise QueryRefused(
            f"refused: SQL here is read-only and this statement is {kind}; SELECT, WITH, "
            "FROM, VALUES, PIVOT, UNPIVOT, DESCRIBE, SUMMARIZE, SHOW and EXPLAIN run"
        )


@contextmanager
def time_limit(con: Any, timeout_s: float | None) -> Iterator[None]:
    """Interrupt `con`'s statements once `timeout_s` seconds have passed since entering (None:
    no limit); a statement interrupted so raises QueryStopped out of the block. The one time
    limit of every read a user starts (`sql`, `latest`, `history`, `tco`, the dashboard)."""
    finished, fired = threading.Event(), threading.Event()
    watchdog = threading.Thread(
        target=_interrupt_after,
        args=(con, timeout_s, finished, fired),
        daemon=True,
        name="read-timeout",
    )
    started = time.monotonic()
    if timeout_s is not None:
        watchdog.start()
    with _LIVE_LOCK:
        _LIVE.add(con)
    try:
        yield
    except (duckdb.InterruptException, StoreError) as exc:
        if fired.is_set() and _interrupted(exc):
            raise QueryStopped(timeout_s or 0) from exc
        raise
    finally:
        with _LIVE_LOCK:
            _LIVE.discard(con)
        finished.set()
        if watchdog.is_alive():
            watchdog.join()
    # A read that ran past its limit is stopped even when its statements slipped between the
    # interrupts (DuckDB drops one sent while no statement runs): the limit means the same
    # whatever the timing, and a reader past it has already kept a writer waiting long enough.
    if timeout_s is not None and (fired.is_set() or time.monotonic() - started >= timeout_s):
        raise QueryStopped(timeout_s)


def interrupt_all() -> int:
    """Interrupt every time-limited read of this process now (a server stopping: its requests
    must not hold the exit); how many were running. Call it again until they are gone: an
    interrupt sent between two statements is dropped."""
    with _LIVE_LOCK:
        live = list(_LIVE)
    for con in live:
        with contextlib.suppress(duckdb.Error):  # closed since: nothing left to stop
            con.interrupt()
    return len(live)


@contextmanager
def bounded(
    path: Path | str, timeout_s: float | None, *, wait_s: float = LOCK_WAIT_S
) -> Iterator[Any]:
    """A sandboxed read-only connection whose statements are interrupted once `timeout_s`
    seconds have passed since it opened (then QueryStopped); closed on exit."""
    with sandboxed(path, wait_s=wait_s) as con, time_limit(con, timeout_s):
        yield con


def run(con: Any, sql: str, params: Any, *, timeout_s: float | None) -> Any:
    """Execute `sql` on a sandboxed `con` and fetch every row, interrupted after `timeout_s`
    seconds (None: no limit). Returns the cursor's description and the rows."""
    try:
        with time_limit(con, timeout_s):
            cursor = con.execute(sql, params)
            return cursor.description or [], cursor.fetchall()
    except duckdb.PermissionException as exc:
        raise QueryRefused(
            f"refused: SQL here reads the store and nothing else ({one_line(exc)})"
        ) from exc
    except duckdb.InvalidInputException as exc:
        if "configuration has been locked" not in str(exc):
            raise
        raise QueryRefused(f"refused: SQL here cannot change settings ({one_line(exc)})") from exc


def _interrupted(exc: BaseException) -> bool:
    # A read may wrap DuckDB's error in a StoreError: the interrupt is then its cause.
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, duckdb.InterruptException):
            return True
        seen = seen.__cause__
    return False


def _interrupt_after(
    con: Any, timeout_s: float, finished: threading.Event, fired: threading.Event
) -> None:
    if finished.wait(timeout_s):
        return
    fired.set()
    con.interrupt()
    while not finished.wait(_REPEAT_S):
        con.interrupt()


def one_line(exc: Exception) -> str:
    """DuckDB's message on one line, without the query echo and caret it draws below it."""
    lines = []
    for line in str(exc).strip().splitlines():
        if line.startswith("LINE "):
            break
        if line.strip():
            lines.append(line.strip())
    return " ".join(lines) or type(exc).__name__


def fetch_rows(
    store: Path | str, sql: str, params: dict[str, Any], timeout_s: float | None, what: str
) -> list[tuple[Any, ...]]:
    """Every row of one read of the store on a bounded connection; a failure is a StoreError
    naming `what` was being read ("the price history")."""
    with bounded(store, timeout_s) as con:
        try:
            return list(con.execute(sql, params).fetchall())
        except duckdb.Error as exc:
            raise StoreError(f"reading {what} failed: {exc}") from exc
