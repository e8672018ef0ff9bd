"""The daemon's review job: the half-yearly review sent to the review channels once per
scheduled date, caught up after a stop, tried again until it is recorded.

Nothing here may let an exception escape into the scheduler: a review that breaks is logged and
tried again.
"""

from __future__ import annotations

import logging
import threading
from datetime import UTC, datetime, timedelta

from apscheduler.schedulers.base import BaseScheduler

from collectors.common import CollectorError, StoreError
from tracker.daemon.jobs import Shared

log = logging.getLogger("tracker.daemon")


class ReviewJob:
    """The half-yearly review, sent to the review channels once per scheduled date. A review
    that could not be built or recorded (the store busy at that moment, say) is tried again
    until it is, or until its catch-up window has passed."""

    def __init__(self, shared: Shared) -> None:
        self.shared = shared
        self.__name__ = "review"

    def __call__(self) -> None:
        now = datetime.now(UTC)
        self.send(self._due(now) or now, now)

    def catch_up(self, now: datetime, grace: timedelta) -> None:
        """Send the last scheduled review if the daemon was down when it was due (sending
        is idempotent per scheduled date, so one already sent is not sent again)."""
        due = self._due(now)
        if due is not None and now - due <= grace:
            self.send(due, now)

    def send(self, due: datetime, now: datetime) -> None:
        with self.shared.tracking("review"):
            recorded = self._send(due, now)
        if not recorded:
            self.shared.retry_review(due)

    def _due(self, now: datetime) -> datetime | None:
        from tracker.review import build as review

        return review.last_due(self.shared.config.review, now)

    def _send(self, due: datetime, now: datetime) -> bool:
        from tracker.review import build as review

        shared = self.shared
        try:
            with shared.alerts_lock:
                report = review.send(
                    shared.config,
                    shared.env,
                    shared.console,
                    now=now,
                    period_subject=due.isoformat(),
                    store_lock=shared.store_lock,
                )
        except (StoreError, CollectorError) as exc:
            log.error("review of %s: not recorded yet, will try again: %s", due.date(), exc)
            return False
        except Exception:
            log.exception("review of %s: the job broke", due.date())
            return False
        failed = [d for d in report.deliveries if d.error]
        log.log(
            logging.WARNING if failed else logging.INFO,
            "review of %s: %d messages due, %d failed (failed ones are retried like alerts)",
            due.date(),
            len(report.due),
            len(failed),
            extra={"review": due.isoformat()},
        )
        return True


# A review missed while the daemon was down is sent when it starts, if it is this recent.
REVIEW_CATCH_UP = timedelta(days=7)
REVIEW_RETRY = timedelta(minutes=10)


def retry_later(
    scheduler: BaseScheduler, shared: Shared, due: datetime, *, stopping: threading.Event
) -> None:
    """Try a review that could not be recorded again in a while, within its window."""
    now = datetime.now(UTC)
    if stopping.is_set():
        log.warning("review of %s: not recorded; the next start tries again", due.date())
        return
    if now - due > REVIEW_CATCH_UP:
        log.error("review of %s: given up (its catch-up window has passed)", due.date())
        return
    job = ReviewJob(shared)
    try:
        scheduler.add_job(
            lambda: job.send(due, datetime.now(UTC)),
            "date",
            run_date=now + REVIEW_RETRY,
            id="review-retry",
            name=f"review of {due.date()}, again",
            replace_existing=True,
        )
    except Exception as exc:  # the scheduler is shutting down
        log.debug("review: not rescheduled: %s", exc)
