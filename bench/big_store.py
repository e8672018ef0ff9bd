"""A store holding a long price history, built in bulk, for the benchmarks that read history.

`build(path, rows, seed)` migrates a fresh store with the project's own code, keeps [fx] rates
for CNY over the whole span, then generates `rows` change-rows with DuckDB SQL straight into the
internal interval table: offers of six providers (Tencent and Alibaba priced in CNY) taken from
the GPU table, on-demand, spot and reserved (AWS: three payment options, two offering classes),
spread over two years; spot series change often, on-demand and reserved rarely. Rows lie series
by series, not in time order (sorting 25 million wide rows would cost most of the build); the
flat table holds them in the same order, so a comparison is fair. Prices are
hash-seeded around list prices, so a seed gives the same store every time. One completed run
per provider confirms the open intervals, so `latest_prices` calls none of them stale for a day.
The intervals' computed columns are then stored as the writes would have stored them
(`storage.writes.derived.derive`).

Beside the history, the plain table `flat_prices` holds the same rows with every column of the
`prices` view computed once: the hand-written baseline a query over the views is compared with.

    python bench/big_store.py STORE.duckdb [--rows 25000000] [--seed 7]
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa

from collectors.gpus import GPU_MODELS, INSTANCE_GPUS
from storage.connection import connect, scalar, transaction
from storage.fx import FxRate, GpuFact, replace_gpu_facts, replace_rates
from storage.migrations import migrate
from storage.writes.derived import derive

DEFAULT_ROWS = 25_000_000
SPAN = timedelta(days=730)
# The last collection, and a day's interval so a store built today is not stale tomorrow.
RUN_INTERVAL_S = 86_400
ROWS_PER_OFFER = 1_000  # on average: sets how many offers a store of `rows` holds

PROVIDERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "aws": ("USD", ("us-east-1", "us-west-2", "eu-west-1", "ap-northeast-1")),
    "azure": ("USD", ("eastus", "westeurope", "japaneast")),
    "gcp": ("USD", ("us-central1", "europe-west4")),
    "lambdalabs": ("USD", ("us-east-1",)),
    "tencent": ("CNY", ("ap-guangzhou", "ap-shanghai", "ap-beijing")),
    "alibaba": ("CNY", ("cn-hangzhou", "cn-beijing")),
}
CNY_PER_USD = 7.1
# Rough on-demand USD per GPU-hour, the centre prices are drawn around.
GPU_HOUR_USD = {"B200": 6.0, "H200": 4.5, "H100": 4.0, "GH200": 3.5, "A100": 3.0, "MI300X": 3.5}
OTHER_GPU_HOUR_USD = 1.2
# Relative number of changes per series: spot moves all the time, list prices rarely.
WEIGHT = {"spot": 40, "on_demand": 2, "reserved": 1}
AWS_RESERVED = [
    (term, option, klass)
    for term in (12, 36)
    for option in ("no_upfront", "partial_upfront", "all_upfront")
    for klass in ("standard", "convertible")
]
FEATURED = ("p4d.24xlarge", "p5.48xlarge")
UPFRONT_SHARE = {"no_upfront": 0.0, "partial_upfront": 0.5, "all_upfront": 1.0}

_INTERVALS = """
INSERT INTO price_intervals BY NAME
WITH series AS (
    SELECT o.*, unnest(range(o.n)) AS seq FROM offers o
), timed AS (
    SELECT *,
           $start + to_microseconds(CAST(first_s * 1e6 + seq * step_s * 1e6 AS BIGINT)) AS t0,
           $start + to_microseconds(CAST(first_s * 1e6 + (seq + 1) * step_s * 1e6 AS BIGINT))
               AS t1,
           (hash(offer_id, seq, $seed) % 1000000) / 1e6 AS u
    FROM series
)
SELECT concat_ws('|', provider, region, coalesce(zone, ''), instance_type, price_kind,
           coalesce(CAST(term_months AS VARCHAR), ''), coalesce(payment_option, ''),
           coalesce(offering_class, ''), currency) AS offer_key,
       provider, region, zone, instance_type, price_kind, term_months, payment_option,
       offering_class, currency,
       CAST(base * CASE price_kind WHEN 'spot' THEN 0.3 + 0.4 * u
                                   ELSE 0.95 + 0.1 * u END AS DECIMAL(18, 6)) AS price_per_hour,
       CASE WHEN price_kind = 'reserved'
            THEN CAST(base * upfront_hours * (0.95 + 0.1 * u) AS DECIMAL(18, 6)) END
           AS upfront_total,
       gpu_model, gpu_count, gpu_memory_gib, vcpus, memory_gib,
       t0 AS valid_from,
       CASE WHEN seq < n - 1 OR NOT open THEN least(t1, $observed) END AS valid_to,
       CASE WHEN seq < n - 1 OR NOT open THEN least(t1, $observed) ELSE $observed END
           AS last_seen,
       run_id,
       CASE WHEN u < 0.02 THEN false WHEN provider = 'aws' THEN NULL ELSE true END AS available
