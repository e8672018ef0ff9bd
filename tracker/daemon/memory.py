"""Keeping a months-long daemon's memory flat under glibc's allocator.

glibc gives each thread that allocates its own heap ("arena"), up to eight per core, and
hands freed memory back to the system only from the top of a heap. A daemon whose jobs run in
a pool of threads, each building Arrow tables and DuckDB results in turn, slowly spreads over
more arenas and keeps their free holes: its resident size creeps up though nothing leaks. Two
knobs (the ones `MALLOC_ARENA_MAX` and `malloc_trim(3)` are known for) keep it flat. Elsewhere
(musl, macOS) both are no-ops.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import logging
import sys
from typing import Any

log = logging.getLogger("tracker.daemon")
_M_ARENA_MAX = -8  # malloc.h
_ARENAS = 2


def _libc() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    with contextlib.suppress(OSError):
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        if hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim"):
            return libc
    return None


_LIBC = _libc()


def limit_arenas() -> None:
    """At most two malloc arenas for the whole process: call before the threads start."""
    if _LIBC is not None:
        _LIBC.mallopt(_M_ARENA_MAX, _ARENAS)


def give_back() -> None:
    """Return the free memory of every arena to the system (after a job)."""
    if _LIBC is not None:
        _LIBC.malloc_trim(0)
