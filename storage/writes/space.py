"""A write the disk refused (full, over quota, an I/O error), said in one line.

DuckDB reports it in words (`IO Error: Could not write file "<path>": No space left on device`,
or as `Failed to commit: ...`), Python and Arrow with an errno. Once a statement failed so,
DuckDB answers every later one of the same transaction with `Current transaction is aborted`,
which hides the cause: callers keep the first error and pass it here. The line names the cause
and the file, like `no space left on device writing /data/prices.duckdb.wal` (docs/daemon.md,
"Full disks").
"""

from __future__ import annotations

import errno
import re
from collections.abc import Iterator

# DuckDB's wording of a failed write: the file, then the system's reason (inside a JSON text
# with its quotes escaped, when an asynchronous write failed).
_DUCKDB_WRITE = re.compile(
    r'could not (?:write|create|truncate|sync|fsync)[^"]*\\?"(?P<path>[^"\\]+)\\?"'
    r'[^:]*:\s*(?P<reason>[^\n"]+)',
    re.IGNORECASE,
)
_FULL_WORDS = ("no space left on device", "disk quota exceeded", "file too large")
_FULL_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}


def refused_write(exc: BaseException) -> str | None:
    """`no space left on device writing <path>` when `exc` (or an error behind it) is a write
    the disk refused; None otherwise (a lock, a damaged file, a bug: said as they are)."""
    for error in _chain(exc):
        if isinstance(error, OSError) and error.errno in _FULL_ERRNOS:
            reason = (error.strerror or "no space left on device").lower()
            where = error.filename
            return f"{reason} writing {where}" if where else reason
        text = str(error)
        found = _DUCKDB_WRITE.search(text)
        if found:
            reason = found["reason"].strip().rstrip(".").lower()
            return f"{reason} writing {found['path']}"
        lowered = text.lower()
        for words in _FULL_WORDS:
            if words in lowered:
                return words
    return None


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__
