"""`gpu-tracker tco` over a long history, against the same question written by hand in DuckDB on a
flat table of the same rows, measured in the same run.

The store comes from `big_store.py` (25 million change-rows by default; its `flat_prices` table
holds the rows of the `prices` view computed once). Per case and run, alternately, each in
a fresh process of its own: the hand query on `flat_prices` (a read-only connection, every row
fetched) and `storage.reads.tco.read` on the views (the same, plus its count of the offers left
out and why). Each figure is the median over the runs of the ratio to the baseline measured
just before it, in wall-clock and CPU time, and the median peak RSS of each process (imports
included). Target: within 1.5x in time and 1.2x in memory. The two answers are compared too
(every candidate's total), so the baseline answers the same question.

    python bench/bench_tco.py [--rows 25000000] [--runs 5] [--store PATH [--reuse]]
"""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import big_store

from storage.connection import connect
from storage.reads.tco import OFFER_KEY, Need, read

KEY = ", ".join(OFFER_KEY)
CKEY = ", ".join(f"c.{k}" for k in OFFER_KEY)

# What a person would write against a flat table: the current rows of the GPU, fresh (the last
# good run of the provider is recent and confirmed them), available, priced in USD; the
# formulas of docs/decide.md. {spot} is the spot price to plan with.
HAND = f"""
WITH last_ok AS (
    SELECT provider, max(finished_at) AS fin, max(observed_at) AS obs, any_value(interval_seconds)
           AS iv
    FROM runs WHERE status = 'ok' GROUP BY provider
), c AS (
    SELECT f.* FROM flat_prices f JOIN last_ok l USING (provider)
    WHERE f.valid_to IS NULL AND lower(f.gpu_model) = lower($gpu)
      AND coalesce(f.available, true) AND f.price_per_hour_usd IS NOT NULL
      AND f.last_seen >= l.obs AND epoch(now()) - epoch(l.fin) <= 2 * coalesce(l.iv, 3600)
){{stats}}
SELECT {CKEY}, round(ceil(round($n / c.gpu_count, 6)) * CASE c.price_kind
           WHEN 'on_demand' THEN c.price_per_hour_usd * 730 * $m * $u
           WHEN 'spot' THEN {{spot}} * 730 * $m * $u * 1.1
           ELSE ceil($m / c.term_months) * c.price_per_hour_usd * 730 * c.term_months END, 2)
           AS total
FROM c {{join}}
ORDER BY total
"""

# The spot series' time-weighted p95 of the USD price over the window, by hand.
P95 = f""", clipped AS (
    SELECT {KEY}, price_per_hour_usd AS p,
           epoch_us(least(coalesce(valid_to, $until), $until))
               - epoch_us(greatest(valid_from, $since)) AS us
    FROM flat_prices
    WHERE price_kind = 'spot' AND lower(gpu_model) = lower($gpu)
      AND valid_from < $until AND coalesce(valid_to, $until) > $since
      AND price_per_hour_usd IS NOT NULL
), held AS (
    SELECT {KEY}, p, sum(us) AS us FROM clipped GROUP BY ALL
), walked AS (
    SELECT *, sum(us) OVER (PARTITION BY {KEY} ORDER BY p) AS upto,
              sum(us) OVER (PARTITION BY {KEY}) AS total
    FROM held
), p95 AS (
    SELECT {KEY}, min(p) FILTER (WHERE 20 * upto >= 19 * total) AS p95 FROM walked GROUP BY ALL
)"""
# A spot series' p95 is joined with NULL-safe keys (USING would lose the NULL zones).
P95_JOIN = "LEFT JOIN p95 s ON " + " AND ".join(
    f"s.{k} IS NOT DISTINCT FROM c.{k}" for k in OFFER_KEY
)

CASES: dict[str, tuple[Need, str, str, str]] = {
    "A100, 8 GPUs, 36 months (the defaults)": (Need("A100"), "", "c.price_per_hour_usd", ""),
    "H100, 64 GPUs, 12 months at 60 %": (
        Need("H100", gpus=64, months=12, utilization=0.6),
        "",
        "c.price_per_hour_usd",
        "",
    ),
    "H100, spot at its 30-day p95": (
        Need("H100", spot_basis="p95"),
        P95,
        "coalesce(s.p95, c.price_per_hour_usd)",
        P95_JOIN,
    ),
}


