"""`gpu-tracker latest`: the cheapest current offers, one table per currency.

Prices in different currencies are never sorted into one list: each currency gets its own
table, ordered by price within it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from storage.query import QueryResult, query

SORTS = {"gpu-hour": "price_per_gpu_hour", "hour": "price_per_hour"}
KINDS = ("on_demand", "spot", "reserved")

_SQL = r"""
SELECT provider, region, zone, instance_type,
       CASE price_kind
         WHEN 'on_demand' THEN 'on-demand'
         WHEN 'spot' THEN 'spot'
         ELSE concat_ws(' ',
           CASE WHEN term_months % 12 = 0 THEN (term_months // 12) || 'y'
                ELSE term_months || 'mo' END,
           replace(payment_option, '_', '-'), offering_class)
       END AS kind,
       format('{{}}x {{}} {{}}GB', regexp_replace(round(gpu_count, 2)::VARCHAR, '\.0+$', ''),
              gpu_model, round(gpu_memory_gib)::INTEGER) AS gpus,
       round(price_per_hour, 4) AS per_hour,
       round(price_per_gpu_hour, 4) AS per_gpu_hour,
       currency,
       stale
FROM latest_prices
WHERE {where}
{qualify}
ORDER BY {order}, provider, region, zone NULLS FIRST, instance_type, kind
LIMIT ?
"""


@dataclass(frozen=True)
class Filters:
    gpu: str | None = None
    kind: str | None = None
    provider: str | None = None
    region: str | None = None
    instance_type: str | None = None


def _where(filters: Filters, currency: str) -> tuple[str, list[Any]]:
    clauses, params = ["currency = ?"], [currency]
    if filters.gpu:
        clauses.append("lower(gpu_model) = lower(?)")
        params.append(filters.gpu)
    for column, value in (
        ("price_kind", filters.kind),
        ("provider", filters.provider),
        ("region", filters.region),
        ("instance_type", filters.instance_type),
    ):
        if value:
            clauses.append(f"{column} = ?")
            params.append(value)
    return " AND ".join(clauses), params


def cheapest(
    store: Path,
    filters: Filters,
    *,
    sort: str = "gpu-hour",
    limit: int = 20,
    per_gpu: bool = False,
) -> dict[str, QueryResult]:
    """The cheapest current offers matching `filters`, per currency (USD first).

    With `per_gpu`, only the cheapest offer of each GPU model and price kind."""
    currencies = query(store, "SELECT DISTINCT currency FROM latest_prices ORDER BY currency")
    found = sorted((row[0] for row in currencies.rows), key=lambda c: (c != "USD", c))
    results = {}
    for currency in found:
        where, params = _where(filters, currency)
        order = SORTS[sort]
        qualify = (
            f"QUALIFY row_number() OVER (PARTITION BY gpu_model, price_kind ORDER BY {order}) = 1"
            if per_gpu
            else ""
        )
        sql = _SQL.format(
            where=where, order=f"gpu_model, {order}" if per_gpu else order, qualify=qualify
        )
        result = query(store, sql, [*params, limit])
        if result.rows:
            results[currency] = result
    return results
