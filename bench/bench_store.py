"""Parse + store of a full collection, against the fastest bare DuckDB load of the same rows.

A realistic full collection: every AWS GPU type in 25 regions (on-demand and 12 reserved terms
each, spot history per zone) and a full-size Azure Retail Prices answer (60 pages of 1,000
items, 40 regions): over 50,000 price records. Each store figure is paired with a floor
measured just before it, and reported as the median of those ratios over the runs, in
wall-clock time and in CPU time (steadier on a shared machine):

- parse: seconds per 10,000 records, per provider;
- store, first write into an empty history (every record opens an interval);
- store, the next collection with the same prices (every interval extended);
- store, the next collection with 5% of prices changed;
- the last two again on stores that already hold the history of 1,000 hourly collections
  (5% of offers changing in each; `--history` to choose), to show the write stays flat;
- the floor: a bare DuckDB bulk insert of the same records into a fresh file, a table of the
  same columns: the Arrow table built from the records, one INSERT ... SELECT, close. Built
  three ways (row tuples transposed, as the store once did; column by column; money passed as
  text and cast by DuckDB), all three measured just before each store write; the fastest of
  them is that write's floor.
  Target: each store write, held check included, within 1.5x of it.
- what the history's table alone costs: the rows a first write stores (offer key and stored
  computed columns: 27 columns against the floor's 18) loaded bare into an empty table of the
  history's own definition, no merge, against the floor's own rows loaded the same way (both
  tables built beforehand, so neither counts building them).

  `--compacted` compacts those stores first, as the daemon keeps a store.

    python bench/bench_store.py [--runs 5] [--history 1000] [--quick] [--compacted]
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from operator import attrgetter
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).parent))

from generate import AWS_REGIONS, aws_payloads, azure_items

from collectors.aws.collector import AwsCollector
from collectors.azure.collector import AzureCollector
from collectors.base import PriceRecord, ProviderSettings
from storage.store import Store
from storage.writes import open_offers
from storage.writes.batch import ARROW_SCHEMA
from storage.writes.derived import derive
from storage.writes.suspect import Suspicion

T0 = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)
BARE_TABLE = """CREATE TABLE bare (provider VARCHAR, region VARCHAR, zone VARCHAR,
    instance_type VARCHAR, price_kind VARCHAR, term_months INTEGER, payment_option VARCHAR,
    offering_class VARCHAR, currency VARCHAR, price_per_hour DECIMAL(18, 6),
    upfront_total DECIMAL(18, 6), gpu_model VARCHAR, gpu_count DOUBLE, gpu_memory_gib DOUBLE,
    vcpus DOUBLE, memory_gib DOUBLE, effective_at TIMESTAMPTZ, available BOOLEAN)"""
NAMES = [f.name for f in ARROW_SCHEMA]
MONEY = pa.decimal128(18, 6)


# (wall-clock s, CPU s) of a store write and of the bare insert measured just before it.
Pair = tuple[tuple[float, float], tuple[float, float]]


def _timed(fn: Callable[[], Any]) -> tuple[float, float]:
    """Wall-clock and CPU seconds (every thread of this process) of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def _parse(runs: int) -> tuple[dict[str, list[PriceRecord]], dict[str, tuple[float, float]]]:
    aws = AwsCollector(ProviderSettings(regions=tuple(AWS_REGIONS)))
    azure = AzureCollector(ProviderSettings())
    items = azure_items(60_000)
    payloads = {
        "aws": aws_payloads(),
        "azure": {f"page-{n + 1}": {"Items": items[n * 1000 : (n + 1) * 1000]} for n in range(60)},
    }
    collectors = {"aws": aws, "azure": azure}
    records: dict[str, list[PriceRecord]] = {}
    per_10k: dict[str, tuple[float, float]] = {}
    for name, collector in collectors.items():
        times = []
        for _ in range(runs):
            started = time.perf_counter()
            records[name] = collector.parse(payloads[name], observed_at=T0).records
            times.append(time.perf_counter() - started)
        seconds = statistics.median(times)
        per_10k[name] = (seconds, seconds / len(records[name]) * 10_000)
    return records, per_10k


