"""The store's path checked before anything is fetched: a collection that can only fail at its
write must fail at once, not after every provider has been asked (and its answers thrown away).

What DuckDB needs to write a store: the file itself readable and writable (or absent, to be
created), and its directory writable for the file and its write-ahead log beside it, or, when
missing, creatable (the store makes missing directories). `os.access` answers for the process's
own rights and for a read-only filesystem alike.
"""

from __future__ import annotations

import os
from pathlib import Path

from collectors.common import ConfigError


def check_store_path(path: Path, key: str, source: Path | None = None) -> None:
    """A ConfigError naming `key` (`storage.path`, `--db`, the variable) and the config file
    when the store at `path` cannot be written; nothing is created or changed."""
    problem = _problem(path)
    if problem is not None:
        where = f"{source}: " if source is not None and key == "storage.path" else ""
        raise ConfigError(f"{where}{key}: {path}: {problem}")


def _problem(path: Path) -> str | None:
    if "\x00" in str(path):
        return "the path holds a NUL character"
    if path.is_dir():
        return "is a directory; give the path of a file (like prices.duckdb)"
    if path.exists():
        if not path.is_file():
            return "is not a regular file"
        if not os.access(path, os.R_OK | os.W_OK):
            return "cannot be written (no permission, or a read-only filesystem)"
    folder = path.parent if str(path.parent) else Path(".")
    existing = folder
    while not existing.exists():
        if existing.is_symlink():  # a dangling link: mkdir would fail on it
            return f"{existing} is a broken symbolic link"
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is a file, not a directory"
    if not os.access(existing, os.W_OK | os.X_OK):
        doing = "the store and its log" if existing == folder else f"{folder} in it"
        return (
            f"the directory {existing} is not writable (no permission, or a read-only "
            f"filesystem): {doing} cannot be created"
        )
    return None
