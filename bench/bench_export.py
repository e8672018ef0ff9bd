"""`gpu-tracker export` of a long history, against DuckDB's own partitioned COPY of the same rows,
and the incremental export after one hourly collection.

On a store of `--rows` change-rows built by `big_store.py` (25 million by default):

- full: `storage.export.export` into an empty directory (fingerprints, DuckDB writing the
  Parquet files, the moves into place, the manifest), each run paired with the baseline
  measured just before it: `COPY (SELECT *, month FROM prices) TO ... (FORMAT parquet,
  PARTITION_BY (provider, month))` on the same store. Reported: each time, and the median of
  the ratios in wall-clock and in CPU time (steadier on a shared machine). Target: within 2x.
- again: a second export with nothing new (nothing may be written).
- hourly: one collection of every provider through the real merge (`Store.write_run`), every
  current price confirmed and `--changed` of the prices of two providers moved, dated an hour
  after the store's last collection; then an incremental export. Reported: its time, the files
  and rows rewritten, and which partitions they are in: the current month's of the providers
  that changed, and the older ones (the `open-*` files of current prices whose `last_seen`
  moved, and the partitions where the replaced prices' intervals began).

    python bench/bench_export.py [--rows 25000000] [--runs 2] [--changed 0.01] [--keep DIR]
"""

from __future__ import annotations

import argparse
import random
import resource
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb

sys.path.insert(0, str(Path(__file__).parent))

from big_store import DEFAULT_ROWS, build

from collectors.base import PriceRecord
from storage.export import Report, export, open_target
from storage.store import Store

CHANGING = ("aws", "tencent")  # the providers whose prices move in the hourly collection
BASELINE = """COPY (SELECT *, strftime(valid_from, '%Y-%m') AS month FROM prices)
TO '{out}' (FORMAT parquet, PARTITION_BY (provider, month))"""
_RECORD_FIELDS = (
    "provider, region, zone, instance_type, price_kind, term_months, payment_option, "
    "offering_class, currency, CAST(price_per_hour AS VARCHAR), CAST(upfront_total AS VARCHAR), "
    "gpu_model, gpu_count, gpu_memory_gib, vcpus, memory_gib, available"
)

Timing = tuple[float, float]  # wall-clock s, CPU s of this process (DuckDB's threads included)


def timed(work: Callable[[], Any]) -> tuple[Timing, Any]:
    wall, cpu = time.perf_counter(), _cpu()
    result = work()
    return (time.perf_counter() - wall, _cpu() - cpu), result


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def baseline(store: Path, out: Path) -> None:
    with duckdb.connect(str(store), read_only=True) as con:
        con.execute("SET TimeZone = 'UTC'")
        con.execute(BASELINE.format(out=out))


def full_runs(store: Path, work: Path, runs: int) -> tuple[list[tuple[Timing, Timing]], Report]:
    pairs = []
    report = Report()
    for n in range(runs):
        base_out, ours_out = work / f"baseline-{n}", work / f"export-{n}"
        base, _ = timed(lambda: baseline(store, base_out))  # noqa: B023
        ours, report = timed(lambda: export(store, open_target(str(ours_out))))  # noqa: B023
        pairs.append((base, ours))
        shutil.rmtree(base_out)
        if n < runs - 1:
            shutil.rmtree(ours_out)
    return pairs, report


def hourly_collection(store: Path, changed: float, seed: int = 7) -> tuple[datetime, int]:
    """Every provider collected once more, an hour after the last collection: every current
    price confirmed, `changed` of those of CHANGING moved by a few percent. The collection's
    date and the prices moved."""
    with duckdb.connect(str(store), read_only=True) as con:
        con.execute("SET TimeZone = 'UTC'")
        last = con.execute("SELECT max(last_seen) FROM price_intervals").fetchall()[0][0]
        rows = con.execute(
            f"SELECT {_RECORD_FIELDS} FROM price_intervals WHERE valid_to IS NULL"
        ).fetchall()
    at = last + timedelta(hours=1)
    rng = random.Random(seed)
    by_provider: dict[str, list[PriceRecord]] = {}
    moved = 0
    for row in rows:
        record = _record(row)
        if record.provider in CHANGING and rng.random() < changed:
            factor = Decimal(str(round(rng.uniform(0.9, 1.1), 3)))
            price = (record.price_per_hour * factor).quantize(Decimal("0.000001"))
            record = _replace_price(record, price)
            moved += 1
        by_provider.setdefault(record.provider, []).append(record)
    with duckdb.connect(str(store)) as con:
        # big_store.py inserts its runs with ids of its own, past the sequence's next value.
        taken = con.execute("SELECT max(run_id) FROM runs").fetchall()[0][0]
        while con.execute("SELECT nextval('run_ids')").fetchall()[0][0] < taken:
            pass
    target = Store(store)
    for provider, records in sorted(by_provider.items()):
        target.write_run(provider, records, started_at=at, observed_at=at, regions=None)
    return at, moved


