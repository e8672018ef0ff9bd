"""The statements of the periodic review's reads (`storage.review`, whose docstring says what the
two sides are and how an offer is compared across them): each side's cheapest offer, the best
reserved discounts, the most PFLOP per dollar, the offers left out for want of an FX rate and
the alerts fired in the period. Parameters: `$then`, `$now`, `$gpus` and `$review`.
"""

from __future__ import annotations

from storage.views import prices_at

_PRICE = ("price_kind", "provider", "region", "zone", "instance_type", "term_months",
          "payment_option", "offering_class", "currency", "price_per_hour", "price_per_gpu_hour",
          "price_per_gpu_hour_usd")  # fmt: skip
COLUMNS = ", ".join(("gpu_model", *_PRICE))

# What makes two rows one offer (the `prices` key without its dates); NULLs match NULLs.
OFFER_KEY = ("provider", "region", "zone", "instance_type", "price_kind", "term_months",
             "payment_option", "offering_class", "currency")  # fmt: skip
_SAME_OFFER = " AND ".join(f"o.{k} IS NOT DISTINCT FROM c.{k}" for k in OFFER_KEY)

# The prices in force at `then` that a collection confirmed near it (not stale then: the rule
# of `storage.views.prices_at`, shared with the TCO as of a past moment).
_AT_THEN = f"""
at_then AS (SELECT * EXCLUDE (stale) FROM ({prices_at("$then")}) WHERE NOT stale)"""


# The GPU models a review follows (`$gpus`, any case; an empty list: every model).
_FOLLOWED = """(len($gpus::VARCHAR[]) = 0
        OR lower(gpu_model) IN (SELECT lower(unnest($gpus::VARCHAR[]))))"""


def _sides(columns: str) -> str:
    return f"""
WITH {_AT_THEN}, sides AS (
    SELECT 'now' AS side, {columns} FROM latest_prices
    WHERE NOT stale AND coalesce(available, true) AND {_FOLLOWED}
    UNION ALL
    SELECT 'then' AS side, {columns} FROM at_then WHERE coalesce(available, true) AND {_FOLLOWED}
)
"""


_SIDES = _sides(COLUMNS)

# Equal prices resolve in a fixed order, so one store always gives the same review.
_TIES = """provider, region, zone NULLS FIRST, instance_type, term_months, payment_option,
    offering_class"""

# `role`: 'now' and 'then' are each side's cheapest offer; 'now_offer_then' is the offer
# cheapest now as it was priced then, 'then_offer_now' the one cheapest then as priced now (no
# row when that offer had no price there). The GPU model is the cheapest offer's.
CHEAPEST = (
    _SIDES
    + f""", cheapest AS (
    SELECT * FROM sides WHERE price_per_gpu_hour_usd IS NOT NULL
    QUALIFY row_number() OVER (
        PARTITION BY side, gpu_model, price_kind ORDER BY price_per_gpu_hour_usd, {_TIES}) = 1
)
SELECT side AS role, {COLUMNS} FROM cheapest
UNION ALL
SELECT c.side || '_offer_' || o.side AS role, c.gpu_model,
       {", ".join(f"o.{c}" for c in _PRICE)}
FROM cheapest c JOIN sides o ON o.side <> c.side AND {_SAME_OFFER}
ORDER BY gpu_model, price_kind, role
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
SELECT side, {COLUMNS}, on_demand_price, discount_pct FROM paired
QUALIFY row_number() OVER (
    PARTITION BY side, gpu_model ORDER BY discount_pct DESC, {_TIES}, currency) = 1
ORDER BY gpu_model, side
"""
)

