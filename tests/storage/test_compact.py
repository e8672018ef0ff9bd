"""Compaction (`storage.writes.compact`): the history laid out again changes nothing a reader or
a later write sees, and puts every open interval after every closed one, in as few row groups
as they fill."""

from __future__ import annotations

import logging
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
import pytest
from click.testing import CliRunner

from storage.query import query
from storage.store import Store
from storage.writes.compact import ROW_GROUP_ROWS
from tests.storage.test_fast_path import T0, H, _mixed_runs, history, offer, write
from tracker.cli import cli
from tracker.daemon import compact as compact_job

_CURRENT = "SELECT * EXCLUDE (stale) FROM latest_prices ORDER BY ALL"
_RUNS = (
    "SELECT * EXCLUDE (finished_at) FROM collection_runs ORDER BY run_id"  # finished: wall clock
)


def test_compacting_between_any_two_writes_changes_no_history(tmp_path: Path) -> None:
    # Every case of a write in each run (confirmed, changed, flipped, new, withdrawn and back,
    # spot history re-sent): the compacted store's next write must find its open offers.
    runs = _mixed_runs()
    kept, compacted = Store(tmp_path / "kept.duckdb"), Store(tmp_path / "compacted.duckdb")
    for n, run in enumerate(runs):
        changed = write(kept, run, T0 + n * H)
        assert write(compacted, run, T0 + n * H) == changed  # its open offers found again
        done = compacted.compact()
        assert done is not None and done.intervals == len(history(compacted))
        assert history(compacted) == history(kept)
        for sql in (_CURRENT, _RUNS):
            assert query(compacted.path, sql).rows == query(kept.path, sql).rows


def _spread_history(store: Store) -> None:
    """One collection, then more than a row group of closed intervals appended (another
    offer's long past), then a collection that changes two prices: the open intervals now lie
    in the first row group and in the last."""
    write(store, [offer(f"t{n}", "1") for n in range(20)], T0)
    with duckdb.connect(str(store.path)) as con:
        con.execute(
            f"""INSERT INTO price_intervals
            SELECT * EXCLUDE (i) REPLACE (offer_key || '#' || i AS offer_key,
                              valid_from - to_hours(i + 1) AS valid_from,
                              valid_from - to_hours(i) AS valid_to,
                              valid_from - to_hours(i) AS last_seen)
            FROM (SELECT * FROM price_intervals LIMIT 1), range({ROW_GROUP_ROWS + 1000}) r(i)"""
        )
    changed = [offer(f"t{n}", "2" if n < 2 else "1") for n in range(20)]
    write(store, changed, T0 + H)


def _layout(path: Path) -> tuple[int, int]:
    """(the last row of a closed interval, the first row of an open one)."""
    with duckdb.connect(str(path), read_only=True) as con:
        closed, opened = con.execute(
            "SELECT max(rowid) FILTER (WHERE valid_to IS NOT NULL),"
            " min(rowid) FILTER (WHERE valid_to IS NULL) FROM price_intervals"
        ).fetchall()[0]
    return int(closed), int(opened)


def _open_offers_in_step(path: Path) -> bool:
    """Whether the open intervals kept apart for the writes are exactly the history's, each
    naming its interval's row."""
    with duckdb.connect(str(path), read_only=True) as con:
        kept = con.execute("SELECT row, offer_key FROM open_offers ORDER BY row").fetchall()
        actual = con.execute(
            "SELECT rowid, offer_key FROM price_intervals WHERE valid_to IS NULL ORDER BY rowid"
        ).fetchall()
    return len(kept) == 20 and kept == actual


def test_the_open_intervals_come_after_every_closed_one(tmp_path: Path) -> None:
    store = Store(tmp_path / "prices.duckdb")
    _spread_history(store)
    before = (history(store), query(store.path, _CURRENT).rows)
    closed, opened = _layout(store.path)
    assert opened < closed  # spread: open intervals before closed ones

    assert store.compact(spread_over=2) is None  # not spread enough: nothing done
    assert _layout(store.path) == (closed, opened)

    done = store.compact()
    assert done is not None
    assert (done.spread_before, done.spread_after, done.groups) == (2, 1, 2)
    closed, opened = _layout(store.path)
    assert opened == closed + 1  # every closed interval first, then the 20 open ones
    assert (history(store), query(store.path, _CURRENT).rows) == before
    assert _open_offers_in_step(store.path)  # found again by the compaction, not the next write
    # The next collection finds its open offers again and changes only what changed.
    assert write(store, [offer(f"t{n}", "2" if n < 3 else "1") for n in range(20)], T0 + 2 * H)
    assert query(store.path, "SELECT count(*) FROM latest_prices").rows == [(20,)]


def test_compact_says_what_it_did_and_refuses_a_missing_store(tmp_path: Path) -> None:
    store = Store(tmp_path / "prices.duckdb")
    _spread_history(store)
    done = CliRunner().invoke(cli, ["--db", str(store.path), "compact"])
    assert done.exit_code == 0, done.output
    assert f"compacted {store.path}: " in done.output
    assert "the open ones in 2 of 2 row groups before, 1 now" in done.output
    missing = CliRunner().invoke(cli, ["--db", str(tmp_path / "none.duckdb"), "compact"])
    assert missing.exit_code == 2
    assert "nothing to compact" in missing.output


class _Shared:
    """What the daemon's job uses of the daemon's shared state."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.store_lock = threading.Lock()
        self.tracked: list[str] = []

    @contextmanager
    def tracking(self, name: str) -> Any:
        self.tracked.append(name)
        yield


def test_the_daemon_compacts_only_a_spread_history(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = Store(tmp_path / "prices.duckdb")
    _spread_history(store)
    shared = _Shared(store)
    job = compact_job.CompactJob(shared)  # type: ignore[arg-type]
    with caplog.at_level(logging.INFO, logger="tracker.daemon"):
        job()  # spread over 2 row groups: under the daemon's threshold
        assert not [r for r in caplog.records if "compacted" in r.getMessage()]
        monkeypatch.setattr(compact_job, "SPREAD_OVER", 1)
        job()
    assert shared.tracked == ["compact", "compact"]  # a stop waits for it
    said = [r.getMessage() for r in caplog.records if "compacted" in r.getMessage()]
    assert len(said) == 1 and "the open ones in 2 of 2 row groups before, 1 now" in said[0]
    assert not shared.store_lock.locked()


def test_an_empty_store_compacts_to_itself(tmp_path: Path) -> None:
    store = Store(tmp_path / "prices.duckdb")
    store.migrate()
    done = store.compact()
    assert done is not None and (done.intervals, done.spread_before, done.groups) == (0, 0, 0)
    said = CliRunner().invoke(cli, ["--db", str(store.path), "compact"])
    assert said.exit_code == 0 and "0 intervals" in said.output
