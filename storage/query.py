"""Read-only SQL over the store, safe to run while another process collects.

A reader opens the file read-only, runs one statement and closes it. Only queries are accepted:
DuckDB refuses writes on a read-only connection anyway, but statements that write elsewhere
(COPY ... TO, ATTACH, EXPORT) are refused here, before they run, with a message that says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from collectors.common import StoreError
from storage.connection import LOCK_WAIT_S, connect

_READ_ONLY_TYPES = {"SELECT", "EXPLAIN"}


class QueryRefused(StoreError):
    """The statement is not a read-only query (a usage error, not a store failure)."""


@dataclass(frozen=True)
class QueryResult:
    columns: list[str]
    types: list[str]
    rows: list[tuple[Any, ...]]


def _check_read_only(con: Any, sql: str) -> None:
    try:
        # The store's own connection parses it: duckdb.extract_statements() would start a
        # second, in-memory database for this alone (a third of a short query's time).
        statements = con.extract_statements(sql)
    except duckdb.Error as exc:
        raise QueryRefused(f"SQL does not parse: {exc}") from exc
    if len(statements) != 1:
        raise QueryRefused(f"give exactly one SQL statement (got {len(statements)})")
    kind = statements[0].type.name
    if kind not in _READ_ONLY_TYPES:
        raise QueryRefused(
            f"refused: `gpu-tracker sql` is read-only and this statement is {kind}; "
            "only SELECT (and EXPLAIN) queries run here"
        )


def query(
    path: Path | str,
    sql: str,
    params: list[Any] | None = None,
    *,
    wait_s: float = LOCK_WAIT_S,
) -> QueryResult:
    """Run one read-only statement against the store at `path`."""
    with connect(path, read_only=True, wait_s=wait_s) as con:
        _check_read_only(con, sql)
        try:
            cursor = con.execute(sql, params)
            rows = cursor.fetchall()
        except duckdb.Error as exc:
            raise StoreError(f"query failed: {exc}") from exc
        description = cursor.description or []
        return QueryResult(
            columns=[d[0] for d in description],
            types=[str(d[1]) for d in description],
            rows=rows,
        )
