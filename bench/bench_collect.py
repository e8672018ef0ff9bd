"""A whole `gpu-tracker collect --provider azure` against a plain requests walk of the same pages.

A loopback server holds a full-size Retail Prices answer (60 pages of 1,000 items over 40
regions). Both sides run as fresh processes, start-up included, alternately, so the ratio holds
when the machine's speed drifts. The collect side starts from an empty store every time (the
largest write a collection ever makes). Target: collect within 2x of the plain walk.

    python bench/bench_collect.py [--runs 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from generate import write_azure_recording

from tracker.replay import Recording, ReplayServer

HERE = Path(__file__).parent


def _timed(cmd: list[str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{cmd[:3]} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return elapsed


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
        a_times, b_times, ratios = [], [], []
        try:
            _timed(walk)  # warm-up: page cache, server threads
            for _ in range(args.runs):
                (root / "prices.duckdb").unlink(missing_ok=True)
                a = _timed([*collect, "--provider", "azure"])
                b = _timed(walk)
                a_times.append(a)
                b_times.append(b)
                ratios.append(a / b)
        finally:
            server.stop()
        print(f"azure full answer: {items} items in 60 pages, {args.runs} runs each")
        print(f"gpu-tracker collect --provider azure: median {statistics.median(a_times):.2f} s")
        print(f"plain requests walk (fetch + json):   median {statistics.median(b_times):.2f} s")
        print(
            f"ratio collect / walk: median {statistics.median(ratios):.2f}x "
            f"(min {min(ratios):.2f}, max {max(ratios):.2f}); target <= 2x"
        )


if __name__ == "__main__":
    main()
