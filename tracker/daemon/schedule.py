"""The daemon's schedule as data: each provider's job, its backoff, where it starts, and the
implicit stale-data rules.

Pure functions and small queries, apart from the scheduler itself (`tracker.daemon.service`), so the
schedule a config makes can be checked without waiting on real time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from alerts.rules import Filters, Rule
from tracker.config import Config, ProviderConfig

STALE_RULE_PREFIX = "stale:"

# Per provider: failed runs since its last good one (skips do not count either way), and when
# its last run that was not a skip ended.
_HISTORY = """
WITH last_ok AS (
    SELECT provider, max(started_at) AS started,
           max(coalesce(finished_at, started_at)) AS ended
    FROM collection_runs WHERE status = 'ok' GROUP BY provider
)
SELECT r.provider,
       count(*) FILTER (WHERE r.status = 'failed'
                        AND r.started_at > coalesce(o.started, TIMESTAMPTZ '1970-01-01')),
       max(coalesce(r.finished_at, r.started_at)) FILTER (WHERE r.status <> 'skipped'),
       any_value(o.ended)
FROM collection_runs r LEFT JOIN last_ok o USING (provider)
GROUP BY r.provider
"""


@dataclass(frozen=True)
class History:
    """What the store says of a provider when the daemon starts."""

    failures: int = 0
    last_run_end: datetime | None = None
    last_ok_end: datetime | None = None


def backoff_interval(interval_s: int, failures: int, max_backoff_s: int) -> int:
    """The interval after `failures` failed runs in a row: normal after one (a blip), then
    doubling, capped at `max_backoff_s` (and never shorter than the normal interval)."""
    if failures < 2:
        return interval_s
    return max(interval_s, min(interval_s << (failures - 1), max_backoff_s))


def first_run(now: datetime, history: History, interval_s: int) -> datetime:
    """When a provider first runs after a start: now, unless its last run ended less than an
    interval ago (a restart does not collect everything again at once)."""
    if history.last_run_end is None:
        return now
    due = history.last_run_end + timedelta(seconds=interval_s)
    return min(max(due, now), now + timedelta(seconds=interval_s))


def read_history(con: Any) -> dict[str, History]:
    """Per provider, from `collection_runs` on an open connection."""
    rows = con.execute(_HISTORY).fetchall()
    return {str(p): History(int(failures), end, ok) for p, failures, end, ok in rows}


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
