"""AWS Savings Plans rates to reserved offers: the pure part of reading what `savings` kept.

A plan is a product of the Savings Plans file (`productFamily` ComputeSavingsPlans or
EC2InstanceSavingsPlans, `purchaseOption`, `purchaseTerm`); its term lists one hourly rate per
discounted usage. A rate prices an instance type where its `discountedUsageType` and
`discountedOperation` are those of a plain Linux, shared-tenancy EC2 product of the region's
offer file (`BoxUsage:<type>` and `RunInstances`): the product the on-demand price is read from,
so the plan's rate is for exactly that offer. The rate is the effective hourly price under the
plan whatever the purchase option (the file splits out no upfront part): `price_per_hour` is the
rate and `upfront_total` stays NULL (docs/sql.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from collectors import kit
from collectors.aws.terms import LEASE_MONTHS, PURCHASE_OPTIONS
from collectors.base import money
from collectors.kit import Offer

# productFamily -> offering_class (the file's spelling, spaces and case aside).
PLAN_CLASSES = {
    "computesavingsplans": "compute_savings_plan",
    "ec2instancesavingsplans": "ec2_instance_savings_plan",
}
YEAR_MONTHS = {1: 12, 3: 36}
HOURLY = "Hrs"

Usage = tuple[str, str]  # (usageType, operation) of an EC2 product


def usage_of(attrs: dict[str, Any]) -> Usage | None:
    """The usage a Savings Plans rate names an EC2 product by."""
    usage, operation = attrs.get("usagetype"), attrs.get("operation")
    ok = isinstance(usage, str) and isinstance(operation, str)
    return (usage, operation) if ok else None  # type: ignore[return-value]


def offers(kept: dict[str, Any]) -> Iterator[tuple[Usage, Offer | None]]:
    """(usage, offer or None when the rate or its plan is not understood) per kept rate."""
    plans = {kit.obj(p).get("sku"): kit.obj(p) for p in _list(kept.get("products"))}
    for term in _list(kept.get("terms")):
        term = kit.obj(term)
        plan = plans.get(term.get("sku"))
        shape = _plan(plan, term) if plan is not None else None
        for rate in _list(term.get("rates")):
            rate = kit.obj(rate)
            usage = (rate.get("discountedUsageType"), rate.get("discountedOperation"))
            if isinstance(usage[0], str) and isinstance(usage[1], str):
                yield usage, _offer(shape, rate)  # type: ignore[misc]


def _plan(plan: dict[str, Any], term: dict[str, Any]) -> tuple[int, str, str] | None:
    """(term months, payment option, offering class) of a plan, or None."""
    attrs = kit.obj(plan.get("attributes"))
    family = plan.get("productFamily") or attrs.get("productFamily")
    offering = PLAN_CLASSES.get(str(family).replace(" ", "").lower())
    payment = PURCHASE_OPTIONS.get(str(attrs.get("purchaseOption")))
    months = _months(term.get("leaseContractLength"), attrs.get("purchaseTerm"))
    if offering is None or payment is None or months is None:
        return None
    return months, payment, offering


def _months(length: Any, purchase_term: Any) -> int | None:
    """The term's `leaseContractLength` ({"duration": 1, "unit": "year"}), else the plan's
    `purchaseTerm` ("1yr"); where both are given they must agree."""
    by_term = LEASE_MONTHS.get(str(purchase_term)) if purchase_term is not None else None
    length = kit.obj(length)
    if not length:
        return by_term
    duration = kit.exact(length.get("duration"), kit.NUMBERS_OR_TEXT)
    unit = str(length.get("unit", "")).lower().removesuffix("s")
    if duration is None or unit != "year" or duration != duration.to_integral_value():
        return None
    months = YEAR_MONTHS.get(int(duration))
    return months if by_term is None or by_term == months else None


def _offer(shape: tuple[int, str, str] | None, rate: dict[str, Any]) -> Offer | None:
    if shape is None or rate.get("unit", HOURLY) != HOURLY:
        return None
    priced = kit.obj(rate.get("discountedRate"))
    amount = kit.exact(priced.get("price"), kit.NUMBERS_OR_TEXT)
    currency = priced.get("currency")
    if amount is None or not isinstance(currency, str) or not currency:
        return None
    months, payment, offering = shape
    return Offer("reserved", currency, money(amount), months, payment, offering)


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
