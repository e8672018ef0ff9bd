"""The SQL of the periodic review: cheapest offers and best reserved discounts now and at a
past moment, offers left out for want of an FX rate, and the alerts fired in between.

Two sides are compared. `now`: the current prices (`latest_prices`) that are not stale.
`then`: the intervals in force at the past moment (valid_from <= then < valid_to) that a
collection confirmed near it: `last_seen` no more than twice the provider's interval before
`then`, the rule `latest_prices.stale` applies now. An interval stays open while nobody collects
its provider or region and is closed only when a later collection misses it, so without that
rule a price last seen years before would count as the price of `then`. On both sides an offer
the provider said was sold out (`available` false) is no offer. Prices are ranked in
USD through the `_usd` columns; an offer whose currency has no rate cannot be ranked and is
counted instead, never compared as if it were dollars. A reserved discount compares prices of
one currency (the offer's own on-demand), so it needs no rate.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

_COLUMNS = """gpu_model, price_kind, provider, region, zone, instance_type, term_months,
    payment_option, offering_class, currency, price_per_hour, price_per_gpu_hour,
    price_per_gpu_hour_usd"""

# The provider's collection interval as `latest_prices.stale` takes it (the one its runs were
# scheduled with, 1 h when none was recorded), here the one in force at `then`: the last run
# started by then that recorded one, else the latest run's.
_INTERVALS = """
intervals AS (
    SELECT provider, coalesce(
               arg_max(interval_seconds, run_id) FILTER (WHERE started_at <= $then),
               arg_max(interval_seconds, run_id)) AS interval_seconds
    FROM runs WHERE interval_seconds IS NOT NULL GROUP BY provider
), at_then AS (
    SELECT p.* FROM prices p LEFT JOIN intervals i USING (provider)
    WHERE p.valid_from <= $then AND (p.valid_to IS NULL OR p.valid_to > $then)
      AND epoch($then) - epoch(p.last_seen) <= 2 * coalesce(i.interval_seconds, 3600)
)"""

_SIDES = f"""
WITH {_INTERVALS}, sides AS (
    SELECT 'now' AS side, {_COLUMNS} FROM latest_prices
    WHERE NOT stale AND coalesce(available, true)
    UNION ALL
    SELECT 'then' AS side, {_COLUMNS} FROM at_then WHERE coalesce(available, true)
)
"""

# Equal prices resolve in a fixed order, so one store always gives the same review.
_TIES = """provider, region, zone NULLS FIRST, instance_type, term_months, payment_option,
    offering_class"""

CHEAPEST = (
    _SIDES
    + f"""
SELECT side, {_COLUMNS} FROM sides WHERE price_per_gpu_hour_usd IS NOT NULL
QUALIFY row_number() OVER (
    PARTITION BY side, gpu_model, price_kind ORDER BY price_per_gpu_hour_usd, {_TIES}) = 1
ORDER BY gpu_model, price_kind, side
"""
)

# Each reserved offer against on-demand of the same provider, region, instance type and
# currency on the same side (the zone's own on-demand price where one is per zone, else the
# region's, as the alert rules do); then the best discount per GPU model and side.
DISCOUNTS = (
    _SIDES
    + f"""
, paired AS (
    SELECT r.*, d.price_per_gpu_hour AS on_demand_price,
           round(100 * (1 - r.price_per_hour / d.price_per_hour), 6) AS discount_pct
    FROM sides r JOIN sides d
      ON (d.side, d.provider, d.region, d.instance_type, d.currency)
       = (r.side, r.provider, r.region, r.instance_type, r.currency)
     AND d.price_kind = 'on_demand' AND (d.zone IS NULL OR d.zone = r.zone)
    WHERE r.price_kind = 'reserved'
    QUALIFY row_number() OVER (
        PARTITION BY r.side, r.provider, r.region, r.zone, r.instance_type, r.term_months,
                     r.payment_option, r.offering_class, r.currency
        ORDER BY d.zone NULLS LAST) = 1
)
SELECT side, {_COLUMNS}, on_demand_price, discount_pct FROM paired
QUALIFY row_number() OVER (
    PARTITION BY side, gpu_model ORDER BY discount_pct DESC, {_TIES}, currency) = 1
ORDER BY gpu_model, side
"""
)

UNRATED = (
    _SIDES
    + """
SELECT side, currency, count(*) FROM sides WHERE price_per_gpu_hour_usd IS NULL
GROUP BY side, currency ORDER BY side, currency
"""
)

# One alert is one (rule, subject, fired_at), however many channels it went to; the reviews
# themselves are not alerts of the period. A channel counts as reached only by its 'sent' rows;
# the rows still pending or failed are counted per channel and status.
ALERTS = """
WITH fired AS (
    SELECT * FROM alert_events WHERE fired_at > $then AND fired_at <= $now AND rule <> $review
), undelivered AS (
    SELECT rule, list({'channel': channel, 'status': status, 'count': n}
                      ORDER BY channel, status) AS undelivered
    FROM (SELECT rule, channel, status, count(*) AS n FROM fired WHERE status <> 'sent'
          GROUP BY ALL)
    GROUP BY rule
)
SELECT rule, count(DISTINCT (subject, fired_at)) AS alerts,
       coalesce(list(DISTINCT channel ORDER BY channel) FILTER (WHERE status = 'sent'), []),
       max(fired_at), arg_max(detail, (fired_at, event_id)),
       coalesce(any_value(undelivered), [])
FROM fired LEFT JOIN undelivered USING (rule)
GROUP BY rule ORDER BY alerts DESC, rule
"""

HISTORY = f"""
WITH {_INTERVALS}
SELECT (SELECT min(valid_from) FROM prices), (SELECT count(*) FROM at_then)
"""

_HAS_ALERTS = "SELECT count(*) FROM duckdb_views() WHERE view_name = 'alert_events'"


def rows(con: Any, sql: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    """The result as dicts; only the parameters the statement names are bound."""
    used = {k: v for k, v in params.items() if f"${k}" in sql}
    cursor = con.execute(sql, used)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, r, strict=True)) for r in cursor.fetchall()]


def alerts(con: Any, now: datetime, then: datetime, review_rule: str) -> list[tuple[Any, ...]]:
    """Per rule: alerts fired in (then, now], the channels that accepted them, last fired, last
    detail, and the rows not delivered (channel, status, count); none in a store from before
    alerts."""
    if not con.execute(_HAS_ALERTS).fetchall()[0][0]:
        return []
    params = {"now": now, "then": then, "review": review_rule}
    return list(con.execute(ALERTS, params).fetchall())
