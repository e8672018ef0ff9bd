"""What each alert rule kind measures, as one set-based SELECT per rule over the public views.

Every measure yields one row per subject with the same columns (`COLUMNS`): the subject, the
offer it is about, `known` (false while the data cannot say: a stale price, no FX rate, no
on-demand price to compare with, so the rule's state is left as it is) and the `value` compared
with the threshold. Price rules read only `latest_prices` rows with `stale = false` of offers
that are not sold out (`available` false; NULL, the provider does not say, counts as available);
a rule in USD compares other currencies through the `_usd` columns where a rate is known, never
without.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from storage.alerts.index import index_measure
from storage.reads import gpu_filter
from storage.reads.gpu_filter import GpuChoice

# The columns every measure returns, in this order.
COLUMNS = """subject, offer, known, value, reference, provider, region, zone, instance_type,
    price_kind, term_months, payment_option, offer_currency, gpu_model, gpu_count, price,
    price_currency, converted"""

# An offer's identity, readable: `aws/us-east-1/use1-az4/p5.48xlarge/spot/USD` (NULL parts left
# out, so it reads as the offer does).
OFFER_ID = """concat_ws('/', {p}provider, {p}region, {p}zone, {p}instance_type, {p}price_kind,
    {p}term_months || 'mo', {p}payment_option, {p}offering_class, {p}currency)"""


_OFFER_NAMES = (
    "provider",
    "region",
    "zone",
    "instance_type",
    "price_kind",
    "term_months",
    "payment_option",
    "gpu_model",
    "gpu_count",
    "price",
    "price_currency",
    "converted",
)


def _cols(p: str = "") -> str:
    """The offer columns of a measure, taken from the table aliased `p`."""
    return ", ".join([f"{p}{n}" for n in _OFFER_NAMES] + [f"{p}currency AS offer_currency"])


# Offers of one rule with the price it compares: per GPU-hour or instance-hour, in the rule's
# currency (converted to USD only for a USD rule, and only where a rate is known).
_PRICED = """
SELECT *, {offer_id} AS offer, {price} AS price, {price_currency} AS price_currency,
       {converted} AS converted
FROM {source} WHERE {where}
"""

_THRESHOLD_MEASURE = f"""
WITH offers AS ({{priced}})
SELECT offer AS subject, offer, NOT stale AND price IS NOT NULL AS known, price AS value,
       CAST(NULL AS DOUBLE) AS reference, {_cols()}
FROM offers
"""

# Discount against on-demand of the same provider, region, instance type and currency (the
# zone's own on-demand price where one is per zone, else the region's).
_DISCOUNT_MEASURE = f"""
WITH offers AS ({{priced}}), on_demand AS (
    SELECT provider, region, zone, instance_type, currency, price_per_hour AS od_hour,
           {{od_price}} AS od_price, stale AS od_stale
    FROM latest_prices WHERE price_kind = 'on_demand'
)
SELECT o.offer AS subject, o.offer,
       NOT o.stale AND NOT coalesce(d.od_stale, true) AND o.price IS NOT NULL AS known,
       round(100 * (1 - o.price_per_hour / d.od_hour), 6) AS value, d.od_price AS reference,
       {_cols("o.")}
FROM offers o LEFT JOIN on_demand d
  ON (d.provider, d.region, d.instance_type, d.currency)
   = (o.provider, o.region, o.instance_type, o.currency)
 AND (d.zone IS NULL OR d.zone = o.zone)
QUALIFY row_number() OVER (PARTITION BY o.offer ORDER BY d.zone NULLS LAST) = 1
"""

# The change of each current price against the same offer's price in force a window ago (of
# the instance price: the per-GPU one is rounded). One past price per offer, the latest to take
# effect: a history with overlapping intervals must not measure (and fire) a subject twice.
_CHANGE_MEASURE = f"""
WITH offers AS ({{priced}}), past AS (
    SELECT offer, price AS past_price, price_per_hour AS past_hour FROM ({{priced_past}})
    WHERE valid_from <= $then AND coalesce(valid_to > $then, true)
    QUALIFY row_number() OVER (PARTITION BY offer ORDER BY valid_from DESC) = 1
)
SELECT offer AS subject, offer,
       NOT stale AND price IS NOT NULL AND past_price IS NOT NULL AS known,
       round(100 * (price_per_hour / past_hour - 1), 6) AS value, past_price AS reference,
       {_cols()}