def _tuples(rows: list[PriceRecord]) -> pa.Table:
    """Row tuples transposed into columns (how the store built its batch before)."""
    columns = zip(*map(attrgetter(*NAMES), rows), strict=True)
    return pa.table(dict(zip(NAMES, map(list, columns), strict=True)), schema=ARROW_SCHEMA)


def _columns(rows: list[PriceRecord]) -> pa.Table:
    """Column by column, each built by Arrow in the store's types."""
    arrays = [pa.array(list(map(attrgetter(f.name), rows)), f.type) for f in ARROW_SCHEMA]
    return pa.table(arrays, schema=ARROW_SCHEMA)


def _text_money(rows: list[PriceRecord]) -> pa.Table:
    """Column by column, the money as text (DuckDB casts it on insert)."""
    arrays = []
    for f in ARROW_SCHEMA:
        values = list(map(attrgetter(f.name), rows))
        if f.type == MONEY:
            arrays.append(pa.array([None if v is None else str(v) for v in values], pa.string()))
        else:
            arrays.append(pa.array(values, f.type))
    return pa.table(arrays, names=NAMES)


_CAST_MONEY = """INSERT INTO bare SELECT * REPLACE (
    CAST(price_per_hour AS DECIMAL(18, 6)) AS price_per_hour,
    CAST(upfront_total AS DECIMAL(18, 6)) AS upfront_total) FROM batch"""
# How each bare load builds its Arrow table, and its INSERT.
BARE = {
    "row tuples": (_tuples, "INSERT INTO bare SELECT * FROM batch"),
    "columns": (_columns, "INSERT INTO bare SELECT * FROM batch"),
    "money as text": (_text_money, _CAST_MONEY),
}


def _bare_insert(path: Path, records: dict[str, list[PriceRecord]], way: str) -> None:
    build, insert = BARE[way]
    with duckdb.connect(str(path)) as con:
        con.execute(BARE_TABLE)
        for rows in records.values():
            batch = build(rows)  # noqa: F841 (read by DuckDB's replacement scan)
            con.execute(insert)


def _as_stored(folder: Path, records: dict[str, list[PriceRecord]]) -> tuple[str, pa.Table]:
    """The history table's definition and the rows a first write stores for `records`."""
    store = Store(folder / "as-stored.duckdb")
    _write_all(store, records, T0)
    with duckdb.connect(str(store.path)) as con:
        ddl = con.execute(
            "SELECT sql FROM duckdb_tables() WHERE table_name = 'price_intervals'"
        ).fetchall()[0][0]
        rows = con.sql("SELECT * FROM price_intervals").to_arrow_table()
    store.path.unlink()
    return str(ddl), rows


def _loaded(path: Path, ddl: str, table: str, rows: pa.Table) -> tuple[float, float]:
    """Rows built beforehand, loaded bare: a fresh file, `ddl` (of `table`), one INSERT, close."""

    def load() -> None:
        with duckdb.connect(str(path)) as con:
            con.execute(ddl)
            con.register("answer", rows)
            con.execute(f"INSERT INTO {table} SELECT * FROM answer")

    timed = _timed(load)
    path.unlink()
    return timed


def _table_alone(folder: Path, records: dict[str, list[PriceRecord]]) -> Pair:
    """What the history's table alone costs: the rows a first write stores (offer key and
    stored computed columns: 27 columns) and the floor's rows (18), each built beforehand and
    loaded bare, no merge; the first against the second."""
    ddl, stored = _as_stored(folder, records)
    floor_rows = pa.concat_tables(_columns(rows) for rows in records.values())
    bare = _loaded(folder / "floor-rows.duckdb", BARE_TABLE, "bare", floor_rows)
    return _loaded(folder / "stored-rows.duckdb", ddl, "price_intervals", stored), bare


# Each bare load's (wall-clock s, CPU s), every time it was measured.
BARE_TIMES: dict[str, list[tuple[float, float]]] = {way: [] for way in BARE}


def _floor(folder: Path, records: dict[str, list[PriceRecord]], n: int) -> tuple[float, float]:
    """Every bare load once; the fastest (wall clock and CPU each)."""
    for way, times in BARE_TIMES.items():
        path = folder / f"bare-{n}-{len(times)}.duckdb"
        times.append(_timed(lambda: _bare_insert(path, records, way)))  # noqa: B023
        path.unlink()
    latest = [times[-1] for times in BARE_TIMES.values()]
    return min(t[0] for t in latest), min(t[1] for t in latest)


