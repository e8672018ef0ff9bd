"""`gpu-tracker status`: per provider, the last run and its result, how old the data is, and
when the daemon runs it next.

Runs come from the store (`storage.runs.latest`, read-only, briefly); the schedule from the
file the daemon keeps beside the store (`tracker.running.state`), so status never waits on the
daemon.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from datetime import datetime
from typing import Any

from storage import runs
from tracker.config import Config
from tracker.running.state import DaemonState, daemon_running, read_state


@dataclass(frozen=True)
class ProviderStatus:
    provider: str
    enabled: bool
    last_run: datetime | None = None
    result: str | None = None  # ok | failed | skipped
    records: int | None = None
    changes: int | None = None
    error: str | None = None
    last_ok: datetime | None = None
    interval_s: int | None = None
    current_interval_s: int | None = None  # longer than interval_s while backing off
    failures: int = 0
    next_run: datetime | None = None
    running_since: datetime | None = None

    def age_s(self, now: datetime) -> float | None:
        """How old the provider's newest good data is."""
        return None if self.last_ok is None else (now - self.last_ok).total_seconds()

    def as_json(self, now: datetime) -> dict[str, Any]:
        row = {k: v.isoformat() if isinstance(v, datetime) else v for k, v in asdict(self).items()}
        row["age_s"] = self.age_s(now)
        return row


@dataclass(frozen=True)
class Status:
    running: bool  # a daemon holds the store's lock
    daemon: DaemonState | None  # its schedule, when one runs and its file can be read
    providers: list[ProviderStatus]


def gather(config: Config, last: dict[str, runs.LastRun] | None = None) -> Status:
    """Every provider that is enabled or has ever run, with the daemon's schedule if it runs;
    `last`: the runs when the caller read them already (the dashboard, on its own connection)."""
    if last is None:
        last = runs.latest(config.store_path, timeout_s=config.store.query_timeout_s)
    running = daemon_running(config.store_path)
    state = read_state(config.store_path) if running else None
    names = [n for n, p in config.providers.items() if p.enabled or n in last]
    rows = [_row(config, name, last.get(name), state) for name in names]
    return Status(running, state, rows)


def _row(
    config: Config, name: str, run: runs.LastRun | None, state: DaemonState | None
) -> ProviderStatus:
    provider = config.providers[name]
    row = ProviderStatus(name, provider.enabled, interval_s=provider.interval_s)
    if run is not None:
        row = replace(
            row,
            last_run=run.ended,
            result=run.status,
            records=run.records,
            changes=run.changed,
            error=run.error,
            last_ok=run.last_ok,
        )
    schedule = state.providers.get(name) if state else None
    if schedule is None:
        return row
    return replace(
        row,
        current_interval_s=schedule.current_interval_s,
        failures=schedule.failures,
        next_run=schedule.next_run,
        running_since=schedule.running_since,
    )