FROM offers LEFT JOIN past USING (offer)
"""

# The lowest current price of a GPU model (per price kind and term) is new when it took effect
# within the window and is below every price seen in the window before it took effect: a closed
# interval ended within the window, an open one was last confirmed within it (a price left stale
# for months is not one seen this week). While a stale offer seen within the window is at or
# under the fresh low, the low is unknown: it may be back at the next collection, and a state
# re-armed meanwhile would fire the same low again.
_LOW_MEASURE = f"""
WITH offers AS (
    SELECT *, concat_ws('/', gpu_model, price_kind, term_months || 'mo') AS grp
    FROM ({{priced}})
), known AS (
    SELECT * FROM offers WHERE NOT stale AND price IS NOT NULL
), lows AS (
    SELECT grp, min(price) AS low, arg_min(offer, (price, valid_from, offer)) AS low_offer
    FROM known GROUP BY grp
), stale_lows AS (
    SELECT grp, min(price) AS stale_low
    FROM offers WHERE stale AND price IS NOT NULL AND last_seen > $then GROUP BY grp
), since AS (
    SELECT grp, min(k.valid_from) AS low_from
    FROM known k JOIN lows l USING (grp) WHERE k.price = l.low GROUP BY grp
), history AS (
    SELECT grp, min(h.price) AS previous_low
    FROM (SELECT *, concat_ws('/', gpu_model, price_kind, term_months || 'mo') AS grp
          FROM ({{priced_past}})) h
    JOIN since s USING (grp)
    WHERE h.valid_from < s.low_from AND coalesce(h.valid_to, h.last_seen) > $then
    GROUP BY grp
)
SELECT grp || '/' || $rule_currency AS subject,
       o.offer, l.low IS NOT NULL AND coalesce(st.stale_low > l.low, true) AS known,
       l.low AS value, h.previous_low AS reference,
       {_cols("o.")},
       coalesce(s.low_from > $then AND l.low < h.previous_low, false) AS new_low
FROM (SELECT DISTINCT grp FROM offers) g
LEFT JOIN lows l USING (grp)
LEFT JOIN stale_lows st USING (grp)
LEFT JOIN since s USING (grp)
LEFT JOIN history h USING (grp)
LEFT JOIN known o ON o.offer = l.low_offer
"""

# A provider is stale when its last successful collection completed longer ago than the window
# (or it never had one and has been trying for longer than the window: a new provider failing
# once at start is not yet news): a collection that took hours counts from its end. Providers
# only ever skipped (no credentials) are not. A held answer (docs/trust.md) is no collection.
_STALE_MEASURE = """
WITH last_ok AS (
    SELECT provider,
           max(coalesce(finished_at, started_at)) FILTER (WHERE status = 'ok') AS last_ok,
           min(started_at) AS first_try
    FROM collection_runs WHERE status IN ('ok', 'failed', 'held') AND {where} GROUP BY provider
)
SELECT provider AS subject, CAST(NULL AS VARCHAR) AS offer, true AS known,
       round((epoch($now) - epoch(last_ok)) / 3600, 2) AS value,
       CAST(NULL AS DOUBLE) AS reference, provider,
       NULL AS region, NULL AS zone, NULL AS instance_type, NULL AS price_kind,
       CAST(NULL AS INTEGER) AS term_months, NULL AS payment_option, NULL AS offer_currency,
       NULL AS gpu_model, CAST(NULL AS DOUBLE) AS gpu_count, CAST(NULL AS DOUBLE) AS price,
       NULL AS price_currency, false AS converted,
       coalesce(last_ok, first_try) < $then AS overdue
