"""The daemon's schedule as data: each provider's job, its backoff, where it starts, and the
implicit stale-data rules.

Pure functions over the store's run history (`storage.runs.History`), apart from the scheduler
itself (`tracker.daemon.service`), so the schedule a config makes can be checked without
waiting on real time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from alerts.rules import Filters, Rule
from storage.runs import History
from tracker.config import Config, ProviderConfig

STALE_RULE_PREFIX = "stale:"


@dataclass(frozen=True)
class Start:
    """Where a provider's job starts: its interval, its failures so far, its first run."""

    current_interval_s: int
    failures: int
    first_run: datetime


def backoff_interval(interval_s: int, failures: int, max_backoff_s: int) -> int:
    """The interval after `failures` failed runs in a row: normal after one (a blip), then
    doubling, capped at `max_backoff_s` (and never shorter than the normal interval)."""
    if failures < 2:
        return interval_s
    return max(interval_s, min(interval_s << (failures - 1), max_backoff_s))


def first_run(now: datetime, history: History, interval_s: int) -> datetime:
    """When a provider first runs after a start: now, unless its newest run was a success that
    ended less than an interval ago (a restart does not collect everything again at once). A
    provider whose last run failed or was skipped, or that never ran, is tried at once: a failed
    `collect` before the start is no reason to wait."""
    if history.last_status != "ok" or history.last_ok_end is None:
        return now
    due = history.last_ok_end + timedelta(seconds=interval_s)
    return min(max(due, now), now + timedelta(seconds=interval_s))


def start(now: datetime, history: History, interval_s: int) -> Start:
    """A provider's job at a daemon's start: its normal interval and a first run by
    `first_run`. The failures in a row the store counted are kept, so the backoff grows at
    once if that first run fails too (`backoff_interval`), and only then."""
    return Start(interval_s, history.failures, first_run(now, history, interval_s))


def stale_rules(config: Config) -> tuple[Rule, ...]:
    """One `stale_data` rule per enabled provider that no configured stale rule covers: a
    provider that keeps failing raises one alert (edge-triggered, like any rule), and it
    re-arms once a collection succeeds. Stale means what `latest_prices.stale` means: no good
    collection for twice the provider's interval."""
    if not config.daemon.stale_alert:
        return ()
    configured = [r for r in config.alerts.rules if r.kind == "stale_data"]
    names = {r.name for r in config.alerts.rules}
    default = tuple(c for c in config.alerts.channels if c != "console") or ("console",)
    return tuple(
        Rule(
            name=STALE_RULE_PREFIX + p.name,
            kind="stale_data",
            channels=default,
            filters=Filters(provider=(p.name,)),
            window_s=2 * p.interval_s,
        )
        for p in config.enabled()
        if not _covered(p, configured) and STALE_RULE_PREFIX + p.name not in names
    )


def _covered(provider: ProviderConfig, rules: Sequence[Rule]) -> bool:
    return any(not r.filters.provider or provider.name in r.filters.provider for r in rules)
