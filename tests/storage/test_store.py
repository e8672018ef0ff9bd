"""The change-only history rules, on a real DuckDB file."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pytest

from collectors.base import PriceRecord
from collectors.common import StoreError
from storage.fx import GpuFact
from storage.migrations import MIGRATIONS
from storage.query import QueryRefused, query
from storage.store import Store
from storage.writes import sequence as sequence_mod

T0 = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)
H = timedelta(hours=1)


def rec(
    price: str,
    *,
    kind: str = "on_demand",
    zone: str | None = None,
    ts: datetime | None = None,
    region: str = "us-east-1",
    itype: str = "p4d.24xlarge",
    upfront: str | None = None,
    term: int | None = None,
) -> PriceRecord:
    return PriceRecord(
        provider="aws",
        region=region,
        zone=zone,
        instance_type=itype,
        price_kind=kind,  # type: ignore[arg-type]
        term_months=term,
        payment_option="partial_upfront" if term else None,
        offering_class="standard" if term else None,
        currency="USD",
        price_per_hour=Decimal(price),
        upfront_total=None if upfront is None else Decimal(upfront),
        gpu_model="A100",
        gpu_count=8,
        gpu_memory_gib=40,
        vcpus=96,
        memory_gib=1152,
        effective_at=ts,
    )


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "prices.duckdb", gpu_facts=[GpuFact("A100", 312.0)])


def write(store: Store, records: list[PriceRecord], at: datetime, regions: Any = ("us-east-1",)):
    return store.write_run("aws", records, started_at=at, observed_at=at, regions=regions)


def rows(store: Store, where: str = "true") -> list[tuple[Any, ...]]:
    sql = (
        "SELECT region, zone, price_kind, price_per_hour, upfront_total, valid_from, valid_to,"
        f" last_seen FROM prices WHERE {where} ORDER BY region, zone NULLS FIRST, valid_from"
    )
    return query(store.path, sql).rows


def test_first_collection_opens_one_interval_per_offer(store: Store) -> None:
    result = write(store, [rec("21.957642"), rec("3.06", itype="p3.2xlarge")], T0)
    assert (result.records, result.changed) == (2, 2)
    got = query(store.path, "SELECT * FROM prices WHERE instance_type = 'p4d.24xlarge'")
    row = dict(zip(got.columns, got.rows[0], strict=True))
    assert row == {
        "provider": "aws",
        "region": "us-east-1",
        "zone": None,
        "instance_type": "p4d.24xlarge",
        "price_kind": "on_demand",
        "term_months": None,
        "payment_option": None,
        "offering_class": None,
        "currency": "USD",
        "price_per_hour": 21.957642,
        "upfront_total": None,
        "price_per_gpu_hour": 2.744705,  # 21.957642 / 8, rounded to 6 places
        "gpu_model": "A100",
        "gpu_count": 8.0,
        "gpu_memory_gib": 40.0,
        "vcpus": 96.0,
        "memory_gib": 1152.0,
        "valid_from": T0,
        "valid_to": None,
        "last_seen": T0,
        "available": None,  # AWS does not say
        "price_per_hour_usd": 21.957642,  # USD needs no rate
        "price_per_gpu_hour_usd": 2.744705,
        "gpu_tflops_fp16": 312.0,  # the GPU table's A100, as the store was handed it
        "pflop_per_usd": pytest.approx(409.224269, abs=1e-6),  # 8 x 312 x 3.6 / 21.957642
    }


def test_same_price_again_extends_last_seen_only(store: Store) -> None:
    write(store, [rec("21.957642")], T0)
    result = write(store, [rec("21.957642")], T0 + H)
    assert result.changed == 0
    assert rows(store) == [("us-east-1", None, "on_demand", 21.957642, None, T0, None, T0 + H)]


def test_changed_price_closes_old_interval_and_opens_new(store: Store) -> None:
    write(store, [rec("32.7726")], T0)
    write(store, [rec("32.7726")], T0 + H)
    result = write(store, [rec("21.957642")], T0 + 2 * H)
    assert result.changed == 1
    assert rows(store) == [
        ("us-east-1", None, "on_demand", 32.7726, None, T0, T0 + 2 * H, T0 + H),
        ("us-east-1", None, "on_demand", 21.957642, None, T0 + 2 * H, None, T0 + 2 * H),
    ]


def test_upfront_change_alone_is_a_change(store: Store) -> None:
    write(store, [rec("13.258202", term=12, upfront="1382")], T0)
    result = write(store, [rec("13.258202", term=12, upfront="1400")], T0 + H)
    assert result.changed == 1
    assert [r[4] for r in rows(store)] == [1382.0, 1400.0]


def test_withdrawn_offer_is_closed_but_only_in_regions_collected(store: Store) -> None:
    write(store, [rec("1", region="us-east-1"), rec("2", region="us-west-2")], T0, regions=None)
    result = write(
        store, [rec("3", region="eu-west-1")], T0 + H, regions=("us-east-1", "eu-west-1")
    )
    assert result.changed == 2  # eu-west-1 opened, us-east-1 withdrawn
    assert rows(store) == [
        ("eu-west-1", None, "on_demand", 3.0, None, T0 + H, None, T0 + H),
        ("us-east-1", None, "on_demand", 1.0, None, T0, T0 + H, T0),
        ("us-west-2", None, "on_demand", 2.0, None, T0, None, T0),  # not looked at: still open
    ]


def test_all_regions_run_closes_anything_missing(store: Store) -> None:
    write(store, [rec("1", region="us-east-1"), rec("2", region="us-west-2")], T0, regions=None)
    write(store, [rec("1", region="us-east-1")], T0 + H, regions=None)
    assert query(store.path, "SELECT region FROM latest_prices").rows == [("us-east-1",)]


def test_provider_timestamp_starts_the_interval(store: Store) -> None:
    spot_ts = T0 - 3 * H
    write(store, [rec("8.0468", kind="spot", zone="use1-az1", ts=spot_ts)], T0)
    # The same history item returned again is a confirmation, not a change.
    result = write(store, [rec("8.0468", kind="spot", zone="use1-az1", ts=spot_ts)], T0 + H)
    assert result.changed == 0
    assert rows(store) == [("us-east-1", "use1-az1", "spot", 8.0468, None, spot_ts, None, T0 + H)]


def test_several_history_items_in_one_run_chain_into_intervals(store: Store) -> None:
    z = {"kind": "spot", "zone": "use1-az2"}
    write(store, [rec("9.8722", ts=T0 - 5 * H, **z)], T0)
    items = [
        rec("9.8722", ts=T0 - 5 * H, **z),  # already known
        rec("9.1506", ts=T0 + 10 * timedelta(minutes=1), **z),
        rec("9.1506", ts=T0 + 20 * timedelta(minutes=1), **z),  # same price: no new interval
        rec("8.0468", ts=T0 + 40 * timedelta(minutes=1), **z),
    ]
    result = write(store, items, T0 + H)
    assert result.changed == 2
    m = timedelta(minutes=1)
    assert rows(store) == [
        ("us-east-1", "use1-az2", "spot", 9.8722, None, T0 - 5 * H, T0 + 10 * m, T0),
        ("us-east-1", "use1-az2", "spot", 9.1506, None, T0 + 10 * m, T0 + 40 * m, T0 + H),
        ("us-east-1", "use1-az2", "spot", 8.0468, None, T0 + 40 * m, None, T0 + H),
    ]


def test_price_back_to_an_earlier_value_is_a_new_interval(store: Store) -> None:
    write(store, [rec("1.0")], T0)
    write(store, [rec("2.0")], T0 + H)
    write(store, [rec("1.0")], T0 + 2 * H)
    assert [(r[3], r[5], r[6]) for r in rows(store)] == [
        (1.0, T0, T0 + H),
        (2.0, T0 + H, T0 + 2 * H),
        (1.0, T0 + 2 * H, None),
    ]


def test_contradicting_old_timestamp_is_dated_to_the_observation(store: Store) -> None:
    z = {"kind": "spot", "zone": "use1-az1"}
    write(store, [rec("8.0", ts=T0 - H, **z)], T0)
    # Same timestamp, different price: history was restated; record it as seen now.
    write(store, [rec("7.5", ts=T0 - H, **z)], T0 + H)
    assert [(r[3], r[5], r[6]) for r in rows(store)] == [(8.0, T0 - H, T0 + H), (7.5, T0 + H, None)]


def test_offers_are_told_apart_by_zone_term_and_kind(store: Store) -> None:
    records = [
        rec("21.957642"),
        rec("8.0468", kind="spot", zone="use1-az1", ts=T0),
        rec("8.0468", kind="spot", zone="use1-az2", ts=T0),
        rec("13.258202", kind="reserved", term=12, upfront="58000"),
        rec("8.679832", kind="reserved", term=36, upfront="100000"),
    ]
    assert write(store, records, T0).changed == 5
    assert write(store, records, T0 + H).changed == 0
    assert query(store.path, "SELECT count(*) FROM latest_prices").rows == [(5,)]


def test_failure_inside_the_merge_leaves_history_untouched(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(store, [rec("21.957642")], T0)
    monkeypatch.setattr(sequence_mod, "_INSERT_NEW", "INSERT INTO no_such_table VALUES (1)")
    with pytest.raises(StoreError, match="aws: could not store the collection"):
        write(store, [rec("20.0"), rec("3.06", itype="p3.2xlarge")], T0 + H)
    assert rows(store) == [("us-east-1", None, "on_demand", 21.957642, None, T0, None, T0)]
    runs = query(store.path, "SELECT status, records FROM collection_runs").rows
    assert runs == [("ok", 1)]


def test_failed_and_skipped_runs_are_recorded(store: Store) -> None:
    store.record_run("aws", "failed", started_at=T0, error="aws: pricing page 2: HTTP 500")
    store.record_run("azure", "skipped", started_at=T0, error="no credentials")
    got = query(store.path, "SELECT provider, status, records, changed, error FROM collection_runs")
    assert got.rows == [
        ("aws", "failed", 0, 0, "aws: pricing page 2: HTTP 500"),
        ("azure", "skipped", 0, 0, "no credentials"),
    ]


def test_stale_when_last_success_is_older_than_twice_the_interval(store: Store) -> None:
    store.write_run(
        "aws", [rec("1")], started_at=T0, observed_at=T0, regions=None, interval_seconds=3600
    )
    assert query(store.path, "SELECT stale FROM latest_prices").rows == [(False,)]
    with duckdb.connect(str(store.path)) as con:
        con.execute("UPDATE runs SET finished_at = now() - INTERVAL 3 HOUR")
    assert query(store.path, "SELECT stale FROM latest_prices").rows == [(True,)]


def test_migrations_are_recorded_once(store: Store) -> None:
    assert store.migrate() == [version for version, _, _ in MIGRATIONS]
    assert store.migrate() == []
    got = query(store.path, "SELECT version, name FROM schema_migrations ORDER BY version").rows
    assert got == [(version, name) for version, name, _ in MIGRATIONS]
    assert got[0] == (1, "price history, runs, public views")


@pytest.mark.parametrize(
    "sql",
    [
        "DELETE FROM price_intervals",
        "INSERT INTO runs (run_id) VALUES (99)",
        "COPY (SELECT 1) TO 'out.csv'",
        "ATTACH 'other.duckdb'",
        "SELECT 1; DROP VIEW prices",
    ],
)
def test_queries_that_write_are_refused(store: Store, sql: str) -> None:
    write(store, [rec("1")], T0)
    with pytest.raises(QueryRefused):
        query(store.path, sql)
    assert len(rows(store)) == 1


def test_reading_a_missing_store_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="gpu-tracker collect"):
        query(tmp_path / "nope.duckdb", "SELECT 1")


_HOLD_WRITE_LOCK = textwrap.dedent(
    """
    import sys, duckdb
    con = duckdb.connect(sys.argv[1])
    con.execute("BEGIN TRANSACTION")
    con.execute("UPDATE runs SET records = records")
    print("locked", flush=True)
    sys.stdin.readline()  # until the test lets go
    con.execute("COMMIT")
    con.close()
    """
)


@contextmanager
def holding_write_lock(path: Path) -> Iterator[Callable[[], None]]:
    """Another process holding the store open for writing until the yielded call (or the end
    of the block) lets it go: no guess at how long a busy machine needs."""
    with subprocess.Popen(
        [sys.executable, "-c", _HOLD_WRITE_LOCK, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        assert proc.stdout.readline().strip() == "locked"

        def release() -> None:
            if not proc.stdin.closed:
                proc.stdin.close()  # its readline returns: it commits and exits

        try:
            yield release
        finally:
            release()
        assert proc.wait(timeout=60) == 0


@pytest.fixture
def refused(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Set once an attempt to open the store met its lock (so a caller is now waiting)."""
    event = threading.Event()
    real = duckdb.connect

    def connect(*args: Any, **kwargs: Any) -> Any:
        try:
            return real(*args, **kwargs)
        except duckdb.IOException:
            event.set()
            raise

    monkeypatch.setattr(duckdb, "connect", connect)
    return event


