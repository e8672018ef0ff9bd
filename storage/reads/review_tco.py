"""The periodic review's 3-year strategies: per GPU model the cheapest candidate of each rental
strategy for the review's GPU need, now and as the prices stood at a past moment, through the
one TCO formula (`storage.reads.tco`), and, as the review compares like with like, the cheapest
of each side as priced on the other.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from storage.reads import tco as tco_reads

# One offer on both sides: the candidates' key, and the currency it is priced in.
_KEY = (*tco_reads.OFFER_KEY, "currency")


def strategies(
    con: Any, models: Sequence[str], need: tco_reads.Need, then: datetime
) -> list[dict[str, Any]]:
    """Per GPU model, the cheapest candidate of each strategy (on-demand, spot, each reserved
    term) for `need` with the model as its GPU, through the one TCO formula
    (`storage.reads.tco`), now (role `now`) and as the prices stood at `then` (`then`),
    cheapest first; and, like `cheapest`, the cheapest of each side as priced on the other
    (`now_offer_then`, `then_offer_now`; no row where it had no price there)."""
    # Every model's candidates of a side in one read (tco_reads.several), not one per model.
    answers = {
        side: tco_reads.several(con, models, need, as_of=as_of)
        for side, as_of in (("now", None), ("then", then))
    }
    rows = []
    for model in models:
        sides = {side: answers[side][model].rows for side in answers}
        for side, found in sides.items():
            seen: set[tuple[Any, ...]] = set()
            for row in found:  # cheapest first: the first of a strategy is its best
                if (strategy := (row["price_kind"], row["term_months"])) not in seen:
                    seen.add(strategy)
                    rows.append({"gpu_model": model, "role": side, **row})
        for side, other in (("now", "then"), ("then", "now")):
            best = sides[side][0] if sides[side] else None
            twin = [r for r in sides[other] if best and _key(r) == _key(best)]
            rows += [{"gpu_model": model, "role": f"{side}_offer_{other}", **r} for r in twin]
    return rows


def _key(row: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(row[k] for k in _KEY)
