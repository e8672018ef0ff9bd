"""What the daemon's collection job does: collect one provider, store, alert, log one line.
`Shared` is what the jobs of one daemon have in common (locks, state, the store); the review's
job is in `tracker.daemon.review`, the export's in `tracker.daemon.export`.

Nothing here may let an exception escape into the scheduler: a job that breaks is logged and
the next one runs on time.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TextIO, cast

from alerts.rules import Rule
from collectors.common import StoreError, duration_words
from storage.connection import StoreDamaged
from storage.store import Store
from tracker import alerting
from tracker.collecting import pipeline
from tracker.collecting.isolation import Abandoned
from tracker.collecting.logs import LogStream
from tracker.collecting.pipeline import Fetcher
from tracker.config import Config, ProviderConfig
from tracker.daemon import memory, schedule
from tracker.running.state import DaemonState

log = logging.getLogger("tracker.daemon")


@dataclass
class Shared:
    """One daemon's jobs share these. Every DuckDB session of the process holds `store_lock`;
    alert runs take turns on `alerts_lock` (two evaluating at once would fire twice)."""

    config: Config
    env: Mapping[str, str]
    store: Store
    rules: tuple[Rule, ...]
    metrics: Any
    state: DaemonState
    reschedule: Callable[[str, int], None]  # a provider's interval changed (backoff)
    publish: Callable[[], None]  # write the schedule file
    retry_review: Callable[[datetime], None]  # a review (of this scheduled date) failed
    store_lock: threading.Lock = field(default_factory=threading.Lock)
    alerts_lock: threading.Lock = field(default_factory=threading.Lock)
    fetcher: Fetcher | None = None  # where fetch + parse run (the daemon: a child process)
    abandon: threading.Event = field(default_factory=threading.Event)  # kill the children
    running: dict[str, datetime] = field(default_factory=dict)
    ran: set[str] = field(default_factory=set)  # providers with a finished run since start
    started: float = field(default_factory=time.monotonic)
    # The console channel writes into the log (a JSON log stays one object per line).
    console: TextIO = field(
        default_factory=lambda: cast(TextIO, LogStream(logging.getLogger("alerts")))
    )
    _idle: threading.Condition = field(default_factory=threading.Condition)

    @contextmanager
    def tracking(self, name: str) -> Iterator[None]:
        """`name` counts as in flight while inside (what a stop waits for)."""
        with self._idle:
            self.running[name] = datetime.now(UTC)
        try:
            yield
        finally:
            with self._idle:
                self.running.pop(name, None)
                self._idle.notify_all()

    def wait_idle(self, timeout_s: float, hurry: threading.Event | None = None) -> bool:
        """Wait until no job is in flight (True), or the time is up or `hurry` is set."""
        deadline = time.monotonic() + timeout_s
        with self._idle:
            while self.running and not (hurry is not None and hurry.is_set()):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._idle.wait(min(left, 0.2))
            return not self.running

    def refresh_metrics(self) -> None:
        """Rebuild the price gauges from the store (current, fresh, in stock)."""
        if self.metrics is None:
            return
        try:
            # A short wait: a refresh the store was too busy for is made after the next job.
            self.metrics.refresh_prices_at(self.config.store_path, lock=self.store_lock, wait_s=5)
        except StoreError as exc:
            log.warning("metrics: prices not refreshed: %s", exc)

    def rules_now(self) -> tuple[Rule, ...]:
        """The rules to evaluate now. A stale-data rule waits until each provider it covers has
        had its first run since the daemon started (or the rule's window has passed): after a
        restart that followed a long stop, a provider whose first collection is still going
        is not stale, only late."""
        up = time.monotonic() - self.started
        enabled = {p.name for p in self.config.enabled()}
        return tuple(
            rule
            for rule in self.rules
            if rule.kind != "stale_data"
            or up > (rule.window_s or 0)
            or (set(rule.filters.provider) or enabled) & enabled <= self.ran
        )

    def alerts(self) -> str:
        """Evaluate every rule and deliver what is due; a few words on what happened."""
        if not self.rules and not alerting.wanted(self.config):
            return ""
        with self.alerts_lock:
            try:
                report = alerting.check(
                    self.config,
                    self.env,
                    self.console,
                    rules=self.rules_now(),
                    store_lock=self.store_lock,
                )
            except StoreError as exc:
                log.error("alerts: %s", exc)
                return "alerts not evaluated (see above)"
        if self.metrics is not None:
            self.metrics.delivered(report.deliveries)
        words = []
        if report.fired or report.due:
            words.append(f"alerts: {len(report.fired)} fired, {len(report.due)} due")
        words += [f"{d.channel} failed: {d.error}" for d in report.deliveries if d.error]
        if report.pending:
            words.append(f"{report.pending} alerts pending")
        return "; ".join(words)


class ProviderJob:
    """One provider's scheduled collection."""

    def __init__(self, provider: ProviderConfig, shared: Shared) -> None:
        self.provider = provider
        self.shared = shared
        # APScheduler names a job after its callable in its own log lines.
        self.__name__ = f"collect_{provider.name}"

    def __call__(self) -> None:
        name = self.provider.name
        with self.shared.tracking(name):
            self.shared.publish()  # status shows it collecting
            try:
                outcome = self._collect()
            except Abandoned:  # the daemon is stopping and says so
                return
            except StoreDamaged as exc:  # one line: the operator's to fix, not a bug
                log.error("%s: %s", name, exc)
                return
            except Exception:  # never into the scheduler: the next run must happen
                log.exception("%s: the job broke", name)
                return
            self.shared.ran.add(name)
            backoff = self._backoff(outcome)
            self.shared.publish()  # the next run as decided now (backed off or not)
            alerts = self.shared.alerts()
            self._metrics(outcome)
            self._log(outcome, backoff, alerts)
        self.shared.publish()
        memory.give_back()

    def _collect(self) -> pipeline.Outcome:
        shared = self.shared
        (outcome,) = pipeline.collect(
            shared.config,
            (self.provider.name,),
            env=shared.env,
            store=shared.store,
            write_lock=shared.store_lock,
            fetcher=shared.fetcher,
        )
        return outcome

    def _backoff(self, outcome: pipeline.Outcome) -> str:
        """Count the failure (or clear the count) and move the interval if it changes."""
        entry = self.shared.state.providers[self.provider.name]
        if outcome.status == "failed":
            entry.failures += 1
        elif outcome.status == "ok":
            entry.failures = 0
        wanted = schedule.backoff_interval(
            entry.interval_s, entry.failures, self.shared.config.daemon.max_backoff_s
        )
        if wanted == entry.current_interval_s:
            return ""
        entry.current_interval_s = wanted
        try:
            self.shared.reschedule(self.provider.name, wanted)
        except Exception as exc:  # the scheduler is shutting down
            log.debug("%s: not rescheduled: %s", self.provider.name, exc)
        every = duration_words(wanted)
        if wanted == entry.interval_s:
            return f"back to every {every}"
        return f"{entry.failures} failures in a row: backing off to every {every}"

    def _metrics(self, outcome: pipeline.Outcome) -> None:
        metrics = self.shared.metrics
        if metrics is None:
            return
        failures = self.shared.state.providers[self.provider.name].failures
        metrics.observe(outcome, datetime.now(UTC), consecutive_failures=failures)
        # After every job, whatever its result: prices gone stale drop out even while no
        # collection succeeds.
        self.shared.refresh_metrics()

    def _log(self, outcome: pipeline.Outcome, backoff: str, alerts: str) -> None:
        entry = self.shared.state.providers[self.provider.name]
        fields = {
            "provider": outcome.provider,
            "status": outcome.status,
            "records": outcome.records,
            "changes": outcome.changed,
            "duration_s": round(outcome.seconds, 3),
            "failures": entry.failures,
            "interval_s": entry.current_interval_s,
        }
        if entry.next_run is not None:
            fields["next_run"] = entry.next_run.isoformat()
        if outcome.status == "ok":
            text = (
                f"{outcome.provider} ok: {outcome.records} records, "
                f"{outcome.changed} changes in {outcome.seconds:.1f} s"
            )
            if outcome.gpus is not None and outcome.gpus.priced:  # the run summary's GPU types
                fields |= outcome.gpus.fields()
                text += f"; {outcome.gpus.words()}"
        else:
            text = f"{outcome.provider} {outcome.status} after {outcome.seconds:.1f} s"
        if outcome.error:
            fields["error"] = outcome.error
            text += f": {outcome.error}"
        for extra in (backoff, alerts):
            if extra:
                text += f"; {extra}"
        level = logging.WARNING if outcome.status in ("failed", "held") else logging.INFO
        log.log(level, text, extra=fields)
