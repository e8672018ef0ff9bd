"""`gpu-tracker index` over a long history: a 365-day market index for every GPU model, both
price kinds and every segment, against the same statistics written by hand in DuckDB on a flat
table of the same rows, measured in the same run.

The store comes from `big_store.py` (25 million change-rows by default; its `flat_prices` table
holds the rows of the `prices` view computed once). Per run, alternately, each in a fresh child
process (so its peak RSS is its own): the hand query on `flat_prices` (each interval spread
over the days at whose end it holds, k from a table computed in Python; a calendar of days
joined to the intervals by their bounds took 25 times as long) and
`storage.reads.index.read.index` on the views. Each figure is the median over the runs of the
ratio to the baseline measured just before it, in wall-clock and CPU time, with each side's
peak RSS. Target: within 2x. The two answers are compared value by value.

    python bench/bench_index.py [--rows 25000000] [--runs 3] [--store PATH [--reuse]]
"""

from __future__ import annotations

import hashlib
import json
import math
import resource
import statistics
import subprocess
import sys
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import big_store
import duckdb

from storage.reads.index import read

DAYS = 365
HYPERSCALERS = "'aws', 'gcp', 'azure', 'oci', 'tencent', 'alibaba'"

# What a person would write against a flat table: per day the intervals holding at its end (a
# past day at the next 00:00 UTC: from the day it starts to the day before it ends; today at
# now), one vote per provider, the median of votes. Days are UTC days since 1970, from the
# microseconds (casting to DATE in the session's time zone, or a range of dates, took twice
# the time).
HAND = f"""
WITH offers AS (
    SELECT provider, gpu_model, gpu_memory_gib, price_kind, price_per_gpu_hour_usd AS usd,
           valid_from, valid_to,
           CASE WHEN provider IN ({HYPERSCALERS}) THEN 'hyperscaler'
                WHEN provider = 'vastai' OR (provider = 'runpod'
                     AND instance_type LIKE 'community/%') THEN 'marketplace'
                ELSE 'neocloud' END AS segment
    FROM flat_prices
    WHERE price_kind IN ('on_demand', 'spot') AND available IS NOT false
      AND gpu_model IS NOT NULL AND price_per_gpu_hour_usd IS NOT NULL
      AND valid_from <= $now AND (valid_to IS NULL OR valid_to >= $first)
), held AS (
    SELECT unnest(range(greatest(epoch_us(valid_from) // 86400000000, $first_n),
                        least(coalesce(epoch_us(valid_to) // 86400000000, $today_n),
                              $today_n))) AS day_n, *
    FROM offers
    UNION ALL
    SELECT $today_n AS day_n, * FROM offers
    WHERE valid_from <= $now AND (valid_to IS NULL OR valid_to > $now)
), votes AS (
    SELECT day_n, gpu_model, gpu_memory_gib, price_kind, segment, provider,
           quantile_disc(usd, 0.5) AS vote
    FROM (SELECT * EXCLUDE (segment), unnest(['all', segment]) AS segment FROM held)
    GROUP BY ALL
), agg AS (
    SELECT day_n, gpu_model, gpu_memory_gib, price_kind, segment, count(*) AS n,
           list(vote ORDER BY vote) AS v
    FROM votes GROUP BY ALL
)
SELECT DATE '1970-01-01' + CAST(day_n AS INTEGER), gpu_model, gpu_memory_gib, price_kind,
       segment, v[(n + 1) // 2], n,
       CASE WHEN k.k > 0 THEN v[k.k] END, CASE WHEN k.k > 0 THEN v[n - k.k + 1] END, n < 3
FROM agg JOIN (SELECT unnest($ns) AS n, unnest($ks) AS k) k USING (n)
"""


def ranks(most: int = 100) -> tuple[list[int], list[int]]:
    """k for n = 1..most: the largest k with P(Binomial(n, 1/2) < k) <= 0.025 (0: none)."""
    ks = []
    for n in range(1, most + 1):
        total, k = 0, 0
        while k <= n and (total + math.comb(n, k)) * 40 <= 2**n:  # P(X <= k) <= 1/40
            total += math.comb(n, k)
            k += 1
        ks.append(k)
    return list(range(1, most + 1)), ks


def _child(side: str, path: Path, now: datetime) -> None:
    wall, cpu = time.perf_counter(), time.process_time()
    days = read.days_of(now - timedelta(days=DAYS - 1), now, now)
    if side == "ours":
        rows = [tuple(r) for r in read.index(path, read.IndexFilters(segment=None), days)]
    else:
        ns, ks = ranks()
        epoch = date(1970, 1, 1)
        first_n, today_n = (days.first - epoch).days, (days.today - epoch).days
        midnight = datetime.combine(days.first, datetime.min.time(), UTC)
        params = {"now": now, "first": midnight, "first_n": first_n, "today_n": today_n}
        params |= {"ns": ns, "ks": ks}
        with duckdb.connect(str(path), read_only=True) as con:
            con.execute("SET TimeZone = 'UTC'")
            rows = [tuple(r) for r in con.execute(HAND, params).fetchall()]
    took = (time.perf_counter() - wall, time.process_time() - cpu)
    digest = hashlib.sha256(repr(sorted(map(_plain, rows))).encode()).hexdigest()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"wall": took[0], "cpu": took[1], "rss_mb": rss, "rows": len(rows),
                      "digest": digest}))  # fmt: skip


def _plain(row: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(str(v) if not isinstance(v, float) else round(v, 9) for v in row)


def _run(side: str, path: Path, now: datetime) -> dict[str, Any]:
    args = [sys.executable, __file__, "--child", side, str(path), now.isoformat()]
    done = subprocess.run(args, capture_output=True, text=True, check=True)
    found: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return found


def _measure(path: Path, runs: int) -> None:
    now = datetime.now(UTC)
    print(f"{DAYS}-day index, every GPU model, both kinds, every segment, as of {now:%Y-%m-%d}")
    walls, cpus, pairs = [], [], []
    for _ in range(runs):
        hand = _run("hand", path, now)
        ours = _run("ours", path, now)
        walls.append(ours["wall"] / hand["wall"])
        cpus.append(ours["cpu"] / hand["cpu"])
        pairs.append((hand, ours))
        agree = "agree" if hand["digest"] == ours["digest"] else "DIFFER"
        print(f"  hand {hand['wall']:.2f} s wall, {hand['cpu']:.2f} s CPU, "
              f"{hand['rss_mb']:.0f} MB; index {ours['wall']:.2f} s wall, {ours['cpu']:.2f} s "
              f"CPU, {ours['rss_mb']:.0f} MB; {ours['rows']:,} values; {agree}")  # fmt: skip
    print(f"ratio: {statistics.median(walls):.2f}x wall ({min(walls):.2f}-{max(walls):.2f}), "
          f"{statistics.median(cpus):.2f}x CPU; peak RSS hand "
          f"{max(p[0]['rss_mb'] for p in pairs):.0f} MB, index "
          f"{max(p[1]['rss_mb'] for p in pairs):.0f} MB (target: within 2x)")  # fmt: skip


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        _child(sys.argv[2], Path(sys.argv[3]), datetime.fromisoformat(sys.argv[4]))
        return
    big_store.bench_main(__doc__.splitlines()[0], _measure, runs=3, name="bench-index")


if __name__ == "__main__":
    main()
