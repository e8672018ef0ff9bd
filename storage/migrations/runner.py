"""The migrations' runner: each migration not yet recorded in `schema_migrations` applied in
version order, once; then the views (`storage.views`) recreated wherever their definitions
changed. The migrations themselves are grouped by the tables they build, in the other modules
of this room.
"""

from __future__ import annotations

from typing import Any

import duckdb

from storage import views
from storage.connection import transaction
from storage.migrations import alerting, facts, history

_BOOKKEEPING = (
    "CREATE TABLE IF NOT EXISTS schema_migrations ("
    " version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, applied_at TIMESTAMPTZ NOT NULL)"
)

# Every migration, (version, name, statements), in the order they apply: by version, whichever
# module holds them.
MIGRATIONS: list[tuple[int, str, list[str]]] = sorted(
    [*history.STEPS, *alerting.STEPS, *facts.STEPS], key=lambda migration: migration[0]
)

_VERSIONS = [version for version, _, _ in MIGRATIONS]
_STATE = (
    "SELECT (SELECT list(version ORDER BY version) FROM schema_migrations),"
    " (SELECT min(digest) FROM schema_views)"
)


def migrate(con: Any) -> list[int]:
    """Apply every migration not yet recorded, each in its own transaction, then bring the views
    up to date in one more (a brand-new store takes them all in one); return the versions
    applied. Call it outside a transaction."""
    if _up_to_date(con):
        return []
    if _brand_new(con):
        # Nothing to keep apart on an empty file: one commit (one checkpoint) instead of one
        # per migration, a large share of creating a store. An old store keeps its steps.
        with transaction(con):
            con.execute(_BOOKKEEPING)
            # One script: DuckDB parses and runs it in one call, not one per statement.
            con.execute(";\n".join(s for _, _, statements in MIGRATIONS for s in statements))
            con.executemany(
                "INSERT INTO schema_migrations VALUES (?, ?, now())",
                [[version, name] for version, name, _ in MIGRATIONS],
            )
            views.create_views(con, rederived=False)
        return list(_VERSIONS)
    applied = []
    for version, name, statements in _pending(con):
        with transaction(con):
            _apply(con, version, name, statements)
        applied.append(version)
    if applied or views.stored_digest(con) != views.DIGEST:
        with transaction(con):
            views.create_views(con)
    return applied


def migrate_uncommitted(con: Any) -> None:
    """Apply every pending migration and the views inside the caller's open transaction,
    unrecorded unless the caller commits: a dry run sees the current schema on an old store
    and rolls it all back."""
    pending = _pending(con)
    for version, name, statements in pending:
        _apply(con, version, name, statements)
    if pending or views.stored_digest(con) != views.DIGEST:
        views.create_views(con)


def _up_to_date(con: Any) -> bool:
    """Whether every migration and the current views are in, in one statement: it runs before
    every write."""
    try:
        versions, digest = con.execute(_STATE).fetchall()[0]
    except duckdb.CatalogException:  # a new store, or one from before `schema_views`
        return False
    return bool(versions == _VERSIONS and digest == views.DIGEST)


def _brand_new(con: Any) -> bool:
    """Whether the store holds no table, view or sequence yet: a file just created."""
    found = con.execute(
        "SELECT (SELECT count(*) FROM duckdb_tables() WHERE NOT internal)"
        " + (SELECT count(*) FROM duckdb_views() WHERE NOT internal)"
        " + (SELECT count(*) FROM duckdb_sequences())"
    ).fetchone()
    return bool(found and found[0] == 0)


def _pending(con: Any) -> list[tuple[int, str, list[str]]]:
    con.execute(_BOOKKEEPING)
    done = {row[0] for row in con.execute("SELECT version FROM schema_migrations").fetchall()}
    return [m for m in MIGRATIONS if m[0] not in done]


def _apply(con: Any, version: int, name: str, statements: list[str]) -> None:
    for statement in statements:
        con.execute(statement)
    con.execute("INSERT INTO schema_migrations VALUES (?, ?, now())", [version, name])
