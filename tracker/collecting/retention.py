"""Raw answers past `[raw] keep`: dropped after each collection (docs/trust.md, "Raw answers").

A kept file goes once no run started within `keep` names it and it is itself older than
`keep`. The second rule is what makes it safe beside a collection running at the same time (the
daemon's other providers, a `collect` in another shell): that collection has written its
answers but not yet recorded its run, so no run names them yet; they are new, and stay.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

from collectors.common import StoreError
from storage.raw import SUFFIX, RawStore
from storage.runs import named_since
from storage.session import session
from tracker.config import Config

log = logging.getLogger("tracker.pipeline")


def drop_old(
    folder: Path, config: Config, lock: threading.Lock, now: datetime | None = None
) -> int:
    """Drop the kept answers in `folder` that no run of the store within `[raw] keep` of `now`
    (default: the clock) names and that are older than that themselves; how many. The store is
    read under `lock` (the process's write lock); a store that cannot be read now is left for
    the next collection, with a warning."""
    cutoff = (now or datetime.now(UTC)) - timedelta(seconds=config.raw.keep_s)
    old: dict[str, Path] = {}
    for path in RawStore(folder).files():
        with contextlib.suppress(FileNotFoundError):  # dropped by another process meanwhile
            if path.stat().st_mtime < cutoff.timestamp():
                old[path.name.removesuffix(SUFFIX)] = path
    if not old:  # the usual case: no query at all
        return 0
    try:
        with session(config.store_path, lock=lock, wait_s=config.store.write_wait_s) as con:
            named = named_since(con, cutoff, sorted(old))
    except StoreError as exc:
        log.warning("raw answers past [raw] keep not dropped this time: %s", exc)
        return 0
    dropped = 0
    for sha256, path in old.items():
        if sha256 not in named:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                dropped += 1
    if dropped:
        log.info("dropped %d raw answers no run within [raw] keep names", dropped)
    return dropped
