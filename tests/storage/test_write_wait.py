"""A writer waits for a reader in another process: it logs who holds the store, writes every
price once the reader lets go, and when its wait runs out names the setting that gives it."""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest

from collectors.base import PriceRecord
from collectors.common import StoreError
from storage.query import query
from storage.store import Store

T0 = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)
# A reader in its own process: it opens the store read-only, says so, and holds it until its
# standard input closes (as a long `gpu-tracker sql` query would hold it).
_READER = """
import sys, duckdb
con = duckdb.connect(sys.argv[1], read_only=True)
con.execute("SELECT count(*) FROM price_intervals").fetchall()
print("reading", flush=True)
sys.stdin.readline()
con.close()
"""


def offers(count: int, price: str) -> list[PriceRecord]:
    return [
        PriceRecord(
            provider="azure",
            region=f"region-{i}",
            zone=None,
            instance_type="ND96isr_H100_v5",
            price_kind="on_demand",
            term_months=None,
            payment_option=None,
            offering_class=None,
            currency="USD",
            price_per_hour=Decimal(price),
            upfront_total=None,
            gpu_model="H100",
            gpu_count=8.0,
            gpu_memory_gib=80.0,
        )
        for i in range(count)
    ]


@contextmanager
def reader(path: Path) -> Iterator[tuple[int, Callable[[], None]]]:
    """(the reader's PID, a call that ends it)."""
    with subprocess.Popen(
        [sys.executable, "-c", _READER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        assert proc.stdout.readline().strip() == "reading"

        def end() -> None:
            if not proc.stdin.closed:
                proc.stdin.close()

        try:
            yield proc.pid, end
        finally:
            end()
        assert proc.wait(timeout=60) == 0


class Said(logging.Handler):
    """Sets `event` once a record containing `needle` is logged, from any thread."""

    def __init__(self, needle: str) -> None:
        super().__init__()
        self.needle, self.event, self.lines = needle, threading.Event(), list[str]()

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())
        if self.needle in self.lines[-1]:
            self.event.set()


@pytest.fixture
def said() -> Iterator[Said]:
    handler = Said("waiting up to")
    logger = logging.getLogger("storage.connection")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)


def test_a_writer_waits_for_a_reader_and_lands_every_price(tmp_path: Path, said: Said) -> None:
    store = Store(tmp_path / "prices.duckdb", lock_wait_s=600)
    store.write_run("azure", offers(3, "98.32"), started_at=T0, observed_at=T0, regions=None)
    later = T0 + timedelta(hours=1)
    with reader(store.path) as (pid, end), ThreadPoolExecutor(1) as pool:
        landed = pool.submit(
            store.write_run,
            "azure",
            offers(40, "97.10"),
            started_at=later,
            observed_at=later,
            regions=None,
        )
        assert said.event.wait(60), "the writer never said it was waiting"
        line = next(line for line in said.lines if "waiting up to" in line)
        assert f"held by process {pid} (" in line and "[storage] write_wait" in line
        assert "600 s" in line
        assert not landed.done()  # waiting, not failed
        end()
        result = landed.result(timeout=120)
    assert result.records == 40
    current = query(store.path, "SELECT region, price_per_hour FROM latest_prices").rows
    assert len(current) == 40 and {p for _, p in current} == {97.10}
    runs = query(store.path, "SELECT status, records FROM collection_runs ORDER BY run_id").rows
    assert runs == [("ok", 3), ("ok", 40)]


def test_when_the_wait_runs_out_the_error_names_the_setting(tmp_path: Path) -> None:
    store = Store(tmp_path / "prices.duckdb", lock_wait_s=0.2)
    store.write_run("azure", offers(1, "98.32"), started_at=T0, observed_at=T0, regions=None)
    later = T0 + timedelta(hours=1)
    with reader(store.path) as (pid, _), pytest.raises(StoreError) as raised:
        store.write_run("azure", offers(2, "1"), started_at=later, observed_at=later, regions=None)
    message = str(raised.value)
    assert f"process {pid}" in message and "[storage] write_wait" in message
    assert "\n" not in message
    assert query(store.path, "SELECT count(*) FROM collection_runs").rows == [(1,)]


def test_a_collection_waits_as_long_as_the_config_says(tmp_path: Path, said: Said) -> None:
    """The wiring: [storage] write_wait reaches the collection's writes."""
    from collectors.base import ParseResult
    from tracker.collecting import pipeline
    from tracker.collecting.isolation import Fetched
    from tracker.config import from_dict

    path = tmp_path / "prices.duckdb"
    Store(path).write_run("azure", offers(1, "98.32"), started_at=T0, observed_at=T0, regions=None)
    raw = {"storage": {"path": str(path), "write_wait": "17m"}}
    config = from_dict(raw, source=None)

    def fetched(name: str, settings: object, observed_at: datetime) -> Fetched:
        return Fetched(ParseResult(records=offers(5, "90.5")), None)

    with reader(path) as (pid, end), ThreadPoolExecutor(1) as pool:
        done = pool.submit(pipeline.collect, config, ("azure",), env={}, fetcher=fetched)
        assert said.event.wait(60), "the collection never said it was waiting"
        assert f"process {pid}" in said.lines[-1] and "up to 1020 s" in said.lines[-1]
        end()
        (outcome,) = done.result(timeout=120)
    assert (outcome.status, outcome.records) == ("ok", 5)
    assert query(path, "SELECT count(*) FROM latest_prices").rows == [(5,)]
