"""`gpu-tracker reparse` of 1,000 hourly collections, against the writes that made them.

Lambda's answer (the demo's recorded `instance-types` answer: 18 instance types) drifts from
hour to hour over ten regions: each hour a few types change price and a few regions gain or
lose capacity for a type. Each of the hourly collections is written through the normal path,
as `collect` writes it after its fetch: the answer kept (`storage.raw`), parsed, written with
its held check; that total is timed. Then `reparse` of the whole history is timed (reading
and checking every kept file, parsing again, taking the history back and merging every run
again), and the history is checked to come out equal row for row.

Target: the reparse within 2x of the original writes, in the same run. Reported in wall-clock
and CPU time (steadier on a shared machine).

    python bench/bench_reparse.py [--runs 1000] [--seed 7]
"""

from __future__ import annotations

import argparse
import copy
import json
import logging
import random
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parents[1]))

from collectors.lambdalabs import PAYLOAD_KEY, LambdaCollector
from storage.query import query
from storage.raw import RawStore
from storage.store import Store
from storage.writes.answer import write_args
from tracker import config as config_mod
from tracker.collecting.reparse import raw_folder, reparse

T0 = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)
ANSWER = Path(__file__).parents[1] / "tracker/demo_data/lambdalabs/instance-types.json"
REGIONS = [f"us-region-{n}" for n in range(10)]


def answers(runs: int, seed: int) -> list[bytes]:
    """The hourly answers as received: JSON text, drifting."""
    rng = random.Random(seed)
    body: dict[str, Any] = json.loads(ANSWER.read_text())
    data = body["data"]
    for entry in data.values():
        entry["regions_with_capacity_available"] = [
            {"name": r, "description": r} for r in rng.sample(REGIONS, 5)
        ]
    out = []
    for _ in range(runs):
        for entry in data.values():
            if rng.random() < 0.03:
                entry["instance_type"]["price_cents_per_hour"] = rng.choice((99, 129, 249, 3192))
            if rng.random() < 0.05:
                names = {r["name"] for r in entry["regions_with_capacity_available"]}
                names ^= {rng.choice(REGIONS)}
                entry["regions_with_capacity_available"] = [
                    {"name": r, "description": r} for r in sorted(names)
                ]
        out.append(json.dumps(copy.deepcopy(body)).encode())
    return out


def _timed_writes(config: config_mod.Config, texts: list[bytes]) -> tuple[float, float]:
    c = config
    store = Store(c.store_path, fx_rates=c.fx, gpu_facts=c.gpu_facts, limits=c.limits)
    raw = RawStore(raw_folder(config))
    provider = config.providers["lambdalabs"]
    settings, _ = provider.settings({})
    wall, cpu = time.perf_counter(), time.process_time()
    for hour, text in enumerate(texts):
        at = T0 + timedelta(hours=hour)
        kept = [raw.put(PAYLOAD_KEY, text)]
        collector = LambdaCollector(settings)
        parsed = collector.parse({PAYLOAD_KEY: json.loads(text)}, observed_at=at)
        store.write_run(
            "lambdalabs",
            started_at=at,
            observed_at=at,
            suspicion=provider.suspicion,
            raw=kept,
            **write_args(parsed, collector.regions or None),
        )
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # the parser's notes on every run
    texts = answers(args.runs, args.seed)
    with tempfile.TemporaryDirectory(prefix="bench-reparse-") as tmp:
        path = Path(tmp) / "config.toml"
        path.write_text(f'[storage]\npath = "{Path(tmp) / "prices.duckdb"}"\n')
        config = config_mod.load(path)
        written = _timed_writes(config, texts)
        sql = "SELECT * FROM prices ORDER BY ALL"
        before = query(config.store_path, sql).rows
        wall, cpu = time.perf_counter(), time.process_time()
        done = reparse(config)
        rebuilt = time.perf_counter() - wall, time.process_time() - cpu
        assert query(config.store_path, sql).rows == before, "the history changed"
        intervals, files = len(before), len(list(RawStore(raw_folder(config)).files()))
    (r,) = done.rebuilt
    print(f"{args.runs} hourly runs, {intervals} intervals, {files} distinct answers kept")
    print(f"writes:  {written[0]:7.2f} s wall  {written[1]:7.2f} s CPU")
    print(f"reparse: {rebuilt[0]:7.2f} s wall  {rebuilt[1]:7.2f} s CPU  ({r.runs} runs replayed)")
    ratio = rebuilt[0] / written[0], rebuilt[1] / written[1]
    print(f"reparse / writes: {ratio[0]:.2f}x wall, {ratio[1]:.2f}x CPU (target <= 2x)")


if __name__ == "__main__":
    main()
