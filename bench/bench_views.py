"""The `prices` view over a long history, against the same query on a flat table of its rows.

A store of `--rows` change-rows (25 million by default, built by big_store.py) holds beside its
history the plain table `flat_prices`: every row of `prices` with its columns computed once.
Two aggregates run against both, alternately, on one read-only connection, so each view figure
has a flat baseline measured in the same run:

- monthly: the average USD price per GPU-hour per provider, GPU model and month;
- full history: per provider, GPU model and price kind, the row count, the average USD price
  per GPU-hour and the lowest USD price per hour over every interval.

Reported per query: the medians of wall-clock and CPU time (every thread of the process), and
the median of the per-run ratios view / flat. Target: within 1.2x. `--before` adds the view as
it was (two correlated rate lookups per row, the reference of tests/storage/test_usd_conversion)
for comparison.

    python bench/bench_views.py [--rows 25000000] [--runs 5] [--store PATH] [--before]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from big_store import DEFAULT_ROWS, build

from storage.connection import connect

QUERIES = {
    "monthly": """
        SELECT provider, gpu_model, date_trunc('month', valid_from) AS month,
               avg(price_per_gpu_hour_usd) AS usd_per_gpu_hour
        FROM {table} GROUP BY ALL""",
    "full history": """
        SELECT provider, gpu_model, price_kind, count(*) AS intervals,
               avg(price_per_gpu_hour_usd) AS usd_per_gpu_hour,
               min(price_per_hour_usd) AS lowest_usd_per_hour
        FROM {table} GROUP BY ALL""",
}


def _timed(fn: Callable[[], Any]) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def _same(con: Any, sql: str) -> None:
    """The view and the flat table answer alike (averages to 1e-9 relative: the rows are summed
    in another order)."""
    view, flat = (
        sorted(con.execute(sql.format(table=table)).fetchall(), key=repr)
        for table in ("prices", "flat_prices")
    )
    alike = len(view) == len(flat) and all(
        a == b or (isinstance(a, float) and math.isclose(a, b, rel_tol=1e-9))
        for row, other in zip(view, flat, strict=True)
        for a, b in zip(row, other, strict=True)
    )
    if not alike:
        raise SystemExit("the view and the flat table disagree")


def measure(
    store: Path, runs: int, before: bool
) -> dict[str, dict[str, list[tuple[float, float]]]]:
    tables = ["flat_prices", "prices"] + (["old_prices"] if before else [])
    figures: dict[str, dict[str, list[tuple[float, float]]]] = {}
    with connect(store, read_only=True) as con:
        if before:
            sys.path.insert(0, str(Path(__file__).parents[1]))  # the reference lives in tests
            from tests.storage.test_usd_conversion import OLD_PRICES

            con.execute(f"CREATE TEMP VIEW old_prices AS {OLD_PRICES}")
        for name, sql in QUERIES.items():
            _same(con, sql)
            figures[name] = {table: [] for table in tables}
            for _ in range(runs):
                for table in tables:
                    query = sql.format(table=table)
                    figures[name][table].append(_timed(lambda q=query: con.execute(q).fetchall()))
    return figures


def report(figures: dict[str, dict[str, list[tuple[float, float]]]]) -> None:
    for name, by_table in figures.items():
        flat = by_table["flat_prices"]
        print(f"{name}:")
        for table, times in by_table.items():
            wall = statistics.median(t[0] for t in times)
            cpu = statistics.median(t[1] for t in times)
            line = f"  {table:12} wall {wall:7.3f} s  cpu {cpu:7.3f} s"
            if table != "flat_prices":
                ratio_wall = statistics.median(
                    t[0] / f[0] for t, f in zip(times, flat, strict=True)
                )
                ratio_cpu = statistics.median(t[1] / f[1] for t, f in zip(times, flat, strict=True))
                line += f"  ratio to flat: wall {ratio_wall:.2f}x  cpu {ratio_cpu:.2f}x"
            print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=DEFAULT_ROWS)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--store", type=Path, help="a store big_store.py built (else built now)")
    parser.add_argument("--before", action="store_true", help="also the view as it was")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        store = args.store
        if store is None:
            began = time.perf_counter()
            store = build(Path(folder) / "big.duckdb", args.rows)
            print(f"built {args.rows:,} rows in {time.perf_counter() - began:.1f} s")
        report(measure(store, args.runs, args.before))


if __name__ == "__main__":
    main()
