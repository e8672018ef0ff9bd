"""What an `index` alert rule measures: the day's market index of one GPU, price kind and
segment (`storage.reads.index`, the formula written once), against a value or against the
index `window` ago (docs/alerts.md, "Market index").

One row per memory variant of the GPU that has an index today, with the columns of every
measure (`storage.alerts.measures.COLUMNS`): `value` is the index in USD per GPU-hour, or for
a move the share it moved by (`reference` the index it moved from; unknown while that day had
none, so the rule's state is left as it is).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from storage.reads.gpu_filter import GpuChoice
from storage.reads.index.read import Days, IndexFilters, index_sql

if TYPE_CHECKING:
    from storage.alerts.measures import RuleQuery

_MEASURE = """
WITH idx AS ({index}), today AS (
    SELECT * FROM idx WHERE date = $ix_today
), past AS (
    SELECT * FROM idx WHERE date = $ix_then
)
SELECT concat_ws('/', 'index', n.gpu_model || coalesce(format(' {{:g}}GB', n.gpu_memory_gib), ''),
                 n.kind, n.segment) AS subject,
       CAST(NULL AS VARCHAR) AS offer, {known} AS known, {value} AS value,
       p.index_usd_per_gpu_hour AS reference, CAST(NULL AS VARCHAR) AS provider,
       NULL AS region, NULL AS zone, NULL AS instance_type, n.kind AS price_kind,
       CAST(NULL AS INTEGER) AS term_months, NULL AS payment_option, 'USD' AS offer_currency,
       n.gpu_model, CAST(NULL AS DOUBLE) AS gpu_count, n.index_usd_per_gpu_hour AS price,
       'USD' AS price_currency, false AS converted
FROM today n LEFT JOIN past p
  ON p.gpu_model = n.gpu_model AND p.gpu_memory_gib IS NOT DISTINCT FROM n.gpu_memory_gib
"""
_LEVEL = ("true", "n.index_usd_per_gpu_hour")
_MOVE = (
    "p.index_usd_per_gpu_hour IS NOT NULL",
    "round(n.index_usd_per_gpu_hour / p.index_usd_per_gpu_hour - 1, 6)",
)


def index_measure(rule: RuleQuery, now: datetime) -> tuple[str, dict[str, Any]]:
    """The SELECT measuring the `index` rule `rule` at `now` (module docstring)."""
    (gpu,) = rule.filters["gpu_model"]
    (kind,) = rule.filters["price_kind"]
    today = now.astimezone(UTC).date()
    moving = rule.comparison == "index_move"
    then = today - timedelta(days=round((rule.window_s or 0) / 86400)) if moving else today
    filters = IndexFilters(
        gpu if isinstance(gpu, GpuChoice) else GpuChoice(gpu), kind, rule.segment
    )
    sql, params = index_sql(filters, Days(then, today, now))
    known, value = _MOVE if moving else _LEVEL
    params |= {"ix_today": today, "ix_then": then}
    return _MEASURE.format(index=sql, known=known, value=value), params
