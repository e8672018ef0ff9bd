"""The total cost of ownership of a GPU need over a horizon, for every offer that can serve it:
the candidates, their totals and the blended plans, as plain rows (CONTRACT.md revision 2,
`tco`). Every formula of `gpu-tracker tco` is written here, once, in SQL:

    hours     = 730 * M
    instances = ceil(N / gpu_count)        (the quotient rounded to 6 decimals first: a 1/6
                                            share of a GPU is stored as 0.1666..., and 8 of
                                            them must make 48 instances, not 49)
    on_demand : instances * p * hours * U
    spot      : instances * p * hours * U * (1 + overhead / 100)
    reserved  : instances * ceil(M / term_months) * p * 730 * term_months   (whatever U)
    + migration cost once, for an option whose provider is not the current one (every option
      when no current provider is named: none of them is where the user already is)
    usd_per_gpu_hour = total / (N * hours * U)
    pflop_per_usd    = gpu_tflops_fp16 * N * hours * U * 3.6 / total

p is `price_per_hour_usd` (the effective hourly price in USD); for spot with basis `mean` or
`p95`, the series' time-weighted statistic over the spot window (`storage.reads.series`).

A blended plan (`baseline` B of the N GPUs reserved) is the same need paid two ways: the
reserved formula for B GPUs (whole terms, ceil(B / gpu_count) instances) plus the on-demand or
spot formula for the other N - B GPUs at U, plus the migration cost once per provider of the
plan that is not the current one. For each burst kind the cheapest pair is chosen jointly.

Candidates now are the rows of `latest_prices` that are not stale. At a past moment (`as_of`)
they are the intervals of `prices` in force then (valid_from <= as_of < valid_to), judged stale
then: their last confirmation was more than twice the provider's collection interval before
`as_of` (`storage.views.prices_at`, the rule of the half-yearly review's `then` side).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb

from collectors.common import StoreError
from storage.connection import LOCK_WAIT_S
from storage.reads import series
from storage.reads.sandbox import bounded
from storage.views import prices_at

HOURS_PER_MONTH = 730
SPOT_BASES = ("current", "mean", "p95")
OFFER_KEY = ("provider", "region", "zone", "instance_type", "price_kind", "term_months",
             "payment_option", "offering_class")  # fmt: skip

# Equal totals are listed in a fixed order, so the same store always gives the same answer.
_TIES = """provider, region, zone NULLS FIRST, instance_type, price_kind, term_months,
    payment_option NULLS FIRST, offering_class NULLS FIRST"""

_PARAMETER = re.compile(r"\$(\w+)")

_NOW = "SELECT * FROM latest_prices"
# The intervals in force at as_of, staleness judged then, as storage.review's `then` side.
_AS_OF = prices_at("$as_of")

# The offers of the GPU models asked for ({models}: lower($model_0), ...; a list of constants,
# which DuckDB filters the views' scans with, where a join with a list would read every row).
_MATCHING = """
matching AS (
    SELECT * FROM ({source})
    WHERE lower(gpu_model) IN ({models})
      AND ($variant IS NULL OR gpu_memory_gib = $variant)
      AND ($memory IS NULL OR gpu_memory_gib >= $memory)
      AND (len($providers) = 0 OR list_contains($providers, provider))
)"""

# The share of spot hours redone, in percent, from the offer's current Spot Advisor band.
_ADVISOR_OVERHEAD = """coalesce((SELECT 100 * i.band_high FROM spot_interruption i
    WHERE i.provider = c.provider AND i.region = c.region
      AND i.instance_type = c.instance_type), $overhead)"""

# The matching rows, read once per answer and registered on the connection under this name;
# each named by the model asked for that it answers, in `asked_gpu` (an offer of "A100" answers
# "a100" too, when both are asked).
_MATCHED = "tco_matching_offers"
_REUSED = f"""matching AS (
    SELECT m.*, a.asked_gpu FROM {_MATCHED} m
    JOIN (SELECT unnest($models) AS asked_gpu) a ON lower(m.gpu_model) = lower(a.asked_gpu)
)"""

# Why an offer of the GPU is not a candidate: the first reason that applies.
_EXCLUDED = """
WITH {matching}
SELECT asked_gpu, CASE WHEN stale THEN 'stale'
            WHEN NOT coalesce(available, true) THEN 'sold out'
            WHEN price_per_hour_usd IS NULL THEN 'no USD rate for ' || currency
       END AS reason, count(*) AS offers