# The held check of every collection's write (docs/trust.md), as `collect` runs it;
# `--without-held` leaves it out, to show what it costs.
HELD: list[Suspicion | None] = [Suspicion()]


def _write_all(store: Store, records: dict[str, list[PriceRecord]], at: datetime) -> None:
    for name, rows in records.items():
        regions = AWS_REGIONS if name == "aws" else None
        store.write_run(
            name, rows, started_at=at, observed_at=at, regions=regions, suspicion=HELD[0]
        )


def _changed(records: list[PriceRecord], share: float, seed: int) -> list[PriceRecord]:
    rng = random.Random(seed)
    return [
        dataclasses.replace(r, price_per_hour=r.price_per_hour + Decimal("0.01"))
        if rng.random() < share
        else r
        for r in records
    ]


# A store that has seen `collections` hourly collections of `records`: the first written by the
# store, the rest generated in bulk (writing them one by one would take minutes): every offer
# changes its price in 5% of the collections, the newest price is the one `records` hold, and
# the rows lie in the file in the order the collections would have appended them.
_GROW_HISTORY = """
CREATE TEMP TABLE first AS SELECT * FROM price_intervals;
CREATE TEMP TABLE chain AS
WITH open AS (
    SELECT offer_key FROM first WHERE valid_to IS NULL
), changes AS (
    SELECT offer_key, 0 AS k FROM open
    UNION ALL
    SELECT offer_key, k FROM open, range(1, $n) r(k) WHERE hash(offer_key || k) % 20 = 0
)
SELECT offer_key, k, lead(k) OVER (PARTITION BY offer_key ORDER BY k) AS next_k,
       count(*) OVER (PARTITION BY offer_key ORDER BY k DESC) - 1 AS back
FROM changes;
DELETE FROM price_intervals;
INSERT INTO price_intervals
SELECT * FROM first WHERE valid_to IS NOT NULL
UNION ALL
SELECT f.* REPLACE (
    CASE WHEN c.k = 0 THEN f.valid_from ELSE $t0 + to_hours(c.k) END AS valid_from,
    $t0 + to_hours(c.next_k) AS valid_to,
    $t0 + to_hours(coalesce(c.next_k, $n) - 1) AS last_seen,
    f.price_per_hour + 0.01 * c.back AS price_per_hour,
    NULL AS price_per_gpu_hour)  -- another price: its computed columns are derived below
FROM first f JOIN chain c ON f.offer_key = c.offer_key AND f.valid_to IS NULL
ORDER BY valid_from, offer_key;
INSERT INTO runs (run_id, provider, started_at, finished_at, status, records, changed, error,
                  interval_seconds, observed_at)
SELECT nextval('run_ids'), provider, $t0 + to_hours(k), $t0 + to_hours(k), 'ok', 0, 0, NULL,
       3600, $t0 + to_hours(k)
FROM (SELECT DISTINCT provider FROM first), range(1, $n) r(k);
DROP TABLE first;
DROP TABLE chain;
CHECKPOINT;
"""


def _grown_store(path: Path, records: dict[str, list[PriceRecord]], collections: int) -> Path:
    store = Store(path)
    _write_all(store, records, T0)
    with duckdb.connect(str(path)) as con:
        for statement in filter(str.strip, _GROW_HISTORY.split(";")):
            params = {"n": collections, "t0": T0}
            con.execute(statement, {k: v for k, v in params.items() if f"${k}" in statement})
        derive(con)  # what each collection's write would have stored
        con.execute("CHECKPOINT")
        for provider in records:  # and its open intervals kept apart, as the writes keep them
            open_offers.check(con, provider)
        con.execute("CHECKPOINT")
    return path


