"""What the store says of each provider's runs, on a real file: the history a daemon starts
from (failures in a row, skips neither counted nor clearing, the newest run's status) and the
newest run `status` shows."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from collectors.common import StoreError
from storage import runs
from storage.connection import connect
from storage.store import Store
from tests.alerts.support import offer

T0 = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)
M = timedelta(minutes=1)


@pytest.fixture
def store(tmp_path: Path) -> Store:
    store = Store(tmp_path / "p.duckdb")
    store.write_run("aws", [offer("21.957642")], started_at=T0, observed_at=T0, regions=None)
    for minutes in (15, 30):
        store.record_run("aws", "failed", started_at=T0 + minutes * M, error="HTTP 503")
    store.record_run("aws", "skipped", started_at=T0 + 45 * M, error="no key")
    store.record_run("azure", "failed", started_at=T0, error="timed out")
    return store


def test_history_counts_failures_since_the_last_success(store: Store) -> None:
    lock = threading.Lock()
    got = runs.history(store.path, lock=lock)
    assert not lock.locked()
    aws = got["aws"]
    assert (aws.failures, aws.last_status) == (2, "skipped")  # the skip neither counts nor clears
    assert aws.last_run_end is not None and aws.last_ok_end is not None
    assert aws.last_ok_end <= aws.last_run_end  # the failures ended after the success
    azure = got["azure"]
    assert (azure.failures, azure.last_status, azure.last_ok_end) == (1, "failed", None)


def test_a_success_clears_the_count(store: Store) -> None:
    later = T0 + 2 * timedelta(hours=1)
    store.write_run("aws", [offer("21.957642")], started_at=later, observed_at=later, regions=None)
    aws = runs.history(store.path)["aws"]
    assert (aws.failures, aws.last_status) == (0, "ok")


def test_latest_is_each_providers_newest_run(store: Store) -> None:
    got = runs.latest(store.path)
    assert set(got) == {"aws", "azure"}
    aws = got["aws"]
    assert (aws.status, aws.records, aws.changed, aws.error) == ("skipped", 0, 0, "no key")
    assert aws.last_ok is not None
    assert (got["azure"].status, got["azure"].error, got["azure"].last_ok) == (
        "failed",
        "timed out",
        None,
    )


def test_latest_without_a_store_is_empty_and_creates_none(tmp_path: Path) -> None:
    assert runs.latest(tmp_path / "none.duckdb") == {}
    assert not (tmp_path / "none.duckdb").exists()


def test_an_unreadable_history_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "p.duckdb"
    Store(path).migrate()
    with connect(path, read_only=False) as con:
        con.execute("ALTER TABLE runs RENAME COLUMN status TO state")  # a damaged store
    with pytest.raises(StoreError, match="cannot read collection_runs"):
        runs.history(path)
    with pytest.raises(StoreError, match="cannot read collection_runs"):
        runs.latest(path)


def test_a_store_that_cannot_be_migrated_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "p.duckdb"
    with connect(path, read_only=False) as con:
        con.execute("CREATE TABLE runs (x INTEGER)")  # not ours: migration 1 cannot create it
    with pytest.raises(StoreError, match=r"cannot bring the store .* up to date"):
        runs.history(path)
