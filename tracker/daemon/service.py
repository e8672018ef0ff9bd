"""`gpu-tracker daemon`: APScheduler 3.x in the foreground, one job per enabled provider.

Each job collects its provider, stores the prices, evaluates the alert rules and delivers what
is due, then logs one line. All DuckDB sessions of the process take turns on one lock and each
is short (the store is closed between them), so `gpu-tracker sql` from another shell gets in
between. At start every provider is tried at once unless its newest run was a recent success;
a provider that keeps failing is asked less often (`schedule.backoff_interval`) and raises one
stale-data alert; a success brings its normal interval back.

Stopping (SIGTERM, SIGINT, SIGHUP): no new job starts; jobs in flight get `daemon.shutdown_grace` to
finish; collections still fetching then are abandoned (their child processes killed: they
never hold the store). Anything else still busy a moment later is left only once the store
lock is ours, so a run is stored whole or not at all. Exit status 0.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from types import FrameType
from typing import Any, Literal

from apscheduler.events import EVENT_JOB_MAX_INSTANCES, JobExecutionEvent
from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.interval import IntervalTrigger

from collectors.common import duration_words
from storage import runs
from storage.store import Store
from tracker.collecting.isolation import Isolated
from tracker.config import Config
from tracker.config.raw import raw_dir
from tracker.daemon import compact, memory, schedule
from tracker.daemon.export import JOB_ID as EXPORT_JOB
from tracker.daemon.export import ExportJob
from tracker.daemon.jobs import ProviderJob, Shared
from tracker.daemon.review import REVIEW_CATCH_UP, ReviewJob, retry_later
from tracker.running.state import DaemonLock, DaemonState, ProviderSchedule, write_state

log = logging.getLogger("tracker.daemon")
REVIEW_JOB = "review"
_LAST_MOMENT_S = 5.0


class Daemon:
    """The scheduler, its jobs and the process around them."""

    def __init__(
        self,
        config: Config,
        env: Mapping[str, str],
        metrics: Any = None,
        *,
        log_format: Literal["text", "json"] = "text",
        verbose: bool = False,
    ) -> None:
        self.config = config
        self.providers = config.enabled()
        self.stopping = threading.Event()
        self.hurry = threading.Event()  # a second signal: do not wait for jobs in flight
        abandon = threading.Event()
        wait_s = config.store.write_wait_s  # outlasts any reader's query ([storage] write_wait)
        self.shared = Shared(
            config=config,
            env=env,
            store=Store(
                config.store_path,
                lock_wait_s=wait_s,
                fx_rates=config.fx,
                gpu_facts=config.gpu_facts,
                limits=config.limits,
            ),
            rules=(*config.alerts.rules, *schedule.stale_rules(config)),
            metrics=metrics,
            state=DaemonState(os.getpid(), datetime.now(UTC)),
            reschedule=self._reschedule,
            publish=self._publish,
            retry_review=self._retry_review,
            fetcher=Isolated(
                abandon,
                timeouts={p.name: config.daemon.timeout_for(p.interval_s) for p in self.providers},
                log_format=log_format,
                verbose=verbose,
                raw=raw_dir(config.raw, config.store_path),  # kept by the child that fetched
            ),
            abandon=abandon,
        )
        self._state_lock = threading.Lock()
        self.has_history = False
        self.scheduler = BackgroundScheduler(
            executors={"default": ThreadPoolExecutor(len(self.providers) + 1)},
            job_defaults={
                "coalesce": True,  # runs missed while asleep: one catch-up, not a burst
                "max_instances": 1,
                "misfire_grace_time": config.daemon.misfire_grace_s,
            },
            timezone=UTC,
        )

    def plan(self, now: datetime | None = None) -> None:
        """Add every job, starting where the store's history says (the store is created and
        migrated here, so a broken store fails at start, not at the first job)."""
        now = now or datetime.now(UTC)
        history = self._history()
        # A first start has no prices to review: no catch-up then (it would be empty).
        self.has_history = any(h.last_ok_end is not None for h in history.values())
        for provider in self.providers:
            past = history.get(provider.name, runs.History())
            start = schedule.start(now, past, provider.interval_s)
            self.shared.state.providers[provider.name] = ProviderSchedule(
                provider.interval_s, start.current_interval_s, start.failures, start.first_run
            )
            if self.shared.metrics is not None:
                self.shared.metrics.seed(
                    provider.name,
                    last_run=past.last_run_end,
                    last_success=past.last_ok_end,
                    consecutive_failures=past.failures,
                    interval_s=provider.interval_s,
                )
            self.scheduler.add_job(
                ProviderJob(provider, self.shared),
                self._trigger(provider.interval_s, start.current_interval_s),
                id=provider.name,
                name=f"collect {provider.name}",
                next_run_time=start.first_run,
            )
        if self.config.review.enabled:
            self.scheduler.add_job(
                ReviewJob(self.shared),
                self.config.review.trigger(),
                id=REVIEW_JOB,
                name="half-yearly review",
                misfire_grace_time=int(REVIEW_CATCH_UP.total_seconds()),
            )
        # An hour after start (never in the way of the first collections), then once a day.
        self.scheduler.add_job(
            compact.CompactJob(self.shared), IntervalTrigger(seconds=compact.EVERY_S),
            id=compact.JOB_ID, name="compact the history when spread",
            next_run_time=now + timedelta(hours=1),
        )  # fmt: skip
        # The export runs at start (cheap when nothing changed), then every interval.
        if self.config.export.enabled:
            self.scheduler.add_job(
                ExportJob(self.shared),
                IntervalTrigger(seconds=self.config.export.interval_s),
                id=EXPORT_JOB,
                name=f"export to {self.config.export.to}",
                next_run_time=now,
            )

    def run(self, lock: DaemonLock | None = None, early: Sequence[int] = ()) -> int:
        """Hold the store's daemon lock (`lock`, when the caller took it before binding
        anything), run until a signal, stop cleanly, release the lock. Exit status. `early`:
        the signals `catch_stop_signals` caught before the daemon was built."""
        self._install_signals()  # first: a signal while starting still stops cleanly
        for signum in list(early):  # read after ours are in: none can slip between the two
            self.request_stop(signum)
        memory.limit_arenas()
        if lock is None:
            lock = DaemonLock(self.config.store_path)
            lock.acquire()
        try:
            self.plan()
            if self.stopping.is_set():
                log.info("daemon stopped before it started")
                return 0
            self._warn_short_intervals()
            self.scheduler.add_listener(self._skipped, EVENT_JOB_MAX_INSTANCES)
            self.scheduler.start()
            self._publish()
            self.shared.refresh_metrics()
            log.info(
                "daemon started: %s; store %s",
                ", ".join(self._describe(p.name) for p in self.providers),
                self.config.store_path,
            )
            self._catch_up_review()
            while not self.stopping.wait(1.0):
                pass
            return self._stop()
        finally:
            lock.release()

    def request_stop(self, signum: int = signal.SIGTERM, _frame: FrameType | None = None) -> None:
        if self.stopping.is_set():
            self.hurry.set()
        log.info("daemon: %s received, stopping", signal.Signals(signum).name)
        self.stopping.set()

    def _stop(self) -> int:
        self.scheduler.shutdown(wait=False)  # no new job starts; those in flight go on
        began = time.monotonic()
        if self.shared.wait_idle(self.config.daemon.shutdown_grace_s, self.hurry):
            log.info("daemon stopped")
            return 0
        # Collections still fetching are given up: their children are killed (they never
        # hold the store). A job inside a store session or a send gets a moment more.
        running = ", ".join(sorted(self.shared.running))
        waited = time.monotonic() - began
        self.shared.abandon.set()
        if self.shared.wait_idle(_LAST_MOMENT_S):
            log.warning(
                "daemon stopped; abandoned in flight after %.0f s: %s (nothing of it stored)",
                waited,
                running,
            )
            return 0
        # Still busy: exit without it, but never inside a store session: whoever writes holds
        # the lock, so once we have it no transaction is half done.
        self.shared.store_lock.acquire()
        log.warning("daemon stopped; left unfinished: %s", ", ".join(sorted(self.shared.running)))
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)  # worker threads would otherwise be joined: they may sit in an HTTP read

    def _history(self) -> dict[str, runs.History]:
        return runs.history(self.config.store_path, lock=self.shared.store_lock)

    def _trigger(self, interval_s: int, current_s: int) -> IntervalTrigger:
        return IntervalTrigger(
            seconds=current_s, jitter=self.config.daemon.jitter_for(interval_s) or None
        )

    def _reschedule(self, provider: str, current_s: int) -> None:
        """Called by a job whose interval changes (backoff, or back to normal)."""
        interval = self.shared.state.providers[provider].interval_s
        self.scheduler.reschedule_job(provider, trigger=self._trigger(interval, current_s))

    def _retry_review(self, due: datetime) -> None:
        retry_later(self.scheduler, self.shared, due, stopping=self.stopping)

    def _skipped(self, event: JobExecutionEvent) -> None:
        """A run came due while the last one still ran: it is dropped (the job runs again at
        its next time), and said so, since a collection longer than its interval is news."""
        since = self.shared.running.get(event.job_id)
        log.warning(
            "%s: still busy with the run started %s; this run is skipped",
            event.job_id,
            f"{since:%H:%M:%S} UTC" if since else "earlier",
        )

    def _publish(self) -> None:
        """The schedule file, with the scheduler's next run times."""
        with self._state_lock:
            state = self.shared.state
            for job in self.scheduler.get_jobs():
                entry = state.providers.get(job.id)
                next_run = getattr(job, "next_run_time", None)
                if entry is not None:
                    entry.next_run = next_run
                    entry.running_since = self.shared.running.get(job.id)
                elif job.id == REVIEW_JOB:
                    state.review_next = next_run
            try:
                write_state(self.config.store_path, state)
            except OSError as exc:
                log.warning("daemon: could not write the schedule file: %s", exc)

    def _catch_up_review(self) -> None:
        if not self.config.review.enabled or not self.has_history:
            return
        job = ReviewJob(self.shared)
        job.catch_up(datetime.now(UTC), REVIEW_CATCH_UP)

    def _install_signals(self) -> None:
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):  # SIGHUP: a stop too
            signal.signal(signum, self.request_stop)

    def _warn_short_intervals(self) -> None:
        for provider in self.providers:
            if provider.interval_s < 60:
                log.warning(
                    "%s: interval %d s is under a minute: fine for tests and local mirrors, "
                    "not for a real API (rate limits)",
                    provider.name,
                    provider.interval_s,
                )

    def _describe(self, name: str) -> str:
        entry = self.shared.state.providers[name]
        return f"{name} every {duration_words(entry.interval_s)}" + (
            f" (backed off to {duration_words(entry.current_interval_s)})"
            if entry.current_interval_s != entry.interval_s
            else ""
        )