def test_reader_waits_for_a_busy_writer_then_answers(
    store: Store, refused: threading.Event
) -> None:
    write(store, [rec("1")], T0)
    with holding_write_lock(store.path) as release, ThreadPoolExecutor(1) as pool:
        answer = pool.submit(query, store.path, "SELECT count(*) FROM prices", wait_s=60)
        assert refused.wait(60), "the reader never met the writer's lock"
        assert not answer.done()  # still waiting, not failed
        release()
        assert answer.result(timeout=60).rows == [(1,)]


def test_reader_gives_up_with_a_clear_message(store: Store) -> None:
    write(store, [rec("1")], T0)
    with holding_write_lock(store.path), pytest.raises(StoreError, match="locked by another"):
        query(store.path, "SELECT 1", wait_s=0.1)


def test_writer_waits_for_a_busy_reader_or_writer(store: Store, refused: threading.Event) -> None:
    write(store, [rec("1")], T0)
    with holding_write_lock(store.path) as release, ThreadPoolExecutor(1) as pool:
        landed = pool.submit(write, store, [rec("2")], T0 + H)
        assert refused.wait(60), "the writer never met the other writer's lock"
        assert not landed.done()  # still waiting, not failed
        release()
        landed.result(timeout=60)  # then it lands
    assert [r[3] for r in rows(store)] == [1.0, 2.0]


