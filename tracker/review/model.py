"""What a periodic review holds: per GPU model and price kind the cheapest offer now and then,
the best reserved discount, the alerts of the period; and `Review.to_dict`, the JSON-able digest
every channel renders (`alerts.digest`) and `gpu-tracker review --format json` prints.

A move compares like with like: one offer's price then against its own price now. Where the
cheapest then and now are two offers, their prices are no move; each is given its own price on
the other side instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from alerts import digest
from storage.reads.review_sql import OFFER_KEY
from tracker.config.daemon import Since
from tracker.review.compute import Comparison

KINDS = ("on_demand", "spot", "reserved")
_ROLES = ("now", "then", "now_offer_then", "then_offer_now")  # storage.review's, in Move's order


def period(then: datetime, now: datetime) -> str:
    """`2026-06-01..2026-12-01` (the dates as the two times have them)."""
    return f"{then:%Y-%m-%d}..{now:%Y-%m-%d}"


@dataclass(frozen=True)
class Offer:
    """The cheapest (or best-discounted) offer of one side: `price` per GPU-hour in its own
    currency, `price_usd` converted (the same for USD)."""

    provider: str
    region: str
    zone: str | None
    instance_type: str
    price_kind: str
    term_months: int | None
    payment_option: str | None
    offering_class: str | None  # AWS reserved: standard / convertible, priced apart
    currency: str
    price: float
    price_usd: float | None
    discount_pct: float | None = None  # reserved discounts: against on_demand_price
    on_demand_price: float | None = None

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> Offer:
        usd = row["price_per_gpu_hour_usd"]
        return cls(
            **{k: row[k] for k in OFFER_KEY},
            price=float(row["price_per_gpu_hour"]),
            price_usd=None if usd is None else float(usd),
            discount_pct=row.get("discount_pct"),
            on_demand_price=row.get("on_demand_price"),
        )

    @property
    def key(self) -> tuple[Any, ...]:
        """The offer's identity: a price moves only within one offer."""
        return tuple(getattr(self, k) for k in OFFER_KEY)


@dataclass(frozen=True)
class Move:
    """One price kind (or the reserved discount) of one GPU model: the cheapest (best) offer now
    and then and, where those are two offers, each one's own price on the other side."""

    price_kind: str
    now: Offer | None
    then: Offer | None
    now_offer_then: Offer | None = None  # the offer cheapest now, as priced then
    then_offer_now: Offer | None = None  # the offer cheapest then, as priced now

    @property
    def same_offer(self) -> bool | None:
        """Whether the cheapest offer then is the cheapest now (None: a side has none)."""
        if self.now is None or self.then is None:
            return None
        return self.now.key == self.then.key

    @property
    def move_pct(self) -> float | None:
        """How the price moved, only where one offer is the cheapest then and now: two offers'
        prices are no price move."""
        return _pct(self.then, self.now) if self.same_offer else None

    @property
    def now_offer_move_pct(self) -> float | None:
        return _pct(self.now_offer_then, self.now)

    @property
    def then_offer_move_pct(self) -> float | None:
        return _pct(self.then, self.then_offer_now)

    @property
    def points(self) -> float | None:
        if self.now is None or self.then is None or not self.same_offer:
            return None
        return round((self.now.discount_pct or 0) - (self.then.discount_pct or 0), 2) + 0.0


@dataclass(frozen=True)
class ModelReview:
    gpu_model: str
    kinds: tuple[Move, ...]
    reserved_discount: Move | None
    pflop: Comparison | None = None  # the best PFLOP per USD now and then
    tco: Comparison | None = None  # the cheapest 3-year strategy now and then


@dataclass(frozen=True)
class Undelivered:
    """Rows of one rule's alerts that a channel has not accepted (yet)."""

    channel: str
    status: str  # 'pending' (retried) or 'failed' (given up)
    count: int


@dataclass(frozen=True)
class AlertSummary:
    rule: str
    count: int  # alerts, not rows: one alert to two channels counts once
    channels: tuple[str, ...]  # those that accepted at least one of them
    last_fired_at: datetime
    last_detail: str
    undelivered: tuple[Undelivered, ...] = ()

    @classmethod
    def of(cls, row: tuple[Any, ...]) -> AlertSummary:
        rule, count, channels, last_fired_at, last_detail, undelivered = row
        missed = tuple(Undelivered(u["channel"], u["status"], int(u["count"])) for u in undelivered)
        return cls(rule, int(count), tuple(channels), last_fired_at, last_detail, missed)


