"""What compute costs, in the periodic review: per GPU model the best PFLOP of dense FP16 per
US dollar now and then, and the cheapest way to run a GPU need for three years now and then.

The review compares like with like here too: a change is one offer's figure then against its
own figure now. Where the best offer then is not the best now, the two are no change; each gets
its own figure on the other side instead (`now_offer_then`, `then_offer_now`). The 3-year
figures come from the one TCO formula (`storage.reads.tco`), priced as the prices stood on each
side.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from storage.reads.review_sql import OFFER_KEY
from storage.reads.tco import Need
from tracker.config.daemon import ReviewSettings

SIDES = ("now", "then")
_ROLES = ("now", "then", "now_offer_then", "then_offer_now")  # as storage.review's
# The review's GPU need by default: the `tco` command's defaults (8 GPUs, 36 months, all hours
# used, spot +10 % for interruptions); the GPU is each model in turn.
NEED = Need(gpu="")
PFLOP_FIGURES = ("gpu_count", "gpu_tflops_fp16", "price_per_gpu_hour", "price_per_hour_usd",
                 "pflop_per_usd")  # fmt: skip
TCO_FIGURES = ("gpu_count", "instances", "hours", "terms", "price_per_hour_usd", "migration_usd",
               "total_usd", "usd_per_gpu_hour", "pflop_per_usd")  # fmt: skip


@dataclass(frozen=True)
class Best:
    """One offer's figures on one side: its key and the measure's figures."""

    offer: dict[str, Any]  # the OFFER_KEY columns
    figures: dict[str, Any]

    @classmethod
    def of(cls, row: Mapping[str, Any], figures: tuple[str, ...]) -> Best:
        return cls({k: row[k] for k in OFFER_KEY}, {k: _plain(row[k]) for k in figures})

    def to_dict(self) -> dict[str, Any]:
        return {**self.offer, **self.figures}


@dataclass(frozen=True)
class Comparison:
    """A measure (the figure named `value`) of the best offer now and then and, where those are
    two offers, each one's own figure on the other side."""

    value: str
    now: Best | None
    then: Best | None
    now_offer_then: Best | None = None  # the offer best now, as it stood then
    then_offer_now: Best | None = None  # the offer best then, as it stands now
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def same_offer(self) -> bool | None:
        if self.now is None or self.then is None:
            return None
        return self.now.offer == self.then.offer

    @property
    def change_pct(self) -> float | None:
        """Only where one offer is the best then and now: two offers' figures are no change."""
        return self._pct(self.then, self.now) if self.same_offer else None

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.extra,
            "now": _dict(self.now),
            "then": _dict(self.then),
            "change_pct": self.change_pct,
            "same_offer": self.same_offer,
            "now_offer_then": _dict(self.now_offer_then),
            "now_offer_change_pct": self._pct(self.now_offer_then, self.now),
            "then_offer_now": _dict(self.then_offer_now),
            "then_offer_change_pct": self._pct(self.then, self.then_offer_now),
        }

    def _pct(self, before: Best | None, after: Best | None) -> float | None:
        if before is None or after is None:
            return None
        old, new = before.figures[self.value], after.figures[self.value]
        if not old or new is None:
            return None
        return round(100 * float(new) / float(old) - 100, 2) + 0.0  # never -0.0


def pflop(rows: list[dict[str, Any]]) -> dict[str, Comparison]:
    """Per GPU model, the best PFLOP per dollar (`storage.review.best_pflop`)."""
    found = {(r["gpu_model"], r["role"]): Best.of(r, PFLOP_FIGURES) for r in rows}
    result = {}
    for name in sorted({name for name, _ in found}):
        now, then, now_then, then_now = (found.get((name, role)) for role in _ROLES)
        result[name] = Comparison("pflop_per_usd", now, then, now_then, then_now)
    return result


def strategies(rows: list[dict[str, Any]]) -> dict[str, Comparison]:
    """Per GPU model, the cheapest strategy now and then, with each side's best of every
    strategy, cheapest first, for the chart (`storage.reads.review_tco.strategies`)."""
    found: dict[tuple[str, str], list[Best]] = {}
    for r in rows:
        found.setdefault((r["gpu_model"], r["role"]), []).append(Best.of(r, TCO_FIGURES))
    result = {}
    for name in sorted({name for name, _ in found}):
        now, then, now_then, then_now = (found.get((name, role), [None])[0] for role in _ROLES)
        per_side = {side: [b.to_dict() for b in found.get((name, side), [])] for side in SIDES}
        extra = {"strategies": per_side}
        result[name] = Comparison("total_usd", now, then, now_then, then_now, extra)
    return result


def need_of(settings: ReviewSettings) -> Need:
    """The need `[review] tco_gpus`, `tco_months` and `tco_utilization` state."""
    return replace(NEED, gpus=settings.tco_gpus, months=settings.tco_months,
                   utilization=settings.tco_utilization)  # fmt: skip


def need_dict(need: Need) -> dict[str, Any]:
    """The need as the digest states it."""
    return {"gpus": need.gpus, "months": need.months, "utilization": need.utilization,
            "spot_overhead_pct": need.spot_overhead_pct}  # fmt: skip


def _dict(best: Best | None) -> dict[str, Any] | None:
    return None if best is None else best.to_dict()


def _plain(value: Any) -> Any:
    """A JSON-able figure: DuckDB's numbers as float, the rest as they are."""
    if value is None or isinstance(value, str | bool | int):
        return value
    return float(value)