def _one_run(
    folder: Path,
    records: dict[str, list[PriceRecord]],
    changed: dict[str, list[PriceRecord]],
    grown: dict[int, Path],
) -> dict[str, Pair]:
    """Each store figure with the floor measured just before it."""
    counter = iter(range(1_000))

    def paired(store: Store, rows: dict[str, list[PriceRecord]], at: datetime) -> Pair:
        bare = _floor(folder, records, next(counter))
        return _timed(lambda: _write_all(store, rows, at)), bare

    store = Store(folder / "prices.duckdb")
    store.migrate()
    figures = {
        "table": _table_alone(folder, records),
        "first": paired(store, records, T0),
        "same": paired(store, records, T0 + timedelta(hours=1)),
        "changed5": paired(store, changed, T0 + timedelta(hours=2)),
    }
    for n, source in grown.items():
        old = Store(shutil.copy(source, folder / f"grown-{n}.duckdb"))
        at = T0 + timedelta(hours=n)
        figures[f"same@{n}"] = paired(old, records, at)
        figures[f"changed5@{n}"] = paired(old, changed, at + timedelta(hours=1))
    return figures


def _history_rows(path: Path) -> int:
    with duckdb.connect(str(path), read_only=True) as con:
        return int(con.execute("SELECT count(*) FROM price_intervals").fetchall()[0][0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--history", type=int, nargs="*", default=[1000])
    parser.add_argument("--quick", action="store_true", help="--runs 1 --history 50")
    parser.add_argument("--without-held", action="store_true", help="no held check")
    parser.add_argument(
        "--compacted", action="store_true", help="compact the grown stores first, as the daemon"
    )
    args = parser.parse_args()
    HELD[0] = None if args.without_held else HELD[0]
    if args.quick:
        args.runs, args.history = 1, [50]
    logging.disable(logging.WARNING)  # the synthetic Azure answer names unknown SKUs on purpose
    records, per_10k = _parse(args.runs)
    total = sum(len(r) for r in records.values())
    changed = {name: _changed(rows, 0.05, 3) for name, rows in records.items()}
    figures: dict[str, list[Pair]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-store-") as tmp:
        grown = {n: _grown_store(Path(tmp) / f"grown-{n}.duckdb", records, n) for n in args.history}
        for path in grown.values() if args.compacted else ():
            Store(path).compact()  # as the daemon keeps a store (storage/writes/compact.py)
        sizes = {n: _history_rows(path) for n, path in grown.items()}
        for run in range(args.runs):
            folder = Path(tmp) / str(run)
            folder.mkdir()
            for key, pair in _one_run(folder, records, changed, grown).items():
                figures.setdefault(key, []).append(pair)
            shutil.rmtree(folder)
    print(f"records: {total} (aws {len(records['aws'])}, azure {len(records['azure'])})")
    for name, (seconds, per) in per_10k.items():
        rows = "60,000 API rows" if name == "azure" else "the whole answer"
        print(f"parse {name}: {seconds:.3f} s for {rows}, {per:.3f} s per 10,000 records")
    for way, times in BARE_TIMES.items():
        print(f"bare load, {way}: {statistics.median(t[0] for t in times):.3f} s (median)")
    floors = [b[0] for key, pairs in figures.items() if key != "table" for _, b in pairs]
    bare = statistics.median(floors)
    print(f"floor, the fastest bare load: {bare:.3f} s (median of every pairing)")
    print("store write: median wall-clock s; median ratio to its floor (min-max); CPU ratio")
    for key, pairs in figures.items():
        seconds = statistics.median(s[0] for s, _ in pairs)
        walls = [s[0] / b[0] for s, b in pairs]
        cpus = [s[1] / b[1] for s, b in pairs]
        print(
            f"  {_label(key, sizes)}: {seconds:.3f} s; {statistics.median(walls):.2f}x"
            f" ({min(walls):.2f}-{max(walls):.2f}); CPU {statistics.median(cpus):.2f}x"
        )
    print("target: each store write within 1.5x of its floor")


def _label(key: str, sizes: dict[int, int]) -> str:
    step, _, history = key.partition("@")
    label = {
        "table": "no store: the rows a first write stores, loaded bare, against the floor's rows"
        " (both built beforehand)",
        "first": "store, first write",
        "same": "store, same prices again",
        "changed5": "store, 5% of prices changed",
    }[step]
    if history:
        label += f" (after {history} collections, {sizes[int(history)]:,} intervals)"
    return label


if __name__ == "__main__":
    main()
