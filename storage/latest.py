"""The cheapest current offers (what `gpu-tracker latest` shows), one table per currency.

Prices in different currencies are never sorted into one list: each currency gets its own
table, ordered by price within it. With `usd`, every offer whose currency has a dated rate in
[fx] is converted and ranked in one USD table (the native currency stays in `priced_in`);
offers without a rate are left out and counted, never ranked as if they were dollars.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from storage.query import QueryResult, query
from storage.reads import gpu_filter
from storage.reads.gpu_filter import GpuChoice, GpuNames

# pflop: the most dense FP16 compute per US dollar first; offers without it (no TFLOPS or no
# USD price) last.
SORTS = {
    "gpu-hour": "price_per_gpu_hour",
    "hour": "price_per_hour",
    "pflop": "pflop_per_usd DESC NULLS LAST",
    "unit": "usd_per_unit NULLS LAST",  # with a workload's throughputs: the least USD per unit
}

# Equal prices are listed in a fixed order, so the same store always prints the same table.
_TIES = """provider, region, zone NULLS FIRST, instance_type, price_kind, term_months,
    payment_option, offering_class"""

# One statement for every currency: offers are ranked within their currency only, and the
# tables come out USD first.
_SQL = r"""
WITH chosen AS (
    SELECT {columns}{unit} FROM latest_prices WHERE {where}
), filtered AS (
    -- A level apart, so that --per-gpu ranks on the converted prices and currency of --usd.
    SELECT * FROM chosen {qualify}
), ranked AS (
    SELECT provider, region, zone, instance_type, price_kind, term_months, payment_option,
           offering_class,
           CASE price_kind
             WHEN 'on_demand' THEN 'on-demand'
             WHEN 'spot' THEN 'spot'
             ELSE concat_ws(' ',
               CASE WHEN term_months % 12 = 0 THEN (term_months // 12) || 'y'
                    ELSE term_months || 'mo' END,
               replace(payment_option, '_', '-'), offering_class)
           END AS kind,
           gpu_model, gpu_count, gpu_memory_gib,
           format('{{}}x {{}} {{}}GB',
                  regexp_replace(round(gpu_count, 2)::VARCHAR, '\.0+$', ''),
                  gpu_model, round(gpu_memory_gib)::INTEGER) AS gpus,
           available,
           -- Every stored digit: a table rounds for display, a document does not.
           price_per_hour AS per_hour,
           price_per_gpu_hour AS per_gpu_hour,
           currency,{priced_in}
           round(pflop_per_usd, 1) AS pflop_per_usd,{unit_column}
           -- The AWS Spot Advisor's interruption band beside a spot price ("<5%"), else NULL.
           (SELECT i.band FROM spot_interruption i
            WHERE f.price_kind = 'spot' AND i.provider = f.provider AND i.region = f.region
              AND i.instance_type = f.instance_type) AS interruption,
           stale,
           row_number() OVER (
               PARTITION BY currency
               ORDER BY {order}, {ties}
           ) AS _rank,
           count(*) OVER (PARTITION BY currency) AS _matching
    FROM filtered f
)
SELECT * EXCLUDE (_rank) FROM ranked
WHERE _rank <= $limit
ORDER BY currency <> 'USD', currency, _rank
"""


_USD_COLUMNS = """* REPLACE (price_per_hour_usd AS price_per_hour,
    price_per_gpu_hour_usd AS price_per_gpu_hour, 'USD' AS currency), currency AS priced_in"""

# Offers matching the filters that `usd` leaves out because their currency has no rate.
_UNRATED = """
SELECT currency, count(*) FROM latest_prices
WHERE {where} AND price_per_hour_usd IS NULL GROUP BY currency ORDER BY currency
"""


# A filter value the store has never seen is a typo far more often than an empty market.
_KNOWN = "SELECT DISTINCT {column} FROM latest_prices WHERE {column} IS NOT NULL ORDER BY 1"
_FREE_FILTERS = {"region": "region", "instance_type": "instance_type"}
_KNOWN_GPUS = """SELECT DISTINCT gpu_model, gpu_memory_gib FROM latest_prices
WHERE gpu_model IS NOT NULL ORDER BY 1, 2"""


@dataclass(frozen=True)
class Cheapest:
    """The offers shown, and per currency how many matched before the limit cut the list."""

    result: QueryResult
    matching: dict[str, int]

    def left_out(self, currency: str) -> int:
        at = self.result.columns.index("currency")
        shown = sum(1 for row in self.result.rows if row[at] == currency)
        return self.matching.get(currency, 0) - shown


@dataclass(frozen=True)
class Filters:
    """`gpu`: a model (any case); with `gpu_memory_gib`, only its variant of that memory per
    GPU; `min_memory_gib`: at least that much memory per GPU; `sold_out`: also the offers the
    provider says cannot be rented now (`available = false`), left out otherwise."""

    gpu: str | None = None
    kind: str | None = None
    provider: str | None = None
    region: str | None = None
    instance_type: str | None = None
    gpu_memory_gib: float | None = None
    min_memory_gib: float | None = None
    sold_out: bool = False


def _where(filters: Filters) -> tuple[str, dict[str, Any]]:
    params: dict[str, Any] = {}
    choices = [GpuChoice(filters.gpu, filters.gpu_memory_gib)] if filters.gpu else []
    clauses = [
        gpu_filter.clause(choices, params),
        gpu_filter.at_least(filters.min_memory_gib, params),
        "true" if filters.sold_out else "available IS NOT FALSE",
    ]
    for column, value in (("price_kind", filters.kind), ("provider", filters.provider)):
        if value:  # already the stored spelling (the CLI's filter types see to it)
            clauses.append(f"{column} = ${column}")
            params[column] = value
    for column, value in (("region", filters.region), ("instance_type", filters.instance_type)):
        if value:
            clauses.append(f"lower({column}) = lower(${column})")
            params[column] = value
    return " AND ".join(clauses), params


def cheapest(
    store: Path,
    filters: Filters,
    *,
    sort: str = "gpu-hour",
    limit: int = 20,
    per_gpu: bool = False,
    usd: bool = False,
    timeout_s: float | None = None,
    per_gpu_hour: Sequence[tuple[GpuChoice, float]] = (),
) -> Cheapest:
    """The cheapest current offers matching `filters`, `limit` per currency, grouped by
    currency (USD first) and ranked within it.

    With `per_gpu`, only the cheapest offer of each GPU model, memory variant (per-GPU memory:
    A100 40 GB and 80 GB apart) and price kind. With `usd`, one
    USD ranking of every offer that has a USD price (see the module docstring). The query
    stops after `timeout_s` seconds (None: no limit; the web dashboard sets one). With a
    workload's `per_gpu_hour` (units of work per GPU-hour, by GPU), `usd_per_unit`: the USD
    price per GPU-hour over the offer's GPU's throughput, NULL where it has none."""
    where, params = _where(filters)
    unit = gpu_filter.per_gpu(per_gpu_hour, params, "w") if per_gpu_hour else ""
    if usd:
        where += " AND price_per_hour_usd IS NOT NULL"
    order = SORTS[sort]
    qualify = (
        "QUALIFY row_number() OVER "
        f"(PARTITION BY currency, gpu_model, gpu_memory_gib, price_kind ORDER BY {order}, "
        f"{_TIES}) = 1"
        if per_gpu
        else ""
    )
    sql = _SQL.format(
        columns=_USD_COLUMNS if usd else "*",
        priced_in="\n           priced_in," if usd else "",
        unit=f",\n    price_per_gpu_hour_usd / {unit} AS usd_per_unit" if unit else "",
        unit_column="\n           round(usd_per_unit, 6) AS usd_per_unit," if unit else "",
        where=where,
        order=f"gpu_model, {order}" if per_gpu else order,
        qualify=qualify,
        ties=_TIES,
    )
    found = query(store, sql, {**params, "limit": limit}, timeout_s=timeout_s)
    at = found.columns.index("_matching")
    currency = found.columns.index("currency")
    matching = {row[currency]: row[at] for row in found.rows}
    rows = [row[:at] + row[at + 1 :] for row in found.rows]
    columns = found.columns[:at] + found.columns[at + 1 :]
    types = found.types[:at] + found.types[at + 1 :]
    return Cheapest(QueryResult(columns, types, rows), matching)


def unknown_values(
    store: Path, filters: Filters, known: GpuNames, timeout_s: float | None = None
) -> list[str]:
    """For each free-text filter no current offer has (a GPU model or variant: nor the GPU
    table `known`), a line naming the filter, the value and the values there are."""
    found = query(store, _KNOWN_GPUS, timeout_s=timeout_s).rows
    if not found:  # an empty store: nothing to judge by ("run collect first" says it)
        return []
    problems = []
    if filters.gpu:
        problem = _unknown_gpu(GpuChoice(filters.gpu, filters.gpu_memory_gib), found, known)
        problems += [problem] if problem else []
    for name, column in _FREE_FILTERS.items():
        value = getattr(filters, name)
        if not value:
            continue
        there = [
            row[0] for row in query(store, _KNOWN.format(column=column), timeout_s=timeout_s).rows
        ]
        if value.lower() not in {v.lower() for v in there}:
            option = "--" + name.replace("_", "-")
            problems.append(f"{option} {value}: no current offer has it ({_some(there)})")
    return problems


def _unknown_gpu(choice: GpuChoice, stored: list[tuple[Any, ...]], known: GpuNames) -> str | None:
    """Why no offer is of `choice`, when neither the store nor the GPU table knows it: the
    model's variants where the model is known, else every model and variant."""
    there = {(str(model).lower(), gib) for model, gib in stored}
    models = {model for model, _ in there}
    lower = choice.model.lower()
    if lower in models and (choice.memory_gib is None or (lower, choice.memory_gib) in there):
        return None
    if known.knows(choice):
        return None
    accepted = sorted(
        {str(model) for model, _ in stored}
        | {GpuChoice(str(model), float(gib)).label for model, gib in stored}
        | set(known.accepted)
    )
    same = [a for a in accepted if a.lower() == lower or a.lower().startswith(lower + " ")]
    if same:  # a known model: its variants are the useful list
        return f"--gpu {choice.label}: no current offer has it ({_some(same)})"
    # A model nobody knows: the models, not every variant of every one (a variant is asked as
    # "<model> <N>GB").
    models_only = sorted({str(model) for model, _ in stored} | set(known.named))
    return (
        f"--gpu {choice.label}: no current offer has it ({_some(models_only)}; "
        'a variant as "<model> <N>GB")'
    )


def _some(values: list[str], shown: int = 30) -> str:
    more = f", ... ({len(values) - shown} more)" if len(values) > shown else ""
    return "accepted: " + ", ".join(values[:shown]) + more


def matching(store: Path, filters: Filters, timeout_s: float | None = None) -> int:
    """How many current offers match `filters` (to say which filter emptied an answer)."""
    where, params = _where(filters)
    sql = f"SELECT count(*) FROM latest_prices WHERE {where}"
    return int(query(store, sql, params, timeout_s=timeout_s).rows[0][0])


def unrated(store: Path, filters: Filters, timeout_s: float | None = None) -> dict[str, int]:
    """Currency -> how many current offers matching `filters` have no USD price (no rate)."""
    where, params = _where(filters)
    return dict(query(store, _UNRATED.format(where=where), params, timeout_s=timeout_s).rows)


def by_currency(result: QueryResult) -> dict[str, QueryResult]:
    """The offers split into one result per currency, in the order they came."""
    at = result.columns.index("currency")
    tables: dict[str, QueryResult] = {}
    for row in result.rows:
        tables.setdefault(row[at], QueryResult(result.columns, result.types, [])).rows.append(row)
    return tables
