"""Azure savings plans: the `savingsPlan` array of a Linux pay-as-you-go row, as offers.

The Retail Prices API (api-version 2023-01-01-preview) lists, on each Linux `Consumption`
row, `savingsPlan: [{"unitPrice", "retailPrice", "term": "1 Year" | "3 Years"}]`. Unlike a
`Reservation` row's term total, a savings-plan price is per hour: the commitment's effective
rate for this SKU and region (docs/providers.md). Each becomes a reserved offer of its own
(`offering_class = 'savings_plan'`), beside the row's on-demand price, never in its place.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from collectors import kit
from collectors.base import money

OFFERING_CLASS = "savings_plan"
TERMS = {"1 Year": 12, "3 Years": 36}
# A plan is paid by the hour over the term: nothing up front.
NO_UPFRONT = money(Decimal(0))


def offers(item: dict[str, Any]) -> tuple[list[kit.Offer], list[str]]:
    """The row's savings-plan offers, and what is wrong with each entry that could not be read.

    A row without the array (an older api-version, a SKU no plan covers) has none; an empty
    array the same.
    """
    plans = item.get("savingsPlan")
    if plans is None:
        return [], []
    if not isinstance(plans, list):
        return [], [f"savingsPlan is a {type(plans).__name__}, not a list"]
    found: list[kit.Offer] = []
    problems: list[str] = []
    for index, plan in enumerate(plans):
        offer, problem = _offer(plan, item["currencyCode"])
        if offer is not None:
            found.append(offer)
        else:
            problems.append(f"savingsPlan[{index}] {problem}")
    return found, problems


def _offer(plan: Any, currency: str) -> tuple[kit.Offer | None, str]:
    if not isinstance(plan, dict):
        return None, "is not an object"
    term = plan.get("term")
    months = TERMS.get(term) if isinstance(term, str) else None
    if months is None:
        return None, f"has an unknown term {_short(term)}"
    # The unit price, as the contract names it; the API gives the same figure as retailPrice.
    price = kit.exact(plan.get("unitPrice"))
    if price is None or price <= 0:
        return None, f"({term}) has no price: unitPrice {_short(plan.get('unitPrice'))}"
    offer = kit.Offer(
        "reserved",
        currency,
        money(price),
        months,
        offering_class=OFFERING_CLASS,
        upfront_total=NO_UPFRONT,
    )
    return offer, ""


def _short(value: Any) -> str:
    """A value for a log line: a hostile answer's 100 kB string is cut."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
