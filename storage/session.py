"""A store session for a process that writes: the file opened read-write, the schema brought up
to date, the caller's lock held around it.

The daemon passes its store lock: every DuckDB session of its process takes turns on it, so a
read never opens the file while a collection writes it (DuckDB allows one configuration of a
file per process, hence read-write even for reads).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any

import duckdb

from collectors.common import StoreError
from storage.connection import LOCK_WAIT_S, connect
from storage.migrations import migrate


@contextmanager
def session(
    path: Path | str,
    *,
    lock: AbstractContextManager[Any] | None = None,
    wait_s: float = LOCK_WAIT_S,
) -> Iterator[Any]:
    """A migrated read-write connection to the store at `path`, under `lock` while open."""
    with (
        lock if lock is not None else nullcontext(),
        connect(path, read_only=False, wait_s=wait_s) as con,
    ):
        try:
            migrate(con)
        except duckdb.Error as exc:
            raise StoreError(f"cannot bring the store {path} up to date: {exc}") from exc
        yield con