# Per GPU model and side the offer whose price buys the most dense FP16 compute (PFLOP per USD,
# the views' `pflop_per_usd`), and, like CHEAPEST, each one as it stood on the other side;
# offers without a rate or a known TFLOPS figure cannot rank.
_PFLOP_PRICE = (*_PRICE, "gpu_count", "gpu_tflops_fp16", "price_per_hour_usd", "pflop_per_usd")
PFLOP_COLUMNS = ", ".join(("gpu_model", *_PFLOP_PRICE))
PFLOP = (
    _sides(PFLOP_COLUMNS)
    + f""", best AS (
    SELECT * FROM sides WHERE pflop_per_usd IS NOT NULL
    QUALIFY row_number() OVER (
        PARTITION BY side, gpu_model
        ORDER BY pflop_per_usd DESC, price_kind, {_TIES}, currency) = 1
)
SELECT side AS role, {PFLOP_COLUMNS} FROM best
UNION ALL
SELECT c.side || '_offer_' || o.side AS role, c.gpu_model,
       {", ".join(f"o.{c}" for c in _PFLOP_PRICE)}
FROM best c JOIN sides o ON o.side <> c.side AND {_SAME_OFFER}
ORDER BY gpu_model, role
"""
)

UNRATED = (
    _SIDES
    + """
SELECT side, currency, count(*) FROM sides WHERE price_per_gpu_hour_usd IS NULL
GROUP BY side, currency ORDER BY side, currency
"""
)

HISTORY_FROM = "SELECT min(valid_from) FROM prices"
PRICED_AT_THEN = f"WITH {_AT_THEN} SELECT count(*) FROM at_then"


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

HAS_ALERTS = "SELECT count(*) FROM duckdb_views() WHERE view_name = 'alert_events'"

# Like-for-like moves: each offer priced on both sides (the same OFFER_KEY: provider, region,
# zone, instance type, kind, term, payment, class, currency) whose price changed, in its own
# currency (no rate moves it). One offer stands for the places (regions, zones) where the same
# instance type moved from the same price to the same price (`places` counts them); then per GPU
# model, memory size and price kind, the `$top` largest falls and rises by share. The USD per
# GPU-hour of each side says what it costs against the rest.
_MOVE_COLUMNS = ", ".join(("gpu_model", "gpu_memory_gib", "gpu_count", *_PRICE))
_SAME_ON_BOTH = " AND ".join(f"n.{k} IS NOT DISTINCT FROM t.{k}" for k in OFFER_KEY)
_ALIKE = """gpu_model, gpu_memory_gib, provider, instance_type, price_kind, term_months,
    payment_option, offering_class, currency, from_price, to_price"""
MOVES = (
    _sides(_MOVE_COLUMNS)
    + f""", moved AS (
    SELECT n.gpu_model, n.gpu_memory_gib, {", ".join(f"n.{k}" for k in OFFER_KEY)},
           n.gpu_count,
           CAST(t.price_per_hour AS DOUBLE) AS from_price,
           CAST(n.price_per_hour AS DOUBLE) AS to_price,
           round(n.price_per_hour / t.price_per_hour - 1, 6) AS change_share,
           CAST(t.price_per_gpu_hour_usd AS DOUBLE) AS from_usd_per_gpu_hour,
           CAST(n.price_per_gpu_hour_usd AS DOUBLE) AS usd_per_gpu_hour
    FROM sides n JOIN sides t ON n.side = 'now' AND t.side = 'then' AND {_SAME_ON_BOTH}
    WHERE n.price_per_hour <> t.price_per_hour AND t.price_per_hour > 0
      AND n.gpu_model IS NOT NULL
), alike AS (
    SELECT *, count(*) OVER (PARTITION BY {_ALIKE}) AS places FROM moved
    QUALIFY row_number() OVER (
        PARTITION BY {_ALIKE} ORDER BY region NULLS FIRST, zone NULLS FIRST) = 1
)
SELECT CASE WHEN change_share < 0 THEN 'down' ELSE 'up' END AS direction, *
FROM alike
QUALIFY row_number() OVER (
    PARTITION BY gpu_model, gpu_memory_gib, price_kind, change_share < 0
    ORDER BY abs(change_share) DESC, {_TIES}, currency) <= $top
ORDER BY gpu_model, gpu_memory_gib NULLS FIRST, price_kind, direction, abs(change_share) DESC,
         {_TIES}, currency
"""
)