FROM matching GROUP BY ALL ORDER BY reason NULLS FIRST
"""

# One row per candidate and GPU count asked for ($counts: N, and for a blend B and N - B).
_PRICED = """
{spot_stats}{matching}, candidates AS (
    SELECT * FROM matching
    WHERE NOT stale AND coalesce(available, true) AND price_per_hour_usd IS NOT NULL
      AND (price_kind <> 'reserved' OR term_months > 0)
), basis AS (
    SELECT c.*, {spot_price} AS basis_usd, {overhead} AS overhead_pct
    FROM candidates c {spot_join}
), priced AS (
    SELECT b.*, n.gpus,
           CAST(ceil(round(n.gpus / gpu_count, 6)) AS BIGINT) AS instances,
           {hours_per_month} * $months AS hours,
           CASE WHEN price_kind = 'reserved'
                THEN CAST(ceil($months / term_months) AS BIGINT) END AS terms,
           CASE WHEN $current IS NULL OR provider <> $current
                THEN $migration ELSE 0 END AS migration_usd
    FROM basis b, (SELECT unnest($counts) AS gpus) n
), totals AS (
    SELECT *, CASE price_kind
        WHEN 'on_demand' THEN instances * basis_usd * hours * $utilization
        WHEN 'spot' THEN instances * basis_usd * hours * $utilization * (1 + overhead_pct / 100)
        WHEN 'reserved' THEN instances * terms * basis_usd * {hours_per_month} * term_months
    END AS rent_usd
    FROM priced
)"""

_CANDIDATES = """
WITH {priced}
SELECT asked_gpu, {key}, gpu_model, gpu_count, gpu_memory_gib, currency, instances, hours,
       round(rent_usd + migration_usd, 2) AS total_usd,
       round((rent_usd + migration_usd) / (gpus * hours * $utilization), 6) AS usd_per_gpu_hour,
       round({tflops} * gpus * hours * $utilization * 3.6 / (rent_usd + migration_usd), 6)
           AS pflop_per_usd,
       round(basis_usd, 6) AS price_per_hour_usd, terms, migration_usd,
       CASE WHEN price_kind = 'spot' THEN round(overhead_pct, 6) END AS spot_overhead_pct
FROM totals WHERE gpus = $gpus
ORDER BY rent_usd + migration_usd, {ties}
"""

# Per burst kind, the cheapest (reserved for B, burst for N - B) pair; with N - B = 0 the plan
# is the reserved part alone. Migration: once per provider of the plan that is not current.
_BLENDS = """
WITH {priced}, reserved AS (
    SELECT * FROM totals WHERE price_kind = 'reserved' AND gpus = $baseline
), burst AS (
    SELECT * FROM totals WHERE price_kind IN ('on_demand', 'spot') AND gpus = $gpus - $baseline
), plans AS (
    SELECT r.asked_gpu, b.price_kind AS burst_kind, r.{r_key}, r.gpus AS reserved_gpus,
           r.instances AS reserved_instances,
           r.terms, round(r.rent_usd, 2) AS reserved_usd,
           b.{b_key}, coalesce(b.gpus, 0) AS burst_gpus, b.instances AS burst_instances,
           round(b.rent_usd, 2) AS burst_usd,
           (CASE WHEN $current IS NULL OR r.provider <> $current THEN $migration ELSE 0 END)
           + (CASE WHEN b.provider <> r.provider AND ($current IS NULL OR b.provider <> $current)
                   THEN $migration ELSE 0 END) AS plan_migration,
           coalesce(r.rent_usd + b.rent_usd, r.rent_usd) + plan_migration AS total
    FROM reserved r LEFT JOIN burst b ON b.asked_gpu = r.asked_gpu
    WHERE (b.provider IS NULL) = ($gpus = $baseline)
)
SELECT * EXCLUDE (total, plan_migration), plan_migration AS migration_usd,
       round(total, 2) AS total_usd,
       round(total / ($gpus * {hours_per_month} * $months * $utilization), 6)
           AS usd_per_gpu_hour
FROM plans
QUALIFY row_number() OVER (PARTITION BY asked_gpu, burst_kind ORDER BY total, reserved_provider,
                           reserved_instance_type, burst_provider, burst_instance_type) = 1
