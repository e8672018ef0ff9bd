"""The Now panel kept, rendered, until the store changes: reading every current offer out of a
long history costs far more than sending the page again, and the store changes only when a
collection writes (hourly, say), while people reload the page far more often.

The store's state is its file's and its write-ahead log's modification time and size, read
before the page is built: a write that lands while it is built makes the next request build it
again. An entry also expires after `max_age_s`, because whether an offer is stale depends on
the clock, not only on the store.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

MAX_AGE_S = 60.0

State = tuple[tuple[int, int] | None, ...]


@dataclass(frozen=True)
class _Entry:
    state: State
    built_at: float
    body: bytes


class PageCache:
    """Rendered pages by name, each valid while the store is as it was when it was built."""

    def __init__(
        self,
        store: Path,
        *,
        max_age_s: float = MAX_AGE_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.max_age_s = max_age_s
        self.clock = clock
        self._pages: dict[str, _Entry] = {}
        self._lock = threading.Lock()

    def get(self, name: str, build: Callable[[], bytes]) -> bytes:
        """The page `name`, built by `build` unless a copy for the store as it is now is kept."""
        state = self.state()
        with self._lock:
            kept = self._pages.get(name)
        if kept and kept.state == state and self.clock() - kept.built_at < self.max_age_s:
            return kept.body
        body = build()
        with self._lock:
            self._pages[name] = _Entry(state, self.clock(), body)
        return body

    def state(self) -> State:
        """(modification time, size) of the store file and of its write-ahead log."""
        return tuple(_stat(path) for path in (self.store, Path(f"{self.store}.wal")))


def _stat(path: Path) -> tuple[int, int] | None:
    try:
        found = path.stat()
    except OSError:
        return None
    return found.st_mtime_ns, found.st_size
