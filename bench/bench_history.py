"""`gpu-tracker history`'s statistics over a long history, against the same statistics written by
hand in DuckDB on a flat table of the same rows, measured in the same run.

The store comes from `big_store.py` (25 million change-rows by default; its `flat_prices` table
holds the rows of the `prices` view computed once). Per case and run, alternately: the hand
query on `flat_prices` (a fresh read-only connection, every row fetched) and
`storage.reads.series.statistics` on the `prices` view (the same). Each figure is the median over
the runs of the ratio to the baseline measured just before it, in wall-clock and CPU time.
Target: within 2x. The two answers are compared too, so the baseline answers the same question.

    python bench/bench_history.py [--rows 25000000] [--runs 5] [--store PATH [--reuse]]
"""

from __future__ import annotations

import math
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import big_store

from storage.connection import connect
from storage.reads.series import SeriesFilters, Window
from storage.reads.series import statistics as series_statistics

KEY = (
    "provider, region, zone, instance_type, price_kind, term_months, payment_option, offering_class"
)

# What a person would write against a flat table: clip each interval to the window, sum what
# needs no order per series, and walk each series' prices in order for the quantiles, keyed by a
# hash of the series (as storage.reads.series does; carrying the nine key columns through the
# sort takes twice the time and five times the memory).
HAND = f"""
WITH c AS (
    SELECT {KEY}, currency, price_per_hour AS p, price_per_hour_usd AS u, valid_from, valid_to,
           epoch_us(least(coalesce(valid_to, $until), $until))
               - epoch_us(greatest(valid_from, $since)) AS us,
           hash({KEY}, currency) AS h
    FROM flat_prices
    WHERE valid_from < $until AND coalesce(valid_to, $until) > $since {{where}}
), s AS (
    SELECT {KEY}, currency, any_value(h) AS h, sum(us) AS us, min(p) AS lo, max(p) AS hi,
           sum(p * us) AS pus, count(*) FILTER (WHERE valid_from > $since) AS ch,
           any_value(p) FILTER (WHERE valid_to IS NULL) AS cur,
           CASE WHEN count(*) FILTER (WHERE u IS NULL) = 0 THEN sum(u * us) END AS uus
    FROM c GROUP BY ALL
), w AS (
    SELECT h, p, sum(us) OVER (PARTITION BY h ORDER BY p) AS upto,
           sum(us) OVER (PARTITION BY h) AS total
    FROM (SELECT h, p, sum(us) AS us FROM c GROUP BY ALL)
), q AS (
    SELECT h, min(p) FILTER (WHERE 2 * upto >= total) AS p50,
           min(p) FILTER (WHERE 20 * upto >= 19 * total) AS p95
    FROM w GROUP BY h
)
SELECT {KEY}, currency, round(us / 3600e6, 6), lo, hi, round(pus / us, 6), p50, p95, ch, cur,
       round(uus / us, 6)
FROM s JOIN q USING (h)
"""

CASES: dict[str, tuple[timedelta, SeriesFilters, str]] = {
    "30 days, every series (the default window)": (timedelta(days=30), SeriesFilters(), ""),
    "2 years, every series (the whole history)": (timedelta(days=740), SeriesFilters(), ""),
    "90 days, H100 spot": (
        timedelta(days=90),
        SeriesFilters(gpu="H100", kind="spot"),
        "AND lower(gpu_model) = 'h100' AND price_kind = 'spot'",
    ),
}


def _timed(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, result


def _hand(path: Path, window: Window, where: str) -> list[tuple[Any, ...]]:
    with connect(path, read_only=True) as con:
        params = {"since": window.since, "until": window.until}
        return list(con.execute(HAND.format(where=where), params).fetchall())


def _same(ours: list[Any], hand: list[tuple[Any, ...]]) -> bool:
    """The two answers agree series by series (below_share is not asked)."""

    def plain(row: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(round(v, 4) if isinstance(v, float) else v for v in row)

    def key(row: tuple[Any, ...]) -> str:
        return repr(row[:9])

    flat = [tuple(r.flat().values()) for r in ours]  # the key columns, then the statistics
    mine = sorted((plain((*r[:17], r[18])) for r in flat), key=key)
    theirs = sorted((plain(r) for r in hand), key=key)
    return len(mine) == len(theirs) and all(
        a == b or (isinstance(a, float) and math.isclose(a, b, rel_tol=1e-6))
        for x, y in zip(mine, theirs, strict=True)
        for a, b in zip(x, y, strict=True)
    )


def main() -> None:
    big_store.bench_main(__doc__.splitlines()[0], _measure, runs=5, name="bench-history")


def _measure(path: Path, runs: int) -> None:
    now = datetime.now(UTC)
    print("case: median s (hand on flat_prices / history on prices); ratio wall (min-max); CPU")
    for label, (span, filters, where) in CASES.items():
        window = Window(now - span, now)
        walls, cpus, seconds = [], [], []
        agree, series = True, 0
        for _ in range(runs):
            base_wall, base_cpu, hand = _timed(lambda w=window, x=where: _hand(path, w, x))
            wall, cpu, ours = _timed(lambda w=window, f=filters: series_statistics(path, f, w))
            walls.append(wall / base_wall)
            cpus.append(cpu / base_cpu)
            seconds.append((base_wall, wall))
            agree = agree and _same(ours, hand)
            series = len(ours)
        hand_s = statistics.median(s[0] for s in seconds)
        ours_s = statistics.median(s[1] for s in seconds)
        print(
            f"  {label}: {series:,} series; {hand_s:.3f} s / {ours_s:.3f} s; "
            f"{statistics.median(walls):.2f}x ({min(walls):.2f}-{max(walls):.2f}); "
            f"CPU {statistics.median(cpus):.2f}x; answers {'agree' if agree else 'DIFFER'}"
        )


if __name__ == "__main__":
    main()