FROM timed
"""

_RUNS = """
INSERT INTO runs (run_id, provider, started_at, finished_at, status, records, changed, error,
                  interval_seconds, observed_at)
SELECT run_id, provider, $observed, now(), 'ok', count(*) FILTER (WHERE open), 0, NULL,
       $interval, $observed
FROM offers GROUP BY run_id, provider
"""


def build(path: Path | str, rows: int = DEFAULT_ROWS, seed: int = 7) -> Path:
    """A fresh store at `path` (replaced if it exists) with about `rows` price intervals and the
    plain table `flat_prices` of the same rows as the `prices` view shows them."""
    path = Path(path)
    path.unlink(missing_ok=True)
    observed = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    start = observed - SPAN
    offers = _offers(rows, seed)
    params = {"start": start, "observed": observed, "seed": seed}
    with connect(path, read_only=False) as con:
        migrate(con)
        with transaction(con):
            replace_rates(con, _cny_rates(start.date(), observed.date(), seed))
            replace_gpu_facts(con, [GpuFact(m.name, m.fp16_tflops) for m in GPU_MODELS.values()])
            con.register("offers", offers)
            con.execute(_INTERVALS, params)
            derive(con)  # what the writes stored
            con.execute(_RUNS, {"observed": observed, "interval": RUN_INTERVAL_S})
            # The run sequence goes on after the runs written here, as a real store's does, so a
            # benchmark can store collections of its own on top.
            scalar(con, "SELECT max(nextval('run_ids')) FROM range((SELECT max(run_id) FROM runs))")
            con.unregister("offers")
        con.execute("CREATE TABLE flat_prices AS SELECT * FROM prices")
        con.execute("CHECKPOINT")
    return path


def _offers(rows: int, seed: int) -> pa.Table:
    """The offers, each with its number of intervals (`n`, summing to `rows`), where its first
    interval starts and how long each lasts; about `ROWS_PER_OFFER` rows each."""
    rng = random.Random(seed)
    every = [dict(o, offer_id=n) for n, o in enumerate(_every_offer(rng))]
    rng.shuffle(every)
    # The offers the docs' worked examples name are in every store, however small.
    every.sort(key=lambda o: o["instance_type"] not in FEATURED)
    chosen = every[: max(1, min(len(every), rows // ROWS_PER_OFFER))]
    weights = [WEIGHT[o["price_kind"]] * rng.uniform(0.5, 1.5) for o in chosen]
    total = sum(weights)
    counts = [max(1, int(rows * w / total)) for w in weights]
    counts[0] += rows - sum(counts)  # the rounding, so the store holds exactly `rows`
    span_s = SPAN.total_seconds()
    for offer, n in zip(chosen, counts, strict=True):
        offer["n"] = max(1, n)
        offer["open"] = rng.random() > 0.05  # one offer in twenty was withdrawn
        offer["first_s"] = rng.uniform(0, span_s / 10)
        end_s = span_s if offer["open"] else rng.uniform(span_s * 0.5, span_s)
        offer["step_s"] = (end_s - offer["first_s"]) / offer["n"]
    return pa.Table.from_pylist(chosen)


def _every_offer(rng: random.Random) -> list[dict[str, Any]]:
    out = []
    for run_id, (provider, (currency, regions)) in enumerate(PROVIDERS.items(), start=1):
        for instance_type, gpu in sorted(INSTANCE_GPUS[provider].items()):
            hourly = GPU_HOUR_USD.get(gpu.gpu_model, OTHER_GPU_HOUR_USD) * gpu.gpu_count
            if currency == "CNY":
                hourly *= CNY_PER_USD
            for region in regions:
                base = round(hourly * rng.uniform(0.85, 1.25), 4)
                common = {
                    "provider": provider,
                    "run_id": run_id,
                    "region": region,
                    "instance_type": instance_type,
                    "currency": currency,
                    "gpu_model": gpu.gpu_model,
                    "gpu_count": gpu.gpu_count,
                    "gpu_memory_gib": gpu.gpu_memory_gib,
                    "vcpus": gpu.vcpus,
                    "memory_gib": gpu.memory_gib,
                }
                out.extend(_kinds(common, base))
    return out


def _kinds(common: dict[str, Any], base: float) -> list[dict[str, Any]]:
    """On-demand, spot (per zone where the provider prices zones) and reserved of one offer."""
    none = {"zone": None, "term_months": None, "payment_option": None, "offering_class": None}
    out = [dict(common, **none, price_kind="on_demand", base=base, upfront_hours=0.0)]
    zoned = common["provider"] in ("aws", "alibaba", "tencent")
    for zone in ("a", "b", "c") if zoned else (None,):
        spot = dict(none, zone=f"{common['region']}{zone}" if zone else None)
        out.append(dict(common, **spot, price_kind="spot", base=base, upfront_hours=0.0))
    terms = AWS_RESERVED if common["provider"] == "aws" else [(12, None, None), (36, None, None)]
    for term, option, klass in terms:
        discount = 0.6 if term == 12 else 0.4
        share = UPFRONT_SHARE.get(option or "", 0.0)
        reserved = {
            "zone": None,
            "term_months": term,
            "payment_option": option,
            "offering_class": klass,
        }
        out.append(
            dict(
                common,
                **reserved,
                price_kind="reserved",
                base=round(base * discount, 4),
                upfront_hours=730.0 * term * share,
            )
        )
    return out


def _cny_rates(first: date, last: date, seed: int) -> list[FxRate]:
    """A CNY rate on the first of every month, from a month after the history starts (the first
    intervals take the oldest rate) to the last collection."""
    rng = random.Random(seed)
    rates = []
    day = date(first.year, first.month, 1) + timedelta(days=40)
    while day <= last:
        day = day.replace(day=1)
        per_usd = Decimal(str(round(CNY_PER_USD + rng.uniform(-0.25, 0.25), 4)))
        rates.append(FxRate.per_usd("CNY", day, per_usd, "bench"))
        day += timedelta(days=32)
    return rates


def bench_main(
    description: str,
    measure: Callable[[Path, int], None],
    *,
    runs: int,
    rows: int = DEFAULT_ROWS,
    name: str = "bench",
) -> None:
    """The command line every benchmark over a big store shares: --rows, --runs, --store and
    --reuse (measure a store built before), a store built in a temp dir by default, then
    `measure(path, runs)`."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--rows", type=int, default=rows)
    parser.add_argument("--runs", type=int, default=runs)
    parser.add_argument("--store", type=Path, help="where to build the store (default: a temp dir)")
    parser.add_argument("--reuse", action="store_true", help="use --store as it is")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix=f"{name}-") as tmp:
        path = args.store or Path(tmp) / "history.duckdb"
        if not (args.reuse and path.exists()):
            began = time.perf_counter()
            build(path, args.rows)
            print(f"store: {args.rows:,} rows built in {time.perf_counter() - began:.0f} s")
        measure(path, args.runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--rows", type=int, default=DEFAULT_ROWS)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    began = time.perf_counter()
    build(args.path, args.rows, args.seed)
    took = time.perf_counter() - began
    size = args.path.stat().st_size / 2**20
    print(f"{args.rows:,} intervals in {args.path} ({size:,.0f} MiB) in {took:.1f} s")


if __name__ == "__main__":
    main()
