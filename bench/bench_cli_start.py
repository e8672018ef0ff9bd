"""Start-up of `gpu-tracker sql` against a bare Python + DuckDB process doing the same query.

Both are whole processes, started alternately, on the same store: the figure a user feels when
a script calls `gpu-tracker sql` once per question. The bare process imports duckdb, opens the
store read-only, runs the query and prints the rows; the command does that plus its own start-up
(click, the config, the table it prints). Each figure is a median over the runs; the ratio is
what the issue set a target for (within 1.5x).

    python bench/bench_cli_start.py [--runs 15]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

from collectors.base import PriceRecord
from storage.store import Store

QUERY = "SELECT provider, count(*) AS offers FROM latest_prices GROUP BY provider ORDER BY 1"
BARE = """
import sys, duckdb
con = duckdb.connect(sys.argv[1], read_only=True)
for row in con.execute(sys.argv[2]).fetchall():
    print(*row)
con.close()
"""
T0 = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)


def _record(provider: str, i: int) -> PriceRecord:
    return PriceRecord(
        provider=provider,
        region=f"region-{i % 7}",
        zone=None,
        instance_type=f"type-{i}",
        price_kind="on_demand",
        term_months=None,
        payment_option=None,
        offering_class=None,
        currency="USD",
        price_per_hour=Decimal(1 + i % 50) / 4,
        upfront_total=None,
        gpu_model="H100",
        gpu_count=8.0,
        gpu_memory_gib=80.0,
    )


def build_store(path: Path) -> None:
    """A small store: a few hundred current offers from two providers."""
    store = Store(path)
    for provider in ("aws", "azure"):
        records = [_record(provider, i) for i in range(200)]
        store.write_run(provider, records, started_at=T0, observed_at=T0, regions=None)


def _command() -> list[str]:
    # The console script as a user runs it; `python -m tracker` where it is not installed.
    script = shutil.which("gpu-tracker", path=str(Path(sys.executable).parent))
    return [script] if script else [sys.executable, "-m", "tracker"]


def _time(argv: list[str], cwd: Path) -> tuple[float, float]:
    """Wall-clock seconds of one whole process, and the CPU seconds it used (user + system):
    on a shared machine the CPU time is the steadier of the two."""
    cpu_before = _children_cpu()
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, env=_env())
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"{argv[0]} failed ({done.returncode}): {done.stderr}")
    return elapsed, _children_cpu() - cpu_before


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "GPU_TRACKER_DB"}
    env["COLUMNS"] = "120"
    return env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-cli-") as tmp:
        work = Path(tmp)
        store = work / "prices.duckdb"
        build_store(store)
        bare = [sys.executable, "-c", BARE, str(store), QUERY]
        command = [*_command(), "--db", str(store), "sql", QUERY]
        _time(bare, work), _time(command, work)  # warm the file cache for both
        bare_runs, command_runs = [], []
        for _ in range(args.runs):
            bare_runs.append(_time(bare, work))
            command_runs.append(_time(command, work))
    print(f"runs: {args.runs} of each, alternating; medians")
    for i, figure in enumerate(("wall clock", "CPU time")):
        bare_s = statistics.median(run[i] for run in bare_runs)
        command_s = statistics.median(run[i] for run in command_runs)
        print(
            f"{figure + ':':<11} bare python + duckdb {bare_s * 1000:6.1f} ms, "
            f"gpu-tracker sql {command_s * 1000:6.1f} ms, ratio {command_s / bare_s:.2f}x"
        )
    print("target: gpu-tracker sql within 1.5x of the bare process")


if __name__ == "__main__":
    main()
