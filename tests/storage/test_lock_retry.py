"""How often a connection retries a locked store: a reader looks again within a twentieth of a
second, so it gets in at the short gaps between a busy daemon's writes; a writer backs off to
a tenth of a second. The store's lock error is DuckDB's own; the clock is a fake, so nothing
sleeps."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import duckdb
import pytest

import storage.connection as connection
from collectors.common import StoreError
from storage.connection import connect

_LOCKED = (
    'IO Error: Could not set lock on file "{path}": Conflicting lock is held in '
    "/usr/bin/python3 (PID 4242). See also https://duckdb.org/docs/connect/concurrency"
)


class Clock:
    """A monotonic clock that moves only when the code under test sleeps."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.pauses: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.pauses.append(seconds)
        self.now += seconds


def locked_for(
    monkeypatch: pytest.MonkeyPatch, path: Path, refusals: int | None
) -> tuple[Clock, list[float]]:
    """The store at `path` refuses `refusals` opens (None: every one) with DuckDB's lock error;
    the fake clock, and the clock's time at each try."""
    clock = Clock()
    tries: list[float] = []
    real_connect = duckdb.connect

    def fake_connect(database: str, read_only: bool = False) -> Any:
        tries.append(clock.now)
        if refusals is None or len(tries) <= refusals:
            raise duckdb.IOException(_LOCKED.format(path=database))
        return real_connect(database, read_only=read_only)

    monkeypatch.setattr(
        connection, "time", SimpleNamespace(monotonic=clock.monotonic, sleep=clock.sleep)
    )
    monkeypatch.setattr(connection.duckdb, "connect", fake_connect)
    return clock, tries


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "prices.duckdb"
    duckdb.connect(str(path)).close()
    return path


def test_a_reader_looks_again_every_twentieth_of_a_second(
    monkeypatch: pytest.MonkeyPatch, store: Path
) -> None:
    clock, tries = locked_for(monkeypatch, store, refusals=None)
    with (
        pytest.raises(StoreError, match="locked by another process"),
        connect(store, read_only=True, wait_s=5),
    ):
        pass
    # 0.02, 0.04, then 0.05 until the 5 s are up: 0.06 + 99 x 0.05 = 5.01 s, 101 pauses
    assert clock.pauses[:3] == [0.02, 0.04, 0.05]
    assert set(clock.pauses[2:]) == {0.05}
    assert len(clock.pauses) == 101
    assert len(tries) == 102  # one more try after the last pause, then it gives up


def test_a_reader_gets_in_at_the_first_try_after_the_writer_lets_go(
    monkeypatch: pytest.MonkeyPatch, store: Path
) -> None:
    clock, tries = locked_for(monkeypatch, store, refusals=30)
    with connect(store, read_only=True, wait_s=5) as con:
        assert con.execute("SELECT 1").fetchall() == [(1,)]
    assert len(tries) == 31
    assert clock.now - 1000.0 == pytest.approx(0.02 + 0.04 + 28 * 0.05)


def test_a_writer_backs_off_to_a_tenth_of_a_second(
    monkeypatch: pytest.MonkeyPatch, store: Path
) -> None:
    clock, _ = locked_for(monkeypatch, store, refusals=None)
    with (
        pytest.raises(StoreError, match=r"\[storage\] write_wait"),
        connect(store, read_only=False, wait_s=5, wait_setting="[storage] write_wait"),
    ):
        pass
    # doubling from 0.02 s up to 0.1 s (readers stop coming while a writer waits, so it looks
    # often): 0.02 + 0.04 + 0.08 = 0.14, then 0.1 s pauses past 5 s
    assert clock.pauses[:4] == [0.02, 0.04, 0.08, 0.1]
    assert set(clock.pauses[3:]) == {0.1}
    assert len(clock.pauses) == 52  # 0.14 + 49 x 0.1 = 5.04 s