@dataclass(frozen=True)
class Review:
    now: datetime  # the end of the period: the review's (scheduled) time
    then: datetime
    since: Since
    history_from: datetime | None  # the earliest price in the store
    has_then: bool  # whether any price was in force at `then`
    models: tuple[ModelReview, ...]
    unrated: dict[str, dict[str, int]]  # side -> currency -> offers left out (no rate)
    alerts: tuple[AlertSummary, ...]
    prices_at: datetime | None = None  # when the 'now' prices were read, if not at `now`
    need: dict[str, Any] | None = None  # what the 3-year strategies are priced for
    gpus: tuple[str, ...] = ()  # the GPU models followed ([review] gpus); (): every model
    moves: tuple[dict[str, Any], ...] = ()  # the largest like-for-like moves (review.moves)
    market: tuple[dict[str, Any], ...] = ()  # the index's moves (tracker.review.market)

    @property
    def period(self) -> str:
        return period(self.then, self.now)

    def to_dict(self) -> dict[str, Any]:
        """The digest: JSON-able, what every channel and `--format json` show."""
        return {
            "kind": digest.KIND,
            "period": self.period,
            "since": str(self.since),
            "now": self.now.isoformat(),
            "prices_at": (self.prices_at or self.now).isoformat(),
            "then": self.then.isoformat(),
            "history_from": self.history_from.isoformat() if self.history_from else None,
            "has_then": self.has_then,
            "need": self.need,
            "gpus": list(self.gpus) or None,
            "market": list(self.market),
            "models": [_model_dict(m) for m in self.models],
            "unrated": self.unrated,
            "moves": list(self.moves),
            "alerts": [
                {**asdict(a), "channels": list(a.channels),
                 "last_fired_at": a.last_fired_at.isoformat(),
                 "undelivered": [asdict(u) for u in a.undelivered]}
                for a in self.alerts
            ],
        }  # fmt: skip


def models(
    cheapest: list[dict[str, Any]], discounts: list[dict[str, Any]]
) -> tuple[ModelReview, ...]:
    """Per GPU model its moves, from the rows of `storage.review`."""
    offers = {(r["gpu_model"], r["price_kind"], r["role"]): Offer.of(r) for r in cheapest}
    best = {(r["gpu_model"], r["side"]): Offer.of(r) for r in discounts}
    names = sorted({k[0] for k in offers} | {k[0] for k in best})
    result = []
    for name in names:
        kinds = tuple(
            Move(kind, *(offers.get((name, kind, role)) for role in _ROLES))
            for kind in KINDS
            if (name, kind, "now") in offers or (name, kind, "then") in offers
        )
        discount = Move("reserved", best.get((name, "now")), best.get((name, "then")))
        has_discount = discount.now is not None or discount.then is not None
        result.append(ModelReview(name, kinds, discount if has_discount else None))
    return tuple(result)


def _pct(before: Offer | None, after: Offer | None) -> float | None:
    if before is None or after is None or not before.price_usd or after.price_usd is None:
        return None
    return round(100 * after.price_usd / before.price_usd - 100, 2) + 0.0  # never -0.0


def _kind_dict(move: Move) -> dict[str, Any]:
    return {
        "price_kind": move.price_kind,
        "now": _offer_dict(move.now),
        "then": _offer_dict(move.then),
        "move_pct": move.move_pct,
        "same_offer": move.same_offer,
        "now_offer_then": _offer_dict(move.now_offer_then),
        "now_offer_move_pct": move.now_offer_move_pct,
        "then_offer_now": _offer_dict(move.then_offer_now),
        "then_offer_move_pct": move.then_offer_move_pct,
    }


def _discount_dict(move: Move) -> dict[str, Any]:
    return {
        "price_kind": move.price_kind,
        "now": _offer_dict(move.now),
        "then": _offer_dict(move.then),
        "points": move.points,
        "same_offer": move.same_offer,
    }


def _offer_dict(offer: Offer | None) -> dict[str, Any] | None:
    if offer is None:
        return None
    data = asdict(offer)
    if offer.discount_pct is None:  # a cheapest offer, not a discount
        del data["discount_pct"], data["on_demand_price"]
    return data


def _model_dict(model: ModelReview) -> dict[str, Any]:
    discount = model.reserved_discount
    return {
        "gpu_model": model.gpu_model,
        "kinds": [_kind_dict(m) for m in model.kinds],
        "reserved_discount": None if discount is None else _discount_dict(discount),
        "pflop": None if model.pflop is None else model.pflop.to_dict(),
        "tco": None if model.tco is None else model.tco.to_dict(),
    }
