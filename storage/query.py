"""Read-only SQL over the store, safe to run while another process collects, and safe to hand a
user's SQL to: every query runs in the sandbox (`storage.reads.sandbox`), which reads the store
and nothing else.

A reader opens the file read-only, runs one statement and closes it. Statements that are not
reads (COPY, ATTACH, SET, INSTALL ...) are refused before they run, with a message that says
so; what the statement check lets through still meets the sandbox's locked settings.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from collectors.common import StoreError
from storage.connection import LOCK_WAIT_S
from storage.reads.sandbox import (
    QueryRefused,
    QueryStopped,
    check_statement,
    one_line,
    run,
    sandboxed,
)

__all__ = ["QueryInvalid", "QueryRefused", "QueryResult", "QueryStopped", "query"]
# What DuckDB raises for a query that is wrong as written (an unknown column or table, a bad
# cast, a value out of range, a function it lacks): the user's to fix, like a refusal.
_USER_ERRORS = (duckdb.ProgrammingError, duckdb.DataError, duckdb.NotSupportedError)


class QueryInvalid(QueryRefused):
    """The query cannot run as written (a usage error, not a store failure)."""


@dataclass(frozen=True)
class QueryResult:
    columns: list[str]
    types: list[str]
    rows: list[tuple[Any, ...]]


def query(
    path: Path | str,
    sql: str,
    params: list[Any] | dict[str, Any] | None = None,
    *,
    wait_s: float = LOCK_WAIT_S,
    timeout_s: float | None = None,
) -> QueryResult:
    """Run one read-only statement (a user's or our own) against the store at `path`.

    Raises `QueryRefused` for anything that is not exactly one read of the store (a file, the
    network, an extension, a setting: a usage error), `QueryInvalid` (a `QueryRefused`) for a
    query that cannot run as written (an unknown column, a bad cast), `QueryStopped` when
    `timeout_s` seconds pass first, `StoreDamaged` (from `storage.connection`) for a damaged
    store file and `StoreError` for any other failure; every message is one line."""
    with sandboxed(path, wait_s=wait_s) as con:
        check_statement(con, sql)
        try:
            description, rows = run(con, sql, params, timeout_s=timeout_s)
        except _USER_ERRORS as exc:
            raise QueryInvalid(f"query failed: {one_line(exc)}") from exc
        except duckdb.Error as exc:
            raise StoreError(f"query failed: {one_line(exc)}") from exc
        return QueryResult(
            columns=[d[0] for d in description],
            types=[str(d[1]) for d in description],
            rows=rows,
        )
