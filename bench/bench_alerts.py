"""Alert evaluation over a full-size store, against reading the current prices once.

The store holds the same full collection as bench_store.py (every AWS GPU type in 25 regions
with reserved terms and per-zone spot history, a 60,000-row Azure answer: over 50,000 offers),
collected twice a week apart with 5% of prices changed, so `price_change` and `new_low` have
history to look at. One rule of each of the seven kinds, every alert to the console channel
(written to /dev/null). Figures, medians over runs on fresh copies of the store:

- first run: the rules fire for thousands of subjects at once (state, events, one message);
- steady run: the same store evaluated again, nothing new fires (the daemon's usual case);
- baseline: open the store read-only and fetch every row of `latest_prices` into Python, the
  least a row-by-row evaluation in Python would have to do before comparing anything.

    python bench/bench_alerts.py [--runs 5]
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from bench_store import T0, _changed, _parse, _write_all

from alerts import Rule, run
from alerts.console import ConsoleNotifier
from alerts.rules import parse_rule
from collectors import REGISTRY
from collectors.gpus import GPU_MODELS
from storage.connection import connect
from storage.store import Store

RULES: list[dict[str, Any]] = [
    {"name": "spot", "kind": "spot_price_below", "threshold": 2.0, "currency": "USD"},
    {"name": "spot-discount", "kind": "spot_discount_above", "threshold": 60},
    {"name": "reserved-deal", "kind": "reserved_discount_above", "threshold": 50},
    {"name": "reserved-poor", "kind": "reserved_discount_below", "threshold": 20},
    {"name": "moved", "kind": "price_change", "threshold": 0.1, "window": "3d"},
    {"name": "low", "kind": "new_low", "window": "30d", "currency": "USD"},
    {"name": "stale", "kind": "stale_data", "window": "6h"},
]


def _rules() -> list[Rule]:
    return [
        parse_rule(
            raw,
            f"alerts.rules[{i}]",
            channels=("console",),
            default_channels=("console",),
            gpu_models=[m.name for m in GPU_MODELS.values()],
            providers=list(REGISTRY),
        )
        for i, raw in enumerate(RULES)
    ]


def _baseline(path: Path) -> int:
    with connect(path, read_only=True) as con:
        return len(con.execute("SELECT * FROM latest_prices").fetchall())


def _seconds(fn: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    result = fn()
    return time.perf_counter() - started, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # the synthetic Azure answer names unknown SKUs on purpose
    records, _ = _parse(1)
    changed = {name: _changed(rows, 0.05, 3) for name, rows in records.items()}
    rules = _rules()
    week = T0 + timedelta(days=7)
    now = week + timedelta(minutes=5)
    figures: dict[str, list[float]] = {"baseline": [], "first": [], "steady": []}
    fired = rows = 0
    with tempfile.TemporaryDirectory(prefix="bench-alerts-") as tmp, open(os.devnull, "w") as sink:
        master = Path(tmp) / "master.duckdb"
        _write_all(Store(master), records, T0)
        _write_all(Store(master), changed, week)
        channels = {"console": ConsoleNotifier(sink)}
        for n in range(args.runs):
            path = Path(tmp) / f"run-{n}.duckdb"
            shutil.copy(master, path)
            seconds, rows = _seconds(lambda p=path: _baseline(p))
            figures["baseline"].append(seconds)
            seconds, report = _seconds(lambda p=path: run(p, rules, channels, now=now))
            figures["first"].append(seconds)
            fired = len(report.fired)
            seconds, _ = _seconds(lambda p=path: run(p, rules, channels, now=now))
            figures["steady"].append(seconds)
    med = {k: statistics.median(v) for k, v in figures.items()}
    print(f"store: {rows} current offers; {len(rules)} rules; first run fires {fired} alerts")
    print(f"baseline, read latest_prices into Python: {med['baseline']:.3f} s")
    for key, label in (("first", "first run (everything fires)"), ("steady", "steady run")):
        ratios = [a / b for a, b in zip(figures[key], figures["baseline"], strict=True)]
        print(
            f"{label}: {med[key]:.3f} s; {statistics.median(ratios):.2f}x baseline"
            f" (min {min(ratios):.2f}, max {max(ratios):.2f})"
        )


if __name__ == "__main__":
    main()