def _hand(path: Path, need: Need, stats: str, spot: str, join: str) -> list[tuple[Any, ...]]:
    now = datetime.now(UTC)
    params = {"gpu": need.gpu, "n": need.gpus, "m": need.months, "u": need.utilization}
    if stats:
        params |= {"since": now - timedelta(seconds=need.spot_window_s), "until": now}
    sql = HAND.format(stats=stats, spot=spot, join=join)
    with connect(path, read_only=True) as con:
        return list(con.execute(sql, params).fetchall())


def _same(ours: list[list[Any]], hand: list[list[Any]]) -> bool:
    mine = {tuple(r[:-1]): r[-1] for r in ours}
    theirs = {tuple(r[:-1]): r[-1] for r in hand}
    return mine.keys() == theirs.keys() and all(
        math.isclose(mine[k], theirs[k], rel_tol=1e-9, abs_tol=0.011) for k in mine
    )


def _child(side: str, case: int, path: Path) -> None:
    """One side of one case, alone in this process: its wall and CPU seconds and its answer (the
    offer keys and totals) as one JSON line on stdout."""
    need, stats, spot, join = list(CASES.values())[case]
    wall, cpu = time.perf_counter(), time.process_time()
    if side == "hand":
        answer = [list(r) for r in _hand(path, need, stats, spot, join)]
    else:
        answer = [[r[k] for k in OFFER_KEY] + [r["total_usd"]] for r in read(path, need).rows]
    seconds = (time.perf_counter() - wall, time.process_time() - cpu)
    print(json.dumps({"wall": seconds[0], "cpu": seconds[1], "answer": answer}))


def _spawn(side: str, case: int, path: Path) -> tuple[float, float, float, list[list[Any]]]:
    """Run `_child` in a fresh process: (wall s, CPU s, peak RSS MiB, answer). Each side in a
    process of its own, so its peak memory is its own (imports included, a few MiB)."""
    argv = [sys.executable, __file__, "--child", side, str(case), str(path)]
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    out = child.stdout.read() if child.stdout else ""
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"{side} of case {case} failed ({child.returncode})")
    found = json.loads(out)
    return found["wall"], found["cpu"], usage.ru_maxrss / 1024, found["answer"]


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        _child(sys.argv[2], int(sys.argv[3]), Path(sys.argv[4]))
        return
    big_store.bench_main(__doc__.splitlines()[0], _measure, runs=5, name="bench-tco")


def _measure(path: Path, runs: int) -> None:
    print("case: median s (hand on flat_prices / tco on the views); ratio wall (min-max); CPU;")
    print("      peak RSS MiB (hand / tco), ratio")
    for case, label in enumerate(CASES):
        walls, cpus, seconds, rss = [], [], [], []
        agree, candidates = True, 0
        for _ in range(runs):
            base_wall, base_cpu, base_rss, hand = _spawn("hand", case, path)
            wall, cpu, own_rss, ours = _spawn("tco", case, path)
            walls.append(wall / base_wall)
            cpus.append(cpu / base_cpu)
            seconds.append((base_wall, wall))
            rss.append((base_rss, own_rss))
            agree = agree and _same(ours, hand)
            candidates = len(ours)
        hand_s = statistics.median(s[0] for s in seconds)
        ours_s = statistics.median(s[1] for s in seconds)
        hand_mib = statistics.median(r[0] for r in rss)
        ours_mib = statistics.median(r[1] for r in rss)
        print(
            f"  {label}: {candidates:,} candidates; {hand_s:.3f} s / {ours_s:.3f} s; "
            f"{statistics.median(walls):.2f}x ({min(walls):.2f}-{max(walls):.2f}); "
            f"CPU {statistics.median(cpus):.2f}x; {hand_mib:.0f} / {ours_mib:.0f} MiB, "
            f"{ours_mib / hand_mib:.2f}x; answers {'agree' if agree else 'DIFFER'}"
        )


if __name__ == "__main__":
    main()