def test_writer_gives_up_with_a_clear_message(tmp_path: Path) -> None:
    store = Store(tmp_path / "prices.duckdb", lock_wait_s=0.1)
    write(store, [rec("1")], T0)
    with holding_write_lock(store.path), pytest.raises(StoreError, match="locked by another"):
        write(store, [rec("2")], T0 + H)


def test_a_price_the_last_collection_did_not_confirm_is_stale(store: Store) -> None:
    store.write_run(
        "aws", [rec("1", region="us-east-1"), rec("2", region="us-west-2")],
        started_at=T0, observed_at=T0, regions=None, interval_seconds=3600,
    )  # fmt: skip
    # us-west-2 is no longer collected: its last price stays open, but nothing vouches for it.
    store.write_run(
        "aws", [rec("1", region="us-east-1")],
        started_at=T0 + H, observed_at=T0 + H, regions=["us-east-1"], interval_seconds=3600,
    )  # fmt: skip
    with duckdb.connect(str(store.path)) as con:
        con.execute("UPDATE runs SET finished_at = now()")
    got = query(store.path, "SELECT region, stale FROM latest_prices ORDER BY region").rows
    assert got == [("us-east-1", False), ("us-west-2", True)]


def test_an_offer_back_with_an_older_timestamp_never_overlaps_its_history(store: Store) -> None:
    z = {"kind": "spot", "zone": "use1-az1"}
    write(store, [rec("8.0468", ts=T0 - 3 * H, **z)], T0)
    write(store, [rec("21.957642")], T0 + H)  # the spot offer is withdrawn at T0 + 1h
    # It comes back: AWS says 8.10 since T0 - 2h and 8.20 since T0 - 30m, both before the
    # withdrawal; then 8.30 from T0 + 2h. The return is dated from the withdrawal, with the
    # newest price at or before it (8.20); the later point stands.
    back = [
        rec("8.10", ts=T0 - 2 * H, **z),
        rec("8.20", ts=T0 - H / 2, **z),
        rec("8.30", ts=T0 + 2 * H, **z),
        rec("21.957642"),
    ]
    write(store, back, T0 + 3 * H)
    assert rows(store, "price_kind = 'spot'") == [
        ("us-east-1", "use1-az1", "spot", 8.0468, None, T0 - 3 * H, T0 + H, T0),
        ("us-east-1", "use1-az1", "spot", 8.2, None, T0 + H, T0 + 2 * H, T0 + 3 * H),
        ("us-east-1", "use1-az1", "spot", 8.3, None, T0 + 2 * H, None, T0 + 3 * H),
    ]
    overlaps = query(
        store.path,
        "SELECT count(*) FROM prices a JOIN prices b USING (provider, region, zone,"
        " instance_type, price_kind) WHERE a.valid_from < b.valid_from"
        " AND coalesce(a.valid_to, 'infinity'::TIMESTAMPTZ) > b.valid_from",
    ).rows
    assert overlaps == [(0,)]


