"""The periodic review in the store: per GPU model and price kind the cheapest offer now and at
a past moment, each priced on the other side too, the best reserved discounts, the offers left
out for want of an FX rate, the largest like-for-like moves and the alerts fired in the period;
and recording a review in the alert event log, once per (rule, subject, channel).

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

The reads' statements are in `storage.reads.review_sql`; this module runs them and records.
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
from storage.reads import review_sql, review_tco
from storage.reads.sandbox import time_limit
from storage.reads.tco import Need

TOP_MOVES = 3  # per GPU model, memory size, price kind and direction: a few, not a list to read
LOCK_WAIT_S = 30.0  # as long as an alerts run waits: the daemon's collections hold the file

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

    cheapest: list[dict[str, Any]]  # role, then review_sql.COLUMNS
    discounts: list[dict[str, Any]]  # side, review_sql.COLUMNS, on_demand_price, discount_pct
    pflop: list[dict[str, Any]]  # role (as in cheapest), review_sql.PFLOP_COLUMNS
    unrated: list[tuple[str, str, int]]  # side, currency, offers left out
    history_from: datetime | None  # the earliest price in the store
    priced_at_then: int  # prices in force and confirmed at `then`
    alerts: list[tuple[Any, ...]]  # see alerts_fired
    strategies: list[dict[str, Any]] = field(default_factory=list)  # review_tco.strategies
    moves: list[dict[str, Any]] = field(default_factory=list)  # review_sql.MOVES


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
                history_from=scalar(con, review_sql.HISTORY_FROM),
                priced_at_then=int(scalar(con, review_sql.PRICED_AT_THEN, {"then": then})),
                alerts=alerts_fired(con, now, then, review_rule),
                strategies=[] if need is None else review_tco.strategies(con, models, need, then),
                moves=moves(con, then, gpus),
            )
        except duckdb.Error as exc:
            raise StoreError(f"review: could not read the store {path}: {exc}") from exc


def cheapest(con: Any, then: datetime, gpus: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Per GPU model and price kind, each side's cheapest offer and its price on the other."""
    return _dicts(con.execute(review_sql.CHEAPEST, {"then": then, "gpus": list(gpus)}))


def moves(
    con: Any, then: datetime, gpus: Sequence[str] = (), top: int = TOP_MOVES
) -> list[dict[str, Any]]:
    """Per GPU model, memory size and price kind, the `top` largest like-for-like falls and
    rises: one offer's own price then against now (`review_sql.MOVES`)."""
    params = {"then": then, "gpus": list(gpus), "top": top}
    return _dicts(con.execute(review_sql.MOVES, params))


def discounts(con: Any, then: datetime, gpus: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Per GPU model, the reserved offer with the best discount on each side."""
    return _dicts(con.execute(review_sql.DISCOUNTS, {"then": then, "gpus": list(gpus)}))


def best_pflop(con: Any, then: datetime, gpus: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Per GPU model, the offer with the most PFLOP per USD on each side, and each as it stood
    on the other side (roles as in `cheapest`)."""
    return _dicts(con.execute(review_sql.PFLOP, {"then": then, "gpus": list(gpus)}))


def unrated(con: Any, then: datetime, gpus: Sequence[str] = ()) -> list[tuple[str, str, int]]:
    """Per side and currency, the offers left out for want of an FX rate."""
    rows = con.execute(review_sql.UNRATED, {"then": then, "gpus": list(gpus)}).fetchall()
    return [(str(side), str(currency), int(n)) for side, currency, n in rows]


def alerts_fired(
    con: Any, now: datetime, then: datetime, review_rule: str
) -> list[tuple[Any, ...]]:
    """Per rule: alerts fired in (then, now], the channels that accepted them, last fired, last
    detail, and the rows not delivered (dicts of channel, status, count); none in a store from
    before alerts."""
    if not scalar(con, review_sql.HAS_ALERTS):
        return []
    params = {"now": now, "then": then, "review": review_rule}
    return list(con.execute(review_sql.ALERTS, params).fetchall())


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