ORDER BY total
"""


@dataclass(frozen=True)
class Need:
    """What is to be rented and for how long (the `tco` options; defaults as CONTRACT.md).
    `gpu` is a model; `gpu_memory_gib` narrows it to its variant of that memory per GPU
    (`--gpu "A100 80GB"`), `memory_gib` to at least that much (`--memory`)."""

    gpu: str
    gpus: int = 8
    months: int = 36
    utilization: float = 1.0
    memory_gib: float | None = None
    providers: tuple[str, ...] = ()
    spot_overhead_pct: float = 10.0
    # --spot-overhead advisor: per offer, the upper bound of its Spot Advisor interruption band
    # as the share of work redone (">20%": 100 %); spot_overhead_pct where no band is known.
    spot_overhead_advisor: bool = False
    spot_basis: str = "current"
    spot_window_s: int = 30 * 86400
    migration_usd: float = 0.0
    current_provider: str | None = None
    gpu_memory_gib: float | None = None


@dataclass(frozen=True)
class Tco:
    """The answer: every candidate cheapest first (dicts with the JSON fields of CONTRACT.md
    plus `price_per_hour_usd` (the p of the formula), `terms`, `migration_usd` and, for spot,
    `spot_overhead_pct`: the overhead it was priced with, the offer's own with the advisor), why
    the other offers of the GPU were left out, and the blended plans when a baseline was asked."""

    need: Need
    as_of: datetime | None
    rows: list[dict[str, Any]]
    excluded: dict[str, int]  # reason ('stale', 'sold out', 'no USD rate for CNY') -> offers
    offers: int  # offers of the GPU matching the filters, before the exclusions
    blends: list[dict[str, Any]] = field(default_factory=list)
    baseline: int | None = None  # the GPUs reserved in the blends asked for
    # The fields of the document (the blends' with a baseline): a CSV of no rows has its header.
    columns: tuple[str, ...] = ()


def read(
    path: Path | str,
    need: Need,
    *,
    as_of: datetime | None = None,
    baseline: int | None = None,
    wait_s: float = LOCK_WAIT_S,
    timeout_s: float | None = None,
) -> Tco:
    """The TCO of `need` from the store at `path`, opened read-only (see `tco`), stopped after
    `timeout_s` seconds (QueryStopped)."""
    with bounded(path, timeout_s, wait_s=wait_s) as con:
        return tco(con, need, as_of=as_of, baseline=baseline)


def tco(con: Any, need: Need, *, as_of: datetime | None = None, baseline: int | None = None) -> Tco:
    """The TCO of `need` on an open connection: now (`as_of` None: `latest_prices`, stale
    offers left out), or as the prices stood at `as_of` (the intervals in force then, staleness
    judged then: see the module docstring). With `baseline` (0 < B <= N), the cheapest blended
    plan per burst kind too."""
    return _answers(con, [need.gpu], need, as_of, baseline)[need.gpu]


def several(
    con: Any, models: Sequence[str], need: Need, *, as_of: datetime | None = None,
    baseline: int | None = None,
) -> dict[str, Tco]:  # fmt: skip
    """`tco` of `need` with each of `models` as its GPU, by model: the same answers, the offers
    of every model read from the views in one scan and priced in one statement."""
    asked = list(dict.fromkeys(models))
    if len(asked) == 1 or (asked and need.spot_basis == "current"):
        return _answers(con, asked, replace(need, gpu=asked[0]), as_of, baseline)
    # Spot planned at its series' statistic: the statistics are read per model's series.
    return {m: tco(con, replace(need, gpu=m), as_of=as_of, baseline=baseline) for m in asked}


def _answers(
    con: Any, asked: list[str], need: Need, as_of: datetime | None, baseline: int | None
) -> dict[str, Tco]:
    """The answers for the `asked` models (spot statistics, if any, of `need.gpu`'s series)."""
    stats, stats_params = _spot_stats(need, as_of)
    params = _params(need, asked, as_of, baseline) | stats_params
    priced = _priced(need, stats)
    try:
        # The offers of the GPUs are read from the views once; what follows runs on those rows.
        read_once = f"WITH {_matching(as_of, len(asked))} SELECT * FROM matching"
        found = con.sql(read_once, params=_used(read_once, params)).to_arrow_table()
        con.register(_MATCHED, found)
        try:
            counted = _run(con, _EXCLUDED.format(matching=_REUSED), params).fetchall()
            columns, rows = _by_model(_run(con, _candidates_sql(priced), params))
            if baseline:
                columns, blends = _by_model(_run(con, _blends_sql(priced), params))
            else:
                blends = {}
        finally:
            con.unregister(_MATCHED)
    except duckdb.Error as exc:
        raise StoreError(f"tco: could not read the store: {exc}") from exc
    answers = {}
    for model in asked:
        mine = [(reason, int(n)) for gpu, reason, n in counted if gpu == model]
        reasons = {str(reason): n for reason, n in mine if reason is not None}
        answers[model] = Tco(
            replace(need, gpu=model), as_of, rows.get(model, []), reasons,
            sum(n for _, n in mine), blends.get(model, []), baseline, columns,
        )  # fmt: skip
    return answers


def _params(
    need: Need, asked: list[str], as_of: datetime | None, baseline: int | None
) -> dict[str, Any]:
    counts = sorted({need.gpus, *([baseline, need.gpus - baseline] if baseline else [])})
    return {
        "models": asked, **{f"model_{i}": m for i, m in enumerate(asked)},
        "memory": need.memory_gib, "variant": need.gpu_memory_gib,
        "providers": list(need.providers),
        "months": need.months, "utilization": need.utilization, "gpus": need.gpus,
        "overhead": need.spot_overhead_pct, "migration": need.migration_usd,
        "current": need.current_provider, "counts": [c for c in counts if c > 0],
        "baseline": baseline or 0, **({"as_of": as_of} if as_of else {}),
    }  # fmt: skip


def _run(con: Any, sql: str, params: dict[str, Any]) -> Any:
    return con.execute(sql, _used(sql, params))


def _used(sql: str, params: dict[str, Any]) -> dict[str, Any]:
    # DuckDB refuses a named parameter the statement does not use.
    used = set(_PARAMETER.findall(sql))
    return {k: v for k, v in params.items() if k in used}


def _matching(as_of: datetime | None, models: int) -> str:
    names = ", ".join(f"lower($model_{i})" for i in range(models))
    return _MATCHING.format(source=_AS_OF if as_of else _NOW, models=names)


def _spot_stats(need: Need, as_of: datetime | None) -> tuple[str, dict[str, Any]]:
    """The spot series' statistics over the window ending at `as_of` (now), in USD."""
    if need.spot_basis == "current":
        return "", {}
    until = as_of or datetime.now(UTC)
    window = series.Window(until - timedelta(seconds=need.spot_window_s), until)
    filters = series.SeriesFilters(
        gpu=need.gpu,
        kind="spot",
        gpu_memory_gib=need.gpu_memory_gib,
        min_memory_gib=need.memory_gib,
    )
    return series.statistics_sql(filters, window, price="price_per_hour_usd")


def _priced(need: Need, stats: str) -> str:
    if need.spot_basis == "current":
        spot_stats, spot_price, spot_join = "", "price_per_hour_usd", ""
    else:  # the series statistic; a series with no covered time keeps its current price
        spot_stats = f"spot_stats AS ({stats}),"
        spot_price = (f"CASE WHEN c.price_kind = 'spot' THEN coalesce(s.{need.spot_basis}, "
                      "c.price_per_hour_usd) ELSE c.price_per_hour_usd END")  # fmt: skip
        same = " AND ".join(f"s.{k} IS NOT DISTINCT FROM c.{k}" for k in OFFER_KEY)
        spot_join = f"LEFT JOIN spot_stats s ON c.price_kind = 'spot' AND {same}"
    return _PRICED.format(
        spot_stats=spot_stats,
        overhead=_ADVISOR_OVERHEAD if need.spot_overhead_advisor else "$overhead",
        matching=_REUSED,
        spot_price=spot_price,
        spot_join=spot_join,
        hours_per_month=HOURS_PER_MONTH,
    )


def _candidates_sql(priced: str) -> str:
    return _CANDIDATES.format(
        priced=priced,
        key=", ".join(OFFER_KEY),
        tflops="gpu_tflops_fp16",
        ties=_TIES,
    )


def _blends_sql(priced: str) -> str:
    return _BLENDS.format(
        priced=priced,
        r_key=", r.".join(f"{k} AS reserved_{k}" for k in OFFER_KEY),
        b_key=", b.".join(f"{k} AS burst_{k}" for k in OFFER_KEY),
        hours_per_month=HOURS_PER_MONTH,
    )


def _by_model(cursor: Any) -> tuple[tuple[str, ...], dict[str, list[dict[str, Any]]]]:
    """The rows by the model they answer (`asked_gpu`, left out of them), and their columns."""
    names = [d[0] for d in cursor.description]
    grouped: dict[str, list[dict[str, Any]]] = {}
    for values in cursor.fetchall():
        row = dict(zip(names, values, strict=True))
        grouped.setdefault(row.pop("asked_gpu"), []).append(row)
    return tuple(n for n in names if n != "asked_gpu"), grouped
