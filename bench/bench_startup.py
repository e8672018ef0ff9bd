"""Start-up of `gpu-tracker sql "SELECT 1"` against `python -c "import duckdb;
duckdb.connect(STORE, read_only=True).sql('SELECT 1')"`, measured in the same run.

The baseline opens the same store file read-only, as `sql` must: the like-for-like figure
(an in-memory database would leave out the file's open).

Both are whole processes, started alternately (N runs of each, medians): the query is trivial,
so what is measured is start-up, the command's (click, its lazy group importing only the `sql`
module, the config, the store's read-only open) against DuckDB's own import. The target is
within 1.5x (docs/performance.md, "Start-up of a query").

    python bench/bench_startup.py [--runs 21]
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
from pathlib import Path

from storage.store import Store

BARE = "import duckdb, sys; duckdb.connect(sys.argv[1], read_only=True).sql('SELECT 1')"


def _command() -> list[str]:
    # The console script as a user runs it; `python -m tracker` where it is not installed.
    script = shutil.which("gpu-tracker", path=str(Path(sys.executable).parent))
    return [script] if script else [sys.executable, "-m", "tracker"]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _time(argv: list[str], cwd: Path) -> tuple[float, float]:
    """Wall-clock seconds of one whole process and the CPU seconds it used (user + system):
    on a shared machine the CPU time is the steadier of the two."""
    env = {k: v for k, v in os.environ.items() if k != "GPU_TRACKER_DB"}
    cpu_before = _children_cpu()
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"{argv[0]} failed ({done.returncode}): {done.stderr}")
    return elapsed, _children_cpu() - cpu_before


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        work = Path(tmp)
        store = work / "prices.duckdb"
        Store(store).migrate()  # an empty store: `sql` refuses to run without one
        bare = [sys.executable, "-c", BARE, str(store)]
        command = [*_command(), "--db", str(store), "sql", "SELECT 1"]
        _time(bare, work), _time(command, work)  # warm the file cache for both
        runs: dict[str, list[tuple[float, float]]] = {"bare": [], "sql": []}
        for _ in range(args.runs):
            runs["bare"].append(_time(bare, work))
            runs["sql"].append(_time(command, work))
    print(f"runs: {args.runs} of each, alternating; medians")
    for i, figure in enumerate(("wall clock", "CPU time")):
        bare_s = statistics.median(run[i] for run in runs["bare"])
        sql_s = statistics.median(run[i] for run in runs["sql"])
        print(
            f"{figure + ':':<11} bare duckdb, same store {bare_s * 1000:6.1f} ms, "
            f'gpu-tracker sql "SELECT 1" {sql_s * 1000:6.1f} ms, ratio {sql_s / bare_s:.2f}x'
        )
    print("target: gpu-tracker sql within 1.5x of the bare process")


if __name__ == "__main__":
    main()
