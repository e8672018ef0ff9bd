"""A whole `gpu-tracker collect --provider azure` against a plain requests walk of the same pages.

A loopback server holds a full-size Retail Prices answer (60 pages of 1,000 items over 40
regions). Both sides run as fresh processes, start-up included, alternately, so the ratio holds
when the machine's speed drifts. Two collect figures: the usual run, where the store holds the
previous collection (what the daemon or a cron job does every interval), and the very first
run into an empty store (migrations and the largest write). Target: within 2x of the walk.

    python bench/bench_collect.py [--runs 5]
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from generate import write_azure_recording

from tracker.collecting.replay import Recording, ReplayServer

HERE = Path(__file__).parent


def timed(cmd: list[str]) -> tuple[float, float]:
    """Wall-clock and CPU seconds (user + system) of one command run to its end; a failed run
    stops the benchmark with its stderr."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{cmd[-5:]} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-collect-") as tmp:
        root = Path(tmp)
        items = write_azure_recording(root / "azure")
        server = ReplayServer(Recording.load(root / "azure")).start()
        url = server.url + "/api/retail/prices"
        config = root / "config.toml"
        config.write_text(
            f'[storage]\npath = "prices.duckdb"\n[providers.aws]\nenabled = false\n'
            f'[providers.azure]\nendpoint = "{url}"\n'
        )
        collect = [sys.executable, "-m", "tracker", "--config", str(config), "collect"]
        walk = [sys.executable, str(HERE / "plain_walk.py"), url]
        store = root / "prices.duckdb"
        previous = root / "previous.duckdb"
        times: dict[str, list[float]] = {"usual": [], "first": [], "walk": []}
        ratios: dict[str, list[float]] = {"usual": [], "first": []}
        try:
            timed([*collect, "--provider", "azure"])  # warm-up, and the previous collection
            shutil.copy(store, previous)
            for _ in range(args.runs):
                for kind in ("usual", "first"):
                    store.unlink()
                    if kind == "usual":
                        shutil.copy(previous, store)
                    times[kind].append(timed([*collect, "--provider", "azure"])[0])
                    times["walk"].append(timed(walk)[0])
                    ratios[kind].append(times[kind][-1] / times["walk"][-1])
        finally:
            server.stop()
        print(f"azure full answer: {items} items in 60 pages, {args.runs} runs each")
        print(
            f"plain requests walk (fetch + json): median {statistics.median(times['walk']):.2f} s"
        )
        labels = {"usual": "collect, store holds the last run", "first": "collect, empty store"}
        for kind, label in labels.items():
            r = ratios[kind]
            print(
                f"{label}: median {statistics.median(times[kind]):.2f} s, "
                f"{statistics.median(r):.2f}x the walk (min {min(r):.2f}, max {max(r):.2f});"
                " target <= 2x"
            )


if __name__ == "__main__":
    main()
