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
       price_kind
         || CASE WHEN term_months IS NULL THEN '' ELSE ' ' || term_months || 'mo' END
         || CASE WHEN payment_option IS NULL THEN '' ELSE ' ' || payment_option END
         || CASE WHEN offering_class IS NULL THEN '' ELSE ' ' || offering_class END AS kind,
       format('{{}}x {{}} {{}}GB', regexp_replace(round(gpu_count, 2)::VARCHAR, '\.0+$', ''),
              gpu_model, round(gpu_memory_gib)::INTEGER) AS gpus,
       round(price_per_hour, 4) AS per_hour,
       round(price_per_gpu_hour, 4) AS per_gpu_hour,
       currency,
       CASE WHEN stale THEN 'stale' ELSE '' END AS note
FROM latest_prices
WHERE {where}
ORDER BY {order}, provider, region, zone NULLS FIRST, instance_type
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
    store: Path, filters: Filters, *, sort: str = "gpu-hour", limit: int = 20
) -> dict[str, QueryResult]:
    """The cheapest current offers matching `filters`, per currency (USD first)."""
    currencies = query(store, "SELECT DISTINCT currency FROM latest_prices ORDER BY currency")
    found = sorted((row[0] for row in currencies.rows), key=lambda c: (c != "USD", c))
    results = {}
    for currency in found:
        where, params = _where(filters, currency)
        sql = _SQL.format(where=where, order=SORTS[sort])
        result = query(store, sql, [*params, limit])
        if result.rows:
            results[currency] = result
    return results
