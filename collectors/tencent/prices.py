"""Tencent Cloud: the amounts of an `ItemPrice` (pure): the one paid per hour, or the totals
paid for each prepaid period, checked against the list price beside them.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from collectors.base import effective_hourly, money
from collectors.common import PriceKind

# (price paid, list price) per hour; the first step of tiered pay-as-you-go (0-96 h).
HOURLY_FIELDS = ("UnitPriceDiscount", "UnitPrice")
# Prepaid rows carry the total for each period: (price paid, list price, months).
PREPAID_FIELDS = (
    ("DiscountPrice", "OriginalPrice", 1),
    ("DiscountPriceOneYear", "OriginalPriceOneYear", 12),
    ("DiscountPriceThreeYear", "OriginalPriceThreeYear", 36),
    ("DiscountPriceFiveYear", "OriginalPriceFiveYear", 60),
)


class Skip(Exception):
    """A row that yields no record: `odd` when it is not understood (logged as a warning)."""

    def __init__(self, reason: str, *, odd: bool = True) -> None:
        super().__init__(reason)
        self.reason, self.odd = reason, odd


def offered(kind: PriceKind, price: dict[str, Any]) -> list[tuple[int | None, Decimal, Any]]:
    """(term months, effective hourly, upfront total) of each price the row offers."""
    if kind != "reserved":
        # ChargeUnit HOUR is what makes UnitPrice* an hourly price (GB is for traffic).
        if price.get("ChargeUnit") != "HOUR":
            raise Skip(f"ChargeUnit {price.get('ChargeUnit')!r}, not HOUR")
        paid = _paid(price, *HOURLY_FIELDS)
        return [] if paid is None else [(None, money(paid), None)]
    out: list[tuple[int | None, Decimal, Any]] = []
    for paid_field, list_field, months in PREPAID_FIELDS:
        total = _paid(price, paid_field, list_field)
        if total is not None:
            out.append((months, effective_hourly(Decimal(0), total, months), money(total)))
    return out


def _paid(price: dict[str, Any], paid_field: str, list_field: str) -> Decimal | None:
    """The amount paid, or None when not offered; a discount above list is not understood."""
    paid = _amount(price, paid_field)
    listed = _amount(price, list_field)
    if paid is not None and listed is not None and paid > listed:
        raise Skip(f"{paid_field} {paid} above {list_field} {listed}")
    return paid


def _amount(price: dict[str, Any], field: str) -> Decimal | None:
    value = price.get(field)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise Skip(f"{field} is {value!r}")
    try:
        # str() keeps a JSON float as written (8.68, not its binary expansion); the SDK and
        # tccli pass numbers through as strings ("100.000000") just as well.
        amount = Decimal(str(value).strip())
    except InvalidOperation:
        raise Skip(f"{field} is {value!r}, not a number") from None
    if not amount.is_finite() or amount < 0:
        raise Skip(f"{field} is {value!r}")
    return amount or None  # 0 means not offered