def test_a_collection_older_than_the_last_one_stored_is_refused(store: Store) -> None:
    # The daemon and a manual collect started side by side: the one started first commits last.
    write(store, [rec("21.957642")], T0 + H)
    before = rows(store)
    with pytest.raises(StoreError, match=r"a newer collection of aws .* stored meanwhile"):
        write(store, [rec("22.00")], T0)
    assert rows(store) == before
    runs = query(store.path, "SELECT count(*) FROM collection_runs").rows
    assert runs == [(1,)]  # the refused one left nothing (the pipeline records it as failed)


def test_offers_of_an_unreadable_type_are_left_open_not_withdrawn(store: Store) -> None:
    write(store, [rec("21.957642"), rec("55.04", itype="p5.48xlarge")], T0)
    # Neither comes back, but a row of p4d.24xlarge could not be read: that one is unconfirmed
    # (it turns stale), the p5 is withdrawn.
    store.write_run(
        "aws", [rec("1.0", itype="g5.xlarge")], started_at=T0 + H, observed_at=T0 + H,
        regions=("us-east-1",), keep_open={"p4d.24xlarge"},
    )  # fmt: skip
    got = query(
        store.path,
        "SELECT instance_type, valid_to, stale FROM latest_prices"
        " RIGHT JOIN (SELECT DISTINCT instance_type FROM prices) USING (instance_type)"
        " ORDER BY instance_type",
    ).rows
    assert got == [
        ("g5.xlarge", None, False),
        ("p4d.24xlarge", None, True),  # still current, marked stale: last seen before the run
        ("p5.48xlarge", None, None),  # withdrawn: no longer in latest_prices
    ]
