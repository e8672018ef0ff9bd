"""Readers and writers of one store take turns (storage.gate): in one process, readers never
break each other, a writer, or an export; across processes, a stream of reads never keeps a
writer out. Every test waits on states, never on time."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest

from collectors.common import StoreError
from storage import gate
from storage.connection import connect, scalar
from storage.query import query
from storage.store import Store
from tests.storage.test_fx_availability import LAMBDA, T0
from tests.tracker.daemon_support import wait_until

WRITES = 6


def _store(tmp_path: Path) -> Store:
    store = Store(tmp_path / "p.duckdb", lock_wait_s=120)
    _write(store, 0)
    return store


def _write(store: Store, n: int) -> None:
    at = T0 + timedelta(hours=n)
    record = replace(LAMBDA, price_per_hour=Decimal("31.92") + n)
    store.write_run("lambdalabs", [record], started_at=at, observed_at=at, regions=None)


def _in_threads(*jobs: Callable[[], None]) -> list[BaseException]:
    """Run each job in a thread of its own, wait for all; what they raised."""
    failures: list[BaseException] = []

    def guarded(job: Callable[[], None]) -> None:
        try:
            job()
        except BaseException as exc:  # reported by the test
            failures.append(exc)

    threads = [threading.Thread(target=guarded, args=(job,)) for job in jobs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return failures


def test_readers_writers_and_an_export_of_one_process_never_break_each_other(
    tmp_path: Path,
) -> None:
    store = _store(tmp_path)
    written = threading.Event()
    reads: list[int] = []

    def reader() -> None:
        # Read until every write is in, then once more: reads overlap each other and every
        # write, and each sees whole runs only.
        while True:
            done = written.is_set()
            # A generous wait: on a loaded machine ten threads take turns for long.
            rows = query(store.path, "SELECT count(*) FROM collection_runs", wait_s=120).rows
            reads.append(rows[0][0])
            if done:
                return

    def writer() -> None:
        for n in range(1, WRITES + 1):
            _write(store, n)
        written.set()

    def exporter() -> None:
        # An export's connection reaches files outside the store: not in the readers' sandbox.
        for n in range(3):
            with connect(store.path, read_only=True, outside=True, wait_s=120) as con:
                con.execute(f"COPY (FROM prices) TO '{tmp_path / f'out{n}.parquet'}'")

    failures = _in_threads(*([reader] * 8), writer, exporter)
    assert failures == []
    assert reads[-1] == WRITES + 1 and set(reads) <= set(range(1, WRITES + 2))
    assert all((tmp_path / f"out{n}.parquet").is_file() for n in range(3))


def test_a_reader_of_any_moment_has_the_sandbox_and_utc(tmp_path: Path) -> None:
    store = _store(tmp_path)
    with connect(store.path, read_only=True) as first, connect(store.path, read_only=True) as then:
        for con in (first, then):
            assert scalar(con, "SELECT current_setting('TimeZone')") == "UTC"
            assert scalar(con, "SELECT current_setting('enable_external_access')") is False
            with pytest.raises(Exception, match="locked"):
                con.execute("SET enable_external_access = true")


def test_a_read_inside_a_read_goes_on_while_a_writer_waits(tmp_path: Path) -> None:
    store = _store(tmp_path)
    turn = gate._gate(store.path)
    reading, nested = threading.Event(), threading.Event()

    def reader() -> None:
        with connect(store.path, read_only=True):
            reading.set()
            # Until the writer is queued: a newcomer would now wait, this thread not.
            wait_until(lambda: turn.waiting["write"] == 1, "the writer queued")
            with connect(store.path, read_only=True) as again:
                assert scalar(again, "SELECT count(*) FROM collection_runs") == 1
            nested.set()

    def writer() -> None:
        assert reading.wait(60)
        _write(store, 1)
        assert nested.is_set()  # the writer went in only after the reader was done

    assert _in_threads(reader, writer) == []


_READ_LOOP = """
import sys, threading
from pathlib import Path
from storage.query import query
store, stop = Path(sys.argv[1]), Path(sys.argv[2])
counts, failures = [], []
def loop():
    while not stop.exists():
        try:
            query(store, "SELECT count(*) FROM prices")
            counts.append(1)
        except Exception as exc:
            failures.append(repr(exc))
threads = [threading.Thread(target=loop) for _ in range(4)]
for t in threads: t.start()
print("reading", flush=True)
for t in threads: t.join()
print(len(counts), len(failures), failures[:1], flush=True)
"""


@pytest.mark.daemon  # a busy reader process for seconds: in the run of real processes
def test_a_stream_of_reads_from_another_process_never_keeps_a_writer_out(
    tmp_path: Path,
) -> None:
    store = _store(tmp_path)
    stop = tmp_path / "stop"
    reader = subprocess.Popen(
        [sys.executable, "-c", _READ_LOOP, str(store.path), str(stop)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert reader.stdout is not None
        assert reader.stdout.readline().strip() == "reading"
        for n in range(1, WRITES + 1):
            _write(store, n)  # each waits for its turn, at most the store's 120 s
    finally:
        stop.touch()
        out, _ = reader.communicate(timeout=120)
    reads, failed, first = out.strip().split(maxsplit=2)
    assert (int(failed), first) == (0, "[]")
    assert int(reads) > 0
    assert query(store.path, "SELECT count(*) FROM collection_runs").rows == [(WRITES + 1,)]
    assert gate.intent_path(store.path).exists()


def test_a_write_inside_the_same_threads_read_is_refused_at_once(tmp_path: Path) -> None:
    store = _store(tmp_path)
    with (
        connect(store.path, read_only=True),
        pytest.raises(RuntimeError, match="inside this thread's read"),
        connect(store.path, read_only=False),
    ):
        pass
    _write(store, 1)  # and the gate is free again


def test_a_writer_that_gives_up_lets_the_readers_behind_it_join(tmp_path: Path) -> None:
    store = _store(tmp_path)
    turn = gate._gate(store.path)
    holding, release, joined = threading.Event(), threading.Event(), threading.Event()
    gave_up = threading.Event()

    def first() -> None:
        with connect(store.path, read_only=True):
            holding.set()
            assert release.wait(60)

    def writer() -> None:
        assert holding.wait(60)
        with (
            pytest.raises(StoreError, match="held by this process's own readers"),
            connect(store.path, read_only=False, wait_s=2),
        ):
            pass
        gave_up.set()

    def second() -> None:
        # Queued behind the writer (or, on a machine too slow to see it wait, after it).
        wait_until(lambda: turn.waiting["write"] == 1 or gave_up.is_set(), "the writer queued")
        with connect(store.path, read_only=True, wait_s=60):
            joined.set()  # in the first reader's turn, before it ends
        release.set()

    assert _in_threads(first, writer, second) == []
    assert joined.is_set()
