"""The daemon's schedule built from config, inspected without waiting on real time: one job per
enabled provider with its interval, jitter, coalescing, one instance, misfire grace; backoff
and first runs from the store's history; the implicit stale-data rules."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from collectors import REGISTRY
from collectors.base import PriceRecord
from collectors.common import ConfigError
from storage.store import Store
from tests.alerts.support import offer
from tracker.collecting.pipeline import Outcome
from tracker.config import Config, from_dict
from tracker.daemon import schedule
from tracker.daemon.jobs import ProviderJob
from tracker.daemon.service import REVIEW_JOB, Daemon

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def _config(tmp_path: Path, **tables: Any) -> Config:
    # Every other registered provider off, so a provider added later does not change the plan.
    providers: dict[str, Any] = {name: {"enabled": False} for name in REGISTRY}
    providers |= {
        "aws": {"interval": "15m"},
        "azure": {"interval": "6h"},
        "lambdalabs": {"interval": "30s"},
    }
    data = {"storage": {"path": str(tmp_path / "p.duckdb")}, "providers": providers, **tables}
    return from_dict(data, source=None)


def _jobs(daemon: Daemon) -> dict[str, Any]:
    daemon.scheduler.start(paused=True)  # computes next run times; runs nothing
    try:
        return {job.id: job for job in daemon.scheduler.get_jobs()}
    finally:
        daemon.scheduler.shutdown(wait=False)


def test_one_job_per_enabled_provider_with_its_interval(tmp_path: Path) -> None:
    daemon = Daemon(_config(tmp_path, daemon={"misfire_grace": "10m"}), {})
    daemon.plan(NOW)
    jobs = _jobs(daemon)
    assert set(jobs) == {"aws", "azure", "lambdalabs", REVIEW_JOB, "compact"}
    # The history's compaction is checked an hour after start, then daily.
    assert jobs["compact"].trigger.interval == timedelta(days=1)
    assert jobs["compact"].next_run_time == NOW + timedelta(hours=1)
    aws = jobs["aws"]
    assert aws.trigger.interval == timedelta(minutes=15)
    assert aws.trigger.jitter == 90  # 10 % of the interval by default
    assert jobs["azure"].trigger.jitter == 300  # at most five minutes
    assert jobs["lambdalabs"].trigger.interval == timedelta(seconds=30)
    assert jobs["lambdalabs"].trigger.jitter == 3
    for name in ("aws", "azure", "lambdalabs"):
        job = jobs[name]
        assert (job.coalesce, job.max_instances, job.misfire_grace_time) == (True, 1, 600)
        assert job.next_run_time == NOW  # an empty store: everything runs at once


def test_jitter_can_be_set_or_turned_off(tmp_path: Path) -> None:
    daemon = Daemon(_config(tmp_path, daemon={"jitter": "0s"}), {})
    daemon.plan(NOW)
    assert {j.trigger.jitter for j in _jobs(daemon).values() if j.id != REVIEW_JOB} == {None}


def test_review_job_defaults_to_1_january_and_1_july(tmp_path: Path) -> None:
    daemon = Daemon(_config(tmp_path), {})
    daemon.plan(NOW)
    review = _jobs(daemon)[REVIEW_JOB]
    assert review.next_run_time == datetime(2027, 1, 1, 9, 0, tzinfo=UTC)
    fields = {f.name: str(f) for f in review.trigger.fields}
    assert (fields["month"], fields["day"], fields["hour"]) == ("1,7", "1", "9")


def test_review_schedule_is_configurable_and_can_be_off(tmp_path: Path) -> None:
    config = _config(tmp_path, review={"cron": "30 8 1 */3 *", "timezone": "Europe/Berlin"})
    daemon = Daemon(config, {})
    daemon.plan(NOW)
    review = _jobs(daemon)[REVIEW_JOB]
    assert review.next_run_time == datetime(2027, 1, 1, 7, 30, tzinfo=UTC)  # 08:30 in Berlin
    off = Daemon(_config(tmp_path, review={"enabled": False}), {})
    off.plan(NOW)
    assert REVIEW_JOB not in _jobs(off)


def test_a_restart_resumes_from_the_history_not_all_at_once(tmp_path: Path) -> None:
    config = _config(tmp_path)
    store = Store(config.store_path)
    # The run's end is its commit time (real time): the restart is planned five minutes later.
    real_now = datetime.now(UTC)
    store.write_run("aws", [_record()], started_at=real_now, observed_at=real_now, regions=None)
    restart = real_now + timedelta(minutes=5)
    daemon = Daemon(config, {})
    daemon.plan(restart)
    jobs = _jobs(daemon)
    # aws ran five minutes before the restart: next an interval (15 min) after that run;
    # azure never ran: at once.
    assert abs(jobs["aws"].next_run_time - (restart + timedelta(minutes=10))) < timedelta(
        seconds=30
    )
    assert jobs["azure"].next_run_time == restart


def test_a_provider_whose_collect_failed_is_tried_at_once(tmp_path: Path) -> None:
    # The report: a `collect` that failed, then a daemon started, and azure (every 6 h) waited
    # its whole interval before it was tried again.
    config = _config(tmp_path)
    store = Store(config.store_path)
    real_now = datetime.now(UTC)  # a run's end is its commit time (real time)
    store.write_run("azure", [_record()], started_at=real_now, observed_at=real_now, regions=None)
    failed_at = real_now + timedelta(seconds=1)
    store.record_run("azure", "failed", started_at=failed_at, error="connection refused")
    restart = real_now + timedelta(minutes=5)
    daemon = Daemon(config, {})
    daemon.plan(restart)
    jobs = _jobs(daemon)
    assert jobs["azure"].next_run_time == restart
    # No backoff before it fails again.
    assert jobs["azure"].trigger.interval == timedelta(hours=6)
    assert daemon.shared.state.providers["azure"].failures == 1


@pytest.mark.parametrize(("newest", "waits"), [("ok", True), ("failed", False), ("skipped", False)])
def test_only_a_recent_success_makes_a_provider_wait(newest: str, waits: bool) -> None:
    ended = NOW - timedelta(minutes=5)
    ok = ended if newest == "ok" else ended - timedelta(minutes=1)
    history = schedule.History(0, ended, ok, newest)
    first = schedule.first_run(NOW, history, 900)
    assert first == (NOW + timedelta(minutes=10) if waits else NOW)


def test_a_provider_that_kept_failing_backs_off_only_when_it_fails_again(tmp_path: Path) -> None:
    config = _config(tmp_path, daemon={"max_backoff": "1h"})
    store = Store(config.store_path)
    store.write_run("aws", [_record()], started_at=NOW, observed_at=NOW, regions=None)
    for minutes in (15, 30, 45):
        store.record_run(
            "aws", "failed", started_at=NOW + timedelta(minutes=minutes), error="HTTP 503"
        )
    store.record_run("aws", "skipped", started_at=NOW + timedelta(hours=1), error="no key")
    daemon = Daemon(config, {})
    restart = NOW + timedelta(hours=2)
    daemon.plan(restart)
    entry = daemon.shared.state.providers["aws"]
    assert entry.failures == 3  # the skip neither counts nor clears
    assert entry.current_interval_s == 900  # tried at once, on its normal interval
    daemon.scheduler.start(paused=True)
    try:
        assert daemon.scheduler.get_job("aws").next_run_time == restart
        aws = next(p for p in config.enabled() if p.name == "aws")
        job = ProviderJob(aws, daemon.shared)
        said = job._backoff(Outcome("aws", status="failed", error="HTTP 503"))
        # The fourth failure in a row: 15 min x 8, capped at max_backoff 1h.
        assert (entry.failures, entry.current_interval_s) == (4, 3600)
        assert said == "4 failures in a row: backing off to every 1h"
        assert daemon.scheduler.get_job("aws").trigger.interval == timedelta(hours=1)
        assert job._backoff(Outcome("aws")) == "back to every 15m"
    finally:
        daemon.scheduler.shutdown(wait=False)


@pytest.mark.parametrize(
    ("failures", "expected"),
    [(0, 900), (1, 900), (2, 1800), (3, 3600), (4, 7200), (5, 14400), (6, 21600), (30, 21600)],
)
def test_backoff_doubles_after_the_second_failure_up_to_the_cap(
    failures: int, expected: int
) -> None:
    assert schedule.backoff_interval(900, failures, 6 * 3600) == expected


def test_backoff_never_shortens_a_long_interval() -> None:
    assert schedule.backoff_interval(12 * 3600, 5, 6 * 3600) == 12 * 3600


def test_a_stale_rule_per_provider_unless_configured(tmp_path: Path) -> None:
    config = _config(tmp_path)
    rules = {r.name: r for r in schedule.stale_rules(config)}
    assert set(rules) == {"stale:aws", "stale:azure", "stale:lambdalabs"}
    assert rules["stale:aws"].window_s == 2 * 900  # what latest_prices.stale means
    assert rules["stale:aws"].filters.provider == ("aws",)
    assert rules["stale:aws"].channels == ("console",)  # no other channel configured

    own = {
        "rules": [{"name": "aws-stale", "kind": "stale_data", "provider": "aws", "window": "2h"}]
    }
    names = {r.name for r in schedule.stale_rules(_config(tmp_path, alerts=own))}
    assert names == {"stale:azure", "stale:lambdalabs"}
    everyone = {"rules": [{"name": "any-stale", "kind": "stale_data", "window": "12h"}]}
    assert schedule.stale_rules(_config(tmp_path, alerts=everyone)) == ()
    assert schedule.stale_rules(_config(tmp_path, daemon={"stale_alert": False})) == ()


def test_first_run_is_capped_at_one_interval_from_now() -> None:
    later = NOW + timedelta(days=3)
    future = schedule.History(0, later, later, "ok")  # a clock that jumped back
    assert schedule.first_run(NOW, future, 600) == NOW + timedelta(seconds=600)


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"daemon": {"jitter": "soon"}}, "daemon.jitter"),
        ({"daemon": {"log_format": "xml"}}, "daemon.log_format"),
        ({"daemon": {"stale_alert": "yes"}}, "daemon.stale_alert"),
        ({"review": {"cron": "0 9 1 13 *"}}, "review.cron"),
        ({"review": {"since": "6 months"}}, "review.since"),
        ({"metrics": {"listen": "127.0.0.1"}}, "metrics.listen"),
        ({"metrics": {"port": 9108}}, "metrics.port"),
    ],
)
def test_bad_daemon_settings_name_the_key(
    tmp_path: Path, table: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        _config(tmp_path, **table)


def _record() -> PriceRecord:
    return offer("21.957642")  # p4d.24xlarge on-demand, us-east-1


def test_a_collection_may_take_twice_its_interval_at_least_half_an_hour(tmp_path: Path) -> None:
    config = _config(tmp_path)
    assert config.daemon.timeout_for(900) == 1800  # the floor
    assert config.daemon.timeout_for(6 * 3600) == 12 * 3600
    assert _config(tmp_path, daemon={"job_timeout": "5m"}).daemon.timeout_for(6 * 3600) == 300
