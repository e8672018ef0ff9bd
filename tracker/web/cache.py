"""The Now panel kept, rendered, and rebuilt off the request path when the store changes:
reading every current offer out of a long history costs far more than sending the page again,
and the store changes only when a collection writes (hourly, say), while people reload the
page far more often.

The store's state is its file's and its write-ahead log's modification time and size, read
before the page is built: a write that lands while it is built makes the page built again. A
watcher thread compares that state every `poll_s` seconds (0.25: a `stat`, the store is not opened)
and rebuilds a changed page in the background, so the first load after a collection usually
finds it ready. A request that still finds the page out of date (the store changed since, or
the page is older than `max_age_s`: whether an offer is stale depends on the clock too) starts
the rebuild if none runs and waits for it at most `wait_s`; past that it gets the page of the
last completed build, which says when it read the store. A user therefore never sees data
older than the last completed rebuild, and the page says how old it is.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from storage.reads.sandbox import interrupt_all

MAX_AGE_S = 60.0
WAIT_S = 0.1  # a request's wait for a running rebuild, within the page-load budget
POLL_S = 0.25  # a stat of two files, four times a second

State = tuple[tuple[int, int] | None, ...]

log = logging.getLogger("tracker.web")


@dataclass(frozen=True)
class _Entry:
    state: State
    built_at: float
    body: bytes


class PageCache:
    """Rendered pages by name, each rebuilt when the store changes (see the module docstring).
    `start()` starts the watcher, `close()` stops it."""

    def __init__(
        self,
        store: Path,
        *,
        max_age_s: float = MAX_AGE_S,
        wait_s: float = WAIT_S,
        poll_s: float = POLL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.max_age_s = max_age_s
        self.wait_s = wait_s
        self.poll_s = poll_s
        self.clock = clock
        self._pages: dict[str, _Entry] = {}
        self._builders: dict[str, Callable[[], bytes]] = {}
        self._building: dict[str, threading.Event] = {}
        self._lock = threading.Lock()
        self._first = threading.Lock()  # one first build at a time, not one per request
        self._stop = threading.Event()
        self._watcher: threading.Thread | None = None

    def get(self, name: str, build: Callable[[], bytes]) -> bytes:
        """The page `name`: the kept copy when it is current; else the rebuild's, waited for at
        most `wait_s`, or the last completed build's. The first build is waited for whole
        (there is nothing else to show), and its errors are the caller's."""
        with self._lock:
            self._builders[name] = build
            kept = self._pages.get(name)
        if kept is None:
            with self._first:
                if (kept := self._pages.get(name)) is None:
                    return self._build(name, build).body
        if self._current(kept):
            return kept.body
        self._refresh(name).wait(self.wait_s)
        with self._lock:
            return self._pages[name].body

    def ready(self, name: str) -> bool:
        """Whether a request for `name` now would be answered at once with current data."""
        with self._lock:
            kept = self._pages.get(name)
        return kept is not None and self._current(kept)

    def state(self) -> State:
        """(modification time, size) of the store file and of its write-ahead log."""
        return tuple(_stat(path) for path in (self.store, Path(f"{self.store}.wal")))

    def start(self) -> None:
        """Watch the store on a thread of its own, rebuilding changed pages in the background."""
        if self._watcher is None:
            self._watcher = threading.Thread(target=self._watch, name="web-cache", daemon=True)
            self._watcher.start()

    def close(self, grace_s: float = 5.0) -> None:
        """Stop watching; a rebuild still running gets `grace_s`, then its read is interrupted
        (the process may be about to exit: no thread may be left inside DuckDB)."""
        self._stop.set()
        if self._watcher is not None:
            self._watcher.join()
        with self._lock:
            running = list(self._building.values())
        deadline = time.monotonic() + grace_s
        for done in running:
            done.wait(max(0.0, deadline - time.monotonic()))
            while not done.wait(0.05):
                interrupt_all()

    def _current(self, entry: _Entry) -> bool:
        fresh = self.clock() - entry.built_at < self.max_age_s
        return fresh and entry.state == self.state()

    def _watch(self) -> None:
        while not self._stop.wait(self.poll_s):
            state = self.state()
            with self._lock:
                changed = [n for n, e in self._pages.items() if e.state != state]
            for name in changed:
                self._refresh(name)

    def _refresh(self, name: str) -> threading.Event:
        """The event of the running rebuild of `name`, started here if none runs."""
        with self._lock:
            running = self._building.get(name)
            if running is not None:
                return running
            if self._stop.is_set():  # closing: no new read starts
                stopped = threading.Event()
                stopped.set()
                return stopped
            done = self._building[name] = threading.Event()
            build = self._builders[name]
        threading.Thread(
            target=self._rebuild, args=(name, build, done), name="web-rebuild", daemon=True
        ).start()
        return done

    def _rebuild(self, name: str, build: Callable[[], bytes], done: threading.Event) -> None:
        try:
            self._build(name, build)
        except Exception:
            # The last completed page stays served (it says when it read the store); the next
            # change or request tries again.
            if self._stop.is_set():
                log.info("web: rebuilding %s stopped with the server", name)
            else:
                log.exception("web: rebuilding %s failed", name)
        finally:
            with self._lock:
                del self._building[name]
            done.set()

    def _build(self, name: str, build: Callable[[], bytes]) -> _Entry:
        state = self.state()  # before the read: a write during it leaves the page out of date
        entry = _Entry(state, self.clock(), build())
        with self._lock:
            self._pages[name] = entry
        return entry


def _stat(path: Path) -> tuple[int, int] | None:
    try:
        found = path.stat()
    except OSError:
        return None
    return found.st_mtime_ns, found.st_size
