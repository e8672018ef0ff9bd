"""The total cost of ownership of a GPU need over a horizon, for every offer that can serve it:
the candidates, their totals and the blended plans, as plain rows (docs/decide.md,
`tco`). Every formula of `gpu-tracker tco` is written once, in SQL (the statements are in
`storage.reads.tco_sql`):

    hours     = 730 * M
    instances = ceil(N / gpu_count)        (the quotient rounded to 6 decimals first: a 1/6
                                            share of a GPU is stored as 0.1666..., and 8 of
                                            them must make 48 instances, not 49)
    on_demand : instances * p * hours * U
    spot      : instances * p * hours * U * (1 + overhead / 100)
    reserved  : instances * ceil(M / term_months) * p * 730 * term_months   (whatever U)
    + migration cost once, for an option whose provider is not the current one (every option
      when no current provider is named: none of them is where the user already is)
    + transfer cost once (`data_tb` with a current provider), for an option elsewhere: moving
      data_tb * 1024 GiB out of the current provider to the internet, its tiers applied
      (`storage.reads.transfer`), in USD
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
from storage.reads import series, tco_sql, transfer
from storage.reads.sandbox import bounded

HOURS_PER_MONTH = 730
SPOT_BASES = ("current", "mean", "p95")
OFFER_KEY = ("provider", "region", "zone", "instance_type", "price_kind", "term_months",
             "payment_option", "offering_class")  # fmt: skip

_PARAMETER = re.compile(r"\$(\w+)")


@dataclass(frozen=True)
class Need:
    """What is to be rented and for how long (the `tco` options; defaults as docs/commands.md says).
    `gpu` is a model; `gpu_memory_gib` narrows it to its variant of that memory per GPU
    (`--gpu "A100 80GB"`), `memory_gib` to at least that much (`--memory`)."""

    gpu: str
    gpus: int = 8
    months: float = 36  # fractional for `--amount` (tracker.questions.workloads)
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
    # --per-node K: only machines of at least K GPUs each (a job spread over NVLink).
    per_node: int = 1
    # --data-tb X: TiB to move out of the current provider (its transfer_prices tiers), in
    # the region asked (None: its dearest, so that leaving is never priced too low).
    data_tb: float | None = None
    current_region: str | None = None


@dataclass(frozen=True)
class Tco:
    """The answer: every candidate cheapest first (dicts with the JSON fields of docs/commands.md
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
    # With `data_tb`: what moving it out costs (None: no transfer price of the current
    # provider is stored, and `transfer_usd` is null).
    transfer: transfer.Moving | None = None


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
    moving = _moving(con, need, as_of)
    params = _params(need, asked, as_of, baseline) | stats_params
    params["transfer"] = (moving.usd if moving else None) if need.data_tb is not None else 0
    priced = _priced(need, stats)
    try:
        # The offers of the GPUs are read from the views once; what follows runs on those rows,
        # kept in a temporary table of this connection (an Arrow table would cost pyarrow's
        # import, a tenth of the read's peak memory).
        read_once = (f"CREATE OR REPLACE TEMP TABLE {tco_sql.MATCHED} AS "
                     f"WITH {_matching(as_of, len(asked))} SELECT * FROM matching")  # fmt: skip
        _run(con, read_once, params)
        try:
            counted = _run(con, tco_sql.EXCLUDED.format(matching=tco_sql.REUSED), params).fetchall()
            columns, rows = _by_model(_run(con, _candidates_sql(priced), params))
            if baseline:
                columns, blends = _by_model(_run(con, _blends_sql(priced), params))
            else:
                blends = {}
        finally:
            con.execute(f"DROP TABLE IF EXISTS {tco_sql.MATCHED}")
    except duckdb.Error as exc:
        raise StoreError(f"tco: could not read the store: {exc}") from exc
    if need.data_tb is None:  # the field is there only when asked for
        columns = tuple(c for c in columns if c != "transfer_usd")
        for row in [r for found in (rows, blends) for model in found for r in found[model]]:
            row.pop("transfer_usd", None)
    answers = {}
    for model in asked:
        mine = [(reason, int(n)) for gpu, reason, n in counted if gpu == model]
        reasons = {str(reason): n for reason, n in mine if reason is not None}
        answers[model] = Tco(
            replace(need, gpu=model), as_of, rows.get(model, []), reasons,
            sum(n for _, n in mine), blends.get(model, []), baseline, columns, moving,
        )  # fmt: skip
    return answers


def _moving(con: Any, need: Need, as_of: datetime | None) -> transfer.Moving | None:
    """The cost of moving `need.data_tb` out of the current provider (its asked region, else
    its dearest), or None: nothing asked, or no price stored."""
    if need.data_tb is None or need.current_provider is None:
        return None
    gib = need.data_tb * transfer.GIB_PER_TIB
    found = transfer.cost(con, need.current_provider, need.current_region, gib, as_of)
    return found[0] if found else None


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
        "baseline": baseline or 0, "per_node": need.per_node,
        **({"as_of": as_of} if as_of else {}),
    }  # fmt: skip


def _run(con: Any, sql: str, params: dict[str, Any]) -> Any:
    return con.execute(sql, _used(sql, params))


def _used(sql: str, params: dict[str, Any]) -> dict[str, Any]:
    # DuckDB refuses a named parameter the statement does not use.
    used = set(_PARAMETER.findall(sql))
    return {k: v for k, v in params.items() if k in used}


def _matching(as_of: datetime | None, models: int) -> str:
    names = ", ".join(f"lower($model_{i})" for i in range(models))
    return tco_sql.MATCHING.format(source=tco_sql.AS_OF if as_of else tco_sql.NOW, models=names)


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
    return tco_sql.PRICED.format(
        spot_stats=spot_stats,
        overhead=tco_sql.ADVISOR_OVERHEAD if need.spot_overhead_advisor else "$overhead",
        matching=tco_sql.REUSED,
        spot_price=spot_price,
        spot_join=spot_join,
        hours_per_month=HOURS_PER_MONTH,
    )


def _candidates_sql(priced: str) -> str:
    return tco_sql.CANDIDATES.format(
        priced=priced,
        key=", ".join(OFFER_KEY),
        tflops="gpu_tflops_fp16",
        ties=tco_sql.TIES,
    )


def _blends_sql(priced: str) -> str:
    return tco_sql.BLENDS.format(
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
