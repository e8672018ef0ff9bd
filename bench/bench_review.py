"""The periodic review over a long history: the whole review against the same review without its
"what compute costs" section, and that section's 3-year strategies read for every GPU model at
once against one TCO read per model and side (as the review read them before), in the same run.

The store comes from `big_store.py` (2 million change-rows by default); the review is six
months back from now, following every model, for the default need (8 GPUs, 36 months). Per run,
alternately: the review's reads without the section (`storage.review.read`, no need) and the
whole review (`tracker.review.build.build`), each on a fresh read-only connection; then, on one
connection, the strategies both ways (`storage.reads.tco.several` per side against
`storage.reads.tco.tco` per model and side), whose answers are compared (every model's
candidates, in order). Reported: median seconds, wall clock and CPU, and the ratios.

    python bench/bench_review.py [--rows 2000000] [--runs 5] [--store PATH [--reuse]]
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import big_store

from alerts import digest
from storage import review as stored
from storage.connection import connect
from storage.reads import tco
from tracker.config.daemon import ReviewSettings, Since
from tracker.review import compute
from tracker.review.build import build, look_back

ROWS = 2_000_000
SINCE = Since(6, "mo")
NEED = compute.need_of(ReviewSettings())


def _timed(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, result


def _without_section(path: Path, now: datetime) -> Any:
    return stored.read(path, now, look_back(now, SINCE), review_rule=digest.RULE)


def _one_per_model(con: Any, models: list[str], then: datetime) -> dict[str, Any]:
    return {
        (side, m): tco.tco(con, replace(NEED, gpu=m), as_of=as_of).rows
        for side, as_of in (("now", None), ("then", then))
        for m in models
    }


def _all_at_once(con: Any, models: list[str], then: datetime) -> dict[str, Any]:
    answers = {side: tco.several(con, models, NEED, as_of=as_of) for side, as_of in
               (("now", None), ("then", then))}  # fmt: skip
    return {(side, m): answers[side][m].rows for side in answers for m in models}


def _line(label: str, pairs: list[tuple[float, float]]) -> str:
    wall, cpu = (statistics.median(p[i] for p in pairs) for i in (0, 1))
    return f"  {label}: {wall:.2f} s (CPU {cpu:.2f} s)"


def _measure(path: Path, runs: int) -> None:
    now = datetime.now(UTC)
    then = look_back(now, SINCE)
    with connect(path, read_only=True) as con:
        models = sorted({str(r["gpu_model"]) for r in stored.cheapest(con, then) if r["gpu_model"]})
    timings: dict[str, list[tuple[float, float]]] = {}
    agree = True
    for _ in range(runs):
        for label, fn in (
            ("review without the section", lambda: _without_section(path, now)),
            ("whole review", lambda: build(path, now, SINCE)),
        ):
            wall, cpu, _ = _timed(fn)
            timings.setdefault(label, []).append((wall, cpu))
        with connect(path, read_only=True) as con:
            for label, ways in (("one read per model and side", _one_per_model),
                                ("every model at once", _all_at_once)):  # fmt: skip
                wall, cpu, found = _timed(lambda ways=ways: ways(con, models, then))
                timings.setdefault(label, []).append((wall, cpu))
            agree = agree and found == _one_per_model(con, models, then)
    print(f"review of {len(models)} GPU models, median of {runs} runs:")
    for label, pairs in timings.items():
        print(_line(label, pairs))
    whole, bare = (statistics.median(w for w, _ in timings[k]) for k in
                   ("whole review", "review without the section"))  # fmt: skip
    old, new = (statistics.median(w for w, _ in timings[k]) for k in
                ("one read per model and side", "every model at once"))  # fmt: skip
    print(f"whole review {whole / bare:.2f}x the review without the section; strategies "
          f"{old / new:.1f}x faster at once; answers {'agree' if agree else 'DIFFER'}")  # fmt: skip


def main() -> None:
    big_store.bench_main(__doc__.splitlines()[0], _measure, runs=5, rows=ROWS, name="bench-review")


if __name__ == "__main__":
    main()
