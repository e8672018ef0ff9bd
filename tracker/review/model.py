"""What a periodic review holds: per GPU model and price kind the cheapest offer now and then,
the best reserved discount, the alerts of the period; and `Review.to_dict`, the JSON-able digest
every channel renders (`alerts.digest`) and `gpu-tracker review --format json` prints.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from alerts import digest
from tracker.daemon.settings import Since

KINDS = ("on_demand", "spot", "reserved")
_OFFER_KEYS = ("provider", "region", "zone", "instance_type", "price_kind", "term_months",
               "payment_option", "offering_class", "currency")  # fmt: skip


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
            **{k: row[k] for k in _OFFER_KEYS},
            price=float(row["price_per_gpu_hour"]),
            price_usd=None if usd is None else float(usd),
            discount_pct=row.get("discount_pct"),
            on_demand_price=row.get("on_demand_price"),
        )


@dataclass(frozen=True)
class Move:
    """One price kind (or the reserved discount) of one GPU model, now and then."""

    price_kind: str
    now: Offer | None
    then: Offer | None

    @property
    def move_pct(self) -> float | None:
        if self.now is None or self.then is None or not self.then.price_usd:
            return None
        return round(100 * (self.now.price_usd or 0) / self.then.price_usd - 100, 2)

    @property
    def points(self) -> float | None:
        if self.now is None or self.then is None:
            return None
        return round((self.now.discount_pct or 0) - (self.then.discount_pct or 0), 2)


@dataclass(frozen=True)
class ModelReview:
    gpu_model: str
    kinds: tuple[Move, ...]
    reserved_discount: Move | None


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
            "models": [_model_dict(m) for m in self.models],
            "unrated": self.unrated,
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
    offers = {(r["gpu_model"], r["price_kind"], r["side"]): Offer.of(r) for r in cheapest}
    best = {(r["gpu_model"], r["side"]): Offer.of(r) for r in discounts}
    names = sorted({k[0] for k in offers} | {k[0] for k in best})
    result = []
    for name in names:
        kinds = tuple(
            Move(kind, offers.get((name, kind, "now")), offers.get((name, kind, "then")))
            for kind in KINDS
            if (name, kind, "now") in offers or (name, kind, "then") in offers
        )
        discount = Move("reserved", best.get((name, "now")), best.get((name, "then")))
        has_discount = discount.now is not None or discount.then is not None
        result.append(ModelReview(name, kinds, discount if has_discount else None))
    return tuple(result)


def _move_dict(move: Move, key: str) -> dict[str, Any]:
    side = {"now": _offer_dict(move.now), "then": _offer_dict(move.then)}
    value = move.move_pct if key == "move_pct" else move.points
    return {"price_kind": move.price_kind, **side, key: value}


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
        "kinds": [_move_dict(m, "move_pct") for m in model.kinds],
        "reserved_discount": None if discount is None else _move_dict(discount, "points"),
    }
