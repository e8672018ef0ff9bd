"""`gpu-tracker status`: per provider, the last run and its result, how old the data is, and
when the daemon runs it next.

Runs come from `collection_runs` (read-only, briefly); the schedule from the file the daemon
keeps beside the store (`tracker.daemon.state`), so status never waits on the daemon.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from datetime import datetime
from typing import Any

from storage.connection import connect
from tracker.config import Config
from tracker.daemon.state import DaemonState, daemon_running, read_state

# The newest run of each provider, and its newest good one.
_RUNS = """
WITH ranked AS (
    SELECT *, row_number() OVER (PARTITION BY provider ORDER BY started_at DESC, run_id DESC) AS n
    FROM collection_runs
)
SELECT r.provider, coalesce(r.finished_at, r.started_at), r.status, r.records, r.changed, r.error,
       (SELECT max(coalesce(finished_at, started_at)) FROM collection_runs o
        WHERE o.provider = r.provider AND o.status = 'ok')
FROM ranked r WHERE n = 1
"""


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


def gather(config: Config) -> Status:
    """Every provider that is enabled or has ever run, with the daemon's schedule if it runs."""
    runs = _runs(config)
    running = daemon_running(config.store_path)
    state = read_state(config.store_path) if running else None
    names = [n for n, p in config.providers.items() if p.enabled or n in runs]
    rows = [_row(config, name, runs.get(name), state) for name in names]
    return Status(running, state, rows)


def _row(config: Config, name: str, run: Any, state: DaemonState | None) -> ProviderStatus:
    provider = config.providers[name]
    row = ProviderStatus(name, provider.enabled, interval_s=provider.interval_s)
    if run is not None:
        last_run, result, records, changes, error, last_ok = run
        row = replace(
            row,
            last_run=last_run,
            result=result,
            records=records,
            changes=changes,
            error=error,
            last_ok=last_ok,
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


def _runs(config: Config) -> dict[str, tuple[Any, ...]]:
    if not config.store_path.exists():
        return {}
    with connect(config.store_path, read_only=True) as con:
        rows = con.execute(_RUNS).fetchall()
    return {str(row[0]): tuple(row[1:]) for row in rows}