def _record(row: tuple[Any, ...]) -> PriceRecord:
    (provider, region, zone, itype, kind, term, payment, klass, currency, price, upfront,
     model, count, memory, vcpus, host_memory, available) = row  # fmt: skip
    return PriceRecord(
        provider=provider,
        region=region,
        zone=zone,
        instance_type=itype,
        price_kind=kind,
        term_months=term,
        payment_option=payment,
        offering_class=klass,
        currency=currency,
        price_per_hour=Decimal(price),
        upfront_total=Decimal(upfront) if upfront is not None else None,
        gpu_model=model,
        gpu_count=count,
        gpu_memory_gib=memory,
        vcpus=vcpus,
        memory_gib=host_memory,
        available=available,
    )


def _replace_price(record: PriceRecord, price: Decimal) -> PriceRecord:
    import dataclasses

    return dataclasses.replace(record, price_per_hour=price)


def describe(report: Report, at: datetime) -> list[str]:
    month = f"{at:%Y-%m}"
    files = Counter(
        ("runs" if name.startswith("runs/") else name.rsplit("/", 1)[1].split("-")[0])
        for name in report.written
    )
    current = sorted(p for p, m in report.partitions if m == month)
    older = sorted(f"{p}/{m}" for p, m in report.partitions if m != month)
    return [
        f"  files rewritten: {len(report.written)} ({dict(sorted(files.items()))}), "
        f"{report.rows:,} rows; {report.unchanged} file groups untouched",
        f"  partitions of the current month ({month}) rewritten: {len(current)} {current}",
        f"  older partitions with a file rewritten: {len(older)} {older}",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=DEFAULT_ROWS)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--changed", type=float, default=0.01)
    parser.add_argument("--keep", type=Path, help="work here and keep it (default: a temp dir)")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-export-"))
    work.mkdir(parents=True, exist_ok=True)
    store = work / "history.duckdb"
    took, _ = timed(lambda: build(store, args.rows))
    print(f"store: {args.rows:,} change-rows built in {took[0]:.0f} s ({_mib(store)} MiB)")
    pairs, report = full_runs(store, work, args.runs)
    for base, ours in pairs:
        print(
            f"full export: {ours[0]:.1f} s wall, {ours[1]:.1f} s CPU; DuckDB COPY: "
            f"{base[0]:.1f} s wall, {base[1]:.1f} s CPU; ratio {ours[0] / base[0]:.2f}x wall, "
            f"{ours[1] / base[1]:.2f}x CPU"
        )
    wall = statistics.median(o[0] / b[0] for b, o in pairs)
    cpu = statistics.median(o[1] / b[1] for b, o in pairs)
    print(f"full export / COPY, median of {len(pairs)}: {wall:.2f}x wall, {cpu:.2f}x CPU")
    print(
        f"  {len(report.written)} files, {report.rows:,} rows, {len(report.partitions)} partitions"
    )
    target = work / f"export-{args.runs - 1}"
    again, second = timed(lambda: export(store, open_target(str(target))))
    print(
        f"second export, nothing new: {again[0]:.1f} s wall, {again[1]:.1f} s CPU, "
        f"{len(second.written)} files written"
    )
    (collected, at_moved) = timed(lambda: hourly_collection(store, args.changed))
    at, moved = at_moved
    print(
        f"hourly collection at {at:%Y-%m-%d %H:%M} UTC: {moved} prices moved "
        f"({', '.join(CHANGING)}), stored in {collected[0]:.1f} s"
    )
    took, hourly = timed(lambda: export(store, open_target(str(target))))
    print(f"incremental export after it: {took[0]:.1f} s wall, {took[1]:.1f} s CPU")
    for line in describe(hourly, at):
        print(line)
    if not args.keep:
        shutil.rmtree(work)


def _mib(path: Path) -> str:
    return f"{path.stat().st_size / 2**20:,.0f}"


if __name__ == "__main__":
    main()