FROM last_ok
"""

# A sold-out offer is nowhere to move to: price rules leave it out, like a withdrawn one. With
# no reading, its rules' state stays as it was: back in stock, it does not alert again for the
# same crossing. NULL, the provider does not say, counts as available.
_AVAILABLE = " AND coalesce(available, true)"

# The columns a rule may filter on (RuleQuery.filters keys).
FILTER_COLUMNS = (
    "gpu_model",
    "provider",
    "region",
    "instance_type",
    "price_kind",
    "term_months",
    "payment_option",
)


@dataclass(frozen=True)
class RuleQuery:
    """A rule as the store sees it: plain values only (the alerts package owns what they mean
    and validates them; storage must not import it)."""

    name: str
    kind: str
    comparison: str  # below | above | change | low | stale
    unit: str  # price | percent | hours | none
    price_kind: str | None = None  # the one price kind the kind looks at; None: any
    per: str = "gpu"  # gpu | instance
    currency: str | None = None
    threshold: Decimal | None = None
    hysteresis: Decimal = Decimal(0)
    window_s: int | None = None
    cooldown_s: int = 0
    direction: str = "any"  # any | down | up (price_change)
    # column -> values; gpu_model's are GpuChoice: a model, or one memory variant of it
    filters: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    min_gpu_memory_gib: float | None = None  # offers with at least this much per GPU
    segment: str | None = None  # index rules: the market segment watched


def measure(rule: RuleQuery, now: datetime) -> tuple[str, dict[str, Any]]:
    """The SELECT measuring `rule` at `now` (columns: COLUMNS, plus `new_low` / `overdue`)."""
    if rule.comparison.startswith("index_"):  # the market index: storage.alerts.index
        return index_measure(rule, now)
    then = now - timedelta(seconds=rule.window_s or 0)
    params: dict[str, Any] = {"now": now, "then": then}
    where = _where(rule, params)
    comparison = rule.comparison
    if comparison == "stale":
        return _STALE_MEASURE.format(where=where), params
    priced = _priced(rule, "latest_prices", where + _AVAILABLE, params)
    if comparison == "below" and rule.unit == "price":
        return _THRESHOLD_MEASURE.format(priced=priced), params
    if comparison in ("above", "below"):
        column = "price_per_hour" if rule.per == "instance" else "price_per_gpu_hour"
        return _DISCOUNT_MEASURE.format(priced=priced, od_price=column), params
    if comparison == "change":
        # The offer's own price a window ago is what it moved from, sold out then or not.
        past = _priced(rule, "prices", where, params)
        return _CHANGE_MEASURE.format(priced=priced, priced_past=past), params
    # A low is among prices one could get: a sold-out price seen earlier is no bar to it.
    past = _priced(rule, "prices", where + _AVAILABLE, params)
    return _LOW_MEASURE.format(priced=priced, priced_past=past), params


def price_expression(per: str, converting: bool, p: str = "") -> str:
    """The compared price of an offer: native where the currency matches, else USD where the
    rule is in USD and a rate is known, else NULL (never compared)."""
    column = "price_per_hour" if per == "instance" else "price_per_gpu_hour"
    if not converting:
        return f"{p}{column}"
    return f"CASE WHEN {p}currency = 'USD' THEN {p}{column} ELSE {p}{column}_usd END"


def _priced(rule: RuleQuery, source: str, where: str, params: dict[str, Any]) -> str:
    # Percent kinds compare an offer with itself: any currency, shown in its own. Price kinds
    # compare with a threshold or with each other: in the rule's currency only, or in USD.
    converting = rule.unit == "price" and rule.currency == "USD"
    if rule.unit == "price" or rule.currency:
        params["rule_currency"] = rule.currency
        if not converting:
            where += " AND currency = $rule_currency"
    return _PRICED.format(
        offer_id=OFFER_ID.format(p=""),
        price=price_expression(rule.per, converting),
        price_currency="'USD'" if converting else "currency",
        converted="currency <> 'USD'" if converting else "false",
        source=source,
        where=where,
    )


def _where(rule: RuleQuery, params: dict[str, Any]) -> str:
    unknown = sorted(set(rule.filters) - set(FILTER_COLUMNS))
    if unknown:  # a filter the store cannot apply must not widen the rule silently
        raise ValueError(f"rule {rule.name}: no such filter column {', '.join(unknown)}")
    clauses = ["true"]
    fixed = rule.price_kind
    if fixed:
        params["fixed_kind"] = fixed
        clauses.append("price_kind = $fixed_kind")
    for column in FILTER_COLUMNS:
        values = rule.filters.get(column, ())
        if column == "gpu_model":  # a model, or one memory variant of it
            choices = [v if isinstance(v, GpuChoice) else GpuChoice(v) for v in values]
            clauses.append(gpu_filter.clause(choices, params, "f_gpu"))
        elif values:
            params[f"f_{column}"] = list(values)
            clauses.append(f"list_contains($f_{column}, {column})")
    clauses.append(gpu_filter.at_least(rule.min_gpu_memory_gib, params, "f_gpu"))
    return " AND ".join(clauses)
