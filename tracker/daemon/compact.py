"""The daemon's compaction of the history (`storage.writes.compact`): once a day, and only when
the open intervals have spread over more than `SPREAD_OVER` row groups since the last one (at an
hourly change rate of a few thousand intervals, every couple of weeks). It holds the store like
a collection, which waits for it (`[storage] write_wait`); at 25 million intervals it takes
about a minute (docs/performance.md, "Compaction").
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from collectors.common import StoreError

if TYPE_CHECKING:
    from tracker.daemon.jobs import Shared

log = logging.getLogger("tracker.daemon")
JOB_ID = "compact"
EVERY_S = 86_400
SPREAD_OVER = 16  # row groups holding an open interval: reading 16 costs a few tens of ms


class CompactJob:
    """Compact the history when its open intervals have spread (checked once a day)."""

    def __init__(self, shared: Shared) -> None:
        self.shared = shared
        self.__name__ = JOB_ID

    def __call__(self) -> None:
        with self.shared.tracking(JOB_ID), self.shared.store_lock:
            try:
                done = self.shared.store.compact(spread_over=SPREAD_OVER)
            except StoreError as exc:
                log.error("compact: %s", exc, extra={"compact": "failed"})
                return
            except Exception:  # never into the scheduler: the next check must happen
                log.exception("compact: the job broke")
                return
        if done is not None:
            log.info(
                "compacted the history: %s intervals; the open ones in %d of %d row groups "
                "before, %d now (%.1f s)",
                f"{done.intervals:,}",
                done.spread_before,
                done.groups,
                done.spread_after,
                done.seconds,
                extra={"compact": "ok"},
            )
