"""The periodic review in the store: per GPU model and price kind the cheapest offer now and at
a past moment, each priced on the other side too, the best reserved discounts, the offers left
out for want of an FX rate and the alerts fired in the period; and recording a review in the
alert event log, once per (rule, subject, channel).

Two sides are compared. `now`: the current prices (`latest_prices`) that are not stale.
`then`: the intervals in force at the past moment (valid_from <= then < valid_to) that a
collection confirmed near it: `last_seen` no more than twice the provider's interval before
`then` (`storage.views.prices_at`: the staleness of `latest_prices` as the history can judge it
at a past moment). An interval stays open while nobody collects
its provider or region and is closed only when a later collection misses it, so without that
rule a price last seen years before would count as the price of `then`. On both sides an offer
the provider said was sold out (`available` false) is no offer. Prices are ranked in
USD through the `_usd` columns; an offer whose currency has no rate cannot be ranked and is
counted instead, never compared as if it were dollars. A reserved discount compares prices of
one currency (the offer's own on-demand), so it needs no rate.

The cheapest offer of one side need not be the cheapest of the other: a new provider, a
withdrawn offer or a reshuffle changes it. A price moves only within one offer, so each side's
cheapest offer is also looked up, by its offer key, on the other side (`now_offer_then`,
`then_offer_now`): what the review compares are those pairs, never two different offers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb

from collectors.common import StoreError
from storage.connection import connect, scalar, transaction
from storage.migrations import migrate
from storage.reads import review_tco
from storage.reads.sandbox import time_limit
from storage.reads.tco import Need
from storage.views import prices_at

LOCK_WAIT_S = 30.0  # as long as an alerts run waits: the daemon's collections hold the file

_PRICE = ("price_kind", "provider", "region", "zone", "instance_type", "term_months",
          "payment_option", "offering_class", "currency", "price_per_hour", "price_per_gpu_hour",
          "price_per_gpu_hour_usd")  # fmt: skip
_COLUMNS = ", ".join(("gpu_model", *_PRICE))

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


_SIDES = _sides(_COLUMNS)

# Equal prices resolve in a fixed order, so one store always gives the same review.
_TIES = """provider, region, zone NULLS FIRST, instance_type, term_months, payment_option,
    offering_class"""

# `role`: 'now' and 'then' are each side's cheapest offer; 'now_offer_then' is the offer
# cheapest now as it was priced then, 'then_offer_now' the one cheapest then as priced now (no
# row when that offer had no price there). The GPU model is the cheapest offer's.
_CHEAPEST = (
    _SIDES
    + f""", cheapest AS (
    SELECT * FROM sides WHERE price_per_gpu_hour_usd IS NOT NULL
    QUALIFY row_number() OVER (
        PARTITION BY side, gpu_model, price_kind ORDER BY price_per_gpu_hour_usd, {_TIES}) = 1
)
SELECT side AS role, {_COLUMNS} FROM cheapest
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
_DISCOUNTS = (
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

# Per GPU model and side the offer whose price buys the most dense FP16 compute (PFLOP per USD,
# the views' `pflop_per_usd`), and, like _CHEAPEST, each one as it stood on the other side;
# offers without a rate or a known TFLOPS figure cannot rank.
_PFLOP_PRICE = (*_PRICE, "gpu_count", "gpu_tflops_fp16", "price_per_hour_usd", "pflop_per_usd")
_PFLOP_COLUMNS = ", ".join(("gpu_model", *_PFLOP_PRICE))
_PFLOP = (
    _sides(_PFLOP_COLUMNS)
    + f""", best AS (
    SELECT * FROM sides WHERE pflop_per_usd IS NOT NULL
    QUALIFY row_number() OVER (
        PARTITION BY side, gpu_model
        ORDER BY pflop_per_usd DESC, price_kind, {_TIES}, currency) = 1
)
SELECT side AS role, {_PFLOP_COLUMNS} FROM best
UNION ALL
SELECT c.side || '_offer_' || o.side AS role, c.gpu_model,
       {", ".join(f"o.{c}" for c in _PFLOP_PRICE)}
FROM best c JOIN sides o ON o.side <> c.side AND {_SAME_OFFER}
ORDER BY gpu_model, role
"""
)

_UNRATED = (
    _SIDES
    + """
SELECT side, currency, count(*) FROM sides WHERE price_per_gpu_hour_usd IS NULL
GROUP BY side, currency ORDER BY side, currency
"""
)

_HISTORY_FROM = "SELECT min(valid_from) FROM prices"
_PRICED_AT_THEN = f"WITH {_AT_THEN} SELECT count(*) FROM at_then"


# One alert is one (rule, subject, fired_at), however many channels it went to; the reviews
# themselves are not alerts of the period. A channel counts as reached only by its 'sent' rows;
# the rows still pending or failed are counted per channel and status.
_ALERTS = """
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

_HAS_ALERTS = "SELECT count(*) FROM duckdb_views() WHERE view_name = 'alert_events'"

_INSERT_ONCE = """
INSERT INTO alert_event_log (event_id, rule, subject, fired_at, value, threshold, channel,
    status, detail, facts, attempts, next_attempt_at)
SELECT nextval('alert_event_ids'), $rule, $subject, $now, NULL, NULL, c.channel, 'pending',
       $detail, $facts, 0, $now
FROM (SELECT unnest($channels) AS channel) c
WHERE NOT EXISTS (
    SELECT 1 FROM alert_event_log e
    WHERE e.rule = $rule AND e.subject = $subject AND e.channel = c.channel
)
RETURNING event_id, channel
"""


@dataclass(frozen=True)
class ReviewRows:
    """What a review reads from the store, as rows (`tracker.review` gives them meaning)."""

    cheapest: list[dict[str, Any]]  # role, then the _COLUMNS
    discounts: list[dict[str, Any]]  # side, the _COLUMNS, on_demand_price, discount_pct
    pflop: list[dict[str, Any]]  # role (as in cheapest), the _PFLOP_COLUMNS
    unrated: list[tuple[str, str, int]]  # side, currency, offers left out
    history_from: datetime | None  # the earliest price in the store
    priced_at_then: int  # prices in force and confirmed at `then`
    alerts: list[tuple[Any, ...]]  # see alerts_fired
    strategies: list[dict[str, Any]] = field(default_factory=list)  # review_tco.strategies


def read(
    path: Path | str, now: datetime, then: datetime, *, review_rule: str,
    need: Need | None = None, gpus: Sequence[str] = (), wait_s: float = LOCK_WAIT_S,
    timeout_s: float | None = None,
) -> ReviewRows:  # fmt: skip
    """Everything a review of (then, now] needs, read from the store at `path` read-only; with
    `need`, each GPU model's cheapest strategies for it (its `gpu` taken as each model). With
    `gpus`, only those GPU models' offers count (prices, discounts, PFLOP, strategies and the
    offers left out for want of a rate); the alerts are the period's, whatever they are about.
    `timeout_s` stops the reads like every read a user starts (QueryStopped; None: no limit, as
    for the daemon's own review)."""
    with connect(path, read_only=True, wait_s=wait_s) as con, time_limit(con, timeout_s):
        try:
            found = cheapest(con, then, gpus)
            models = sorted({str(r["gpu_model"]) for r in found if r["gpu_model"] is not None})
            return ReviewRows(
                cheapest=found,
                discounts=discounts(con, then, gpus),
                pflop=best_pflop(con, then, gpus),
                unrated=unrated(con, then, gpus),
                history_from=scalar(con, _HISTORY_FROM),
                priced_at_then=int(scalar(con, _PRICED_AT_THEN, {"then": then})),
                alerts=alerts_fired(con, now, then, review_rule),
                strategies=[] if need is None else review_tco.strategies(con, models, need, then),
            )
        except duckdb.Error as exc:
            raise StoreError(f"review: could not read the store {path}: {exc}") from exc


def cheapest(con: Any, then: datetime, gpus: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Per GPU model and price kind, each side's cheapest offer and its price on the other."""
    return _dicts(con.execute(_CHEAPEST, {"then": then, "gpus": list(gpus)}))


def discounts(con: Any, then: datetime, gpus: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Per GPU model, the reserved offer with the best discount on each side."""
    return _dicts(con.execute(_DISCOUNTS, {"then": then, "gpus": list(gpus)}))


def best_pflop(con: Any, then: datetime, gpus: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Per GPU model, the offer with the most PFLOP per USD on each side, and each as it stood
    on the other side (roles as in `cheapest`)."""
    return _dicts(con.execute(_PFLOP, {"then": then, "gpus": list(gpus)}))


def unrated(con: Any, then: datetime, gpus: Sequence[str] = ()) -> list[tuple[str, str, int]]:
    """Per side and currency, the offers left out for want of an FX rate."""
    rows = con.execute(_UNRATED, {"then": then, "gpus": list(gpus)}).fetchall()
    return [(str(side), str(currency), int(n)) for side, currency, n in rows]


def alerts_fired(
    con: Any, now: datetime, then: datetime, review_rule: str
) -> list[tuple[Any, ...]]:
    """Per rule: alerts fired in (then, now], the channels that accepted them, last fired, last
    detail, and the rows not delivered (dicts of channel, status, count); none in a store from
    before alerts."""
    if not scalar(con, _HAS_ALERTS):
        return []
    params = {"now": now, "then": then, "review": review_rule}
    return list(con.execute(_ALERTS, params).fetchall())


def record_once(
    path: Path | str,
    *,
    rule: str,
    subject: str,
    channels: Sequence[str],
    detail: str,
    facts: str,
    now: datetime,
    wait_s: float,
) -> list[tuple[int, str]]:
    """Store a review as one pending event per channel, due now, unless that channel already
    has this subject; in one transaction. The (event_id, channel) pairs inserted, by channel."""
    params = {"rule": rule, "subject": subject, "now": now, "detail": detail, "facts": facts,
              "channels": list(channels)}  # fmt: skip
    with connect(path, read_only=False, wait_s=wait_s) as con:
        migrate(con)
        try:
            with transaction(con):
                rows = con.execute(_INSERT_ONCE, params).fetchall()
        except duckdb.Error as exc:
            raise StoreError(f"review: could not record it in the alert log: {exc}") from exc
    return sorted(((int(event_id), str(channel)) for event_id, channel in rows), key=_channel)


def _channel(row: tuple[int, str]) -> str:
    return row[1]


def _dicts(cursor: Any) -> list[dict[str, Any]]:
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, r, strict=True)) for r in cursor.fetchall()]
