"""Parse + store of a full collection, against a bare DuckDB bulk insert of the same rows.

A realistic full collection: every AWS GPU type in 25 regions (on-demand and 12 reserved terms
each, spot history per zone) and a full-size Azure Retail Prices answer (60 pages of 1,000
items, 40 regions): over 50,000 price records. Each figure is a median over alternating runs,
reported against its baseline measured in the same run:

- parse: seconds per 10,000 records, per provider;
- store, first write into an empty history (every record opens an interval);
- store, the next collection with the same prices (every interval extended);
- store, the next collection with 5% of prices changed;
- baseline: build the Arrow table from the same records, open a fresh DuckDB file, one
  INSERT ... SELECT of all rows, close. Target: each store write within 2x of it.

    python bench/bench_store.py [--runs 5]
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb

sys.path.insert(0, str(Path(__file__).parent))

from generate import AWS_REGIONS, aws_payloads, azure_items

from collectors.aws import AwsCollector
from collectors.azure import AzureCollector
from collectors.base import PriceRecord, ProviderSettings
from storage.store import Store, to_arrow

T0 = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)
BARE_TABLE = """CREATE TABLE bare (provider VARCHAR, region VARCHAR, zone VARCHAR,
    instance_type VARCHAR, price_kind VARCHAR, term_months INTEGER, payment_option VARCHAR,
    offering_class VARCHAR, currency VARCHAR, price_per_hour DECIMAL(18, 6),
    upfront_total DECIMAL(18, 6), gpu_model VARCHAR, gpu_count DOUBLE, gpu_memory_gib DOUBLE,
    vcpus DOUBLE, memory_gib DOUBLE, effective_at TIMESTAMPTZ, available BOOLEAN)"""


def _seconds(fn: Callable[[], Any]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


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


def _bare_insert(path: Path, records: dict[str, list[PriceRecord]]) -> None:
    with duckdb.connect(str(path)) as con:
        con.execute(BARE_TABLE)
        for rows in records.values():
            batch = to_arrow(rows)  # noqa: F841 (read by DuckDB's replacement scan)
            con.execute("INSERT INTO bare SELECT * FROM batch")


def _write_all(store: Store, records: dict[str, list[PriceRecord]], at: datetime) -> None:
    for name, rows in records.items():
        regions = AWS_REGIONS if name == "aws" else None
        store.write_run(name, rows, started_at=at, observed_at=at, regions=regions)


def _changed(records: list[PriceRecord], share: float, seed: int) -> list[PriceRecord]:
    rng = random.Random(seed)
    return [
        dataclasses.replace(r, price_per_hour=r.price_per_hour + Decimal("0.01"))
        if rng.random() < share
        else r
        for r in records
    ]


def _one_run(
    folder: Path, records: dict[str, list[PriceRecord]], changed: dict[str, list[PriceRecord]]
) -> dict[str, float]:
    store = Store(folder / "prices.duckdb")
    store.migrate()
    return {
        "bare": _seconds(lambda: _bare_insert(folder / "bare.duckdb", records)),
        "first": _seconds(lambda: _write_all(store, records, T0)),
        "same": _seconds(lambda: _write_all(store, records, T0 + timedelta(hours=1))),
        "changed5": _seconds(lambda: _write_all(store, changed, T0 + timedelta(hours=2))),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # the synthetic Azure answer names unknown SKUs on purpose
    records, per_10k = _parse(args.runs)
    total = sum(len(r) for r in records.values())
    changed = {name: _changed(rows, 0.05, 3) for name, rows in records.items()}
    figures: dict[str, list[float]] = {k: [] for k in ("bare", "first", "same", "changed5")}
    with tempfile.TemporaryDirectory(prefix="bench-store-") as tmp:
        for run in range(args.runs):
            folder = Path(tmp) / str(run)
            folder.mkdir()
            for key, seconds in _one_run(folder, records, changed).items():
                figures[key].append(seconds)
    med = {k: statistics.median(v) for k, v in figures.items()}
    print(f"records: {total} (aws {len(records['aws'])}, azure {len(records['azure'])})")
    for name, (seconds, per) in per_10k.items():
        rows = "60,000 API rows" if name == "azure" else "the whole answer"
        print(f"parse {name}: {seconds:.3f} s for {rows}, {per:.3f} s per 10,000 records")
    print(f"bare DuckDB bulk insert (baseline): {med['bare']:.3f} s")
    labels = {
        "first": "store, first write",
        "same": "store, same prices again",
        "changed5": "store, 5% of prices changed",
    }
    for key, label in labels.items():
        ratios = [a / b for a, b in zip(figures[key], figures["bare"], strict=True)]
        print(
            f"{label}: {med[key]:.3f} s, {med[key] / total * 10_000 * 1000:.1f} ms per 10,000"
            f" records; {statistics.median(ratios):.2f}x baseline"
            f" (min {min(ratios):.2f}, max {max(ratios):.2f}); target <= 2x"
        )


if __name__ == "__main__":
    main()
