"""AWS Savings Plans rates to reserved offers: the pure part of reading what `savings` kept.

A plan is a product of the Savings Plans file (`productFamily` ComputeSavingsPlans or
EC2InstanceSavingsPlans, `purchaseOption`, `purchaseTerm`); its term lists one hourly rate per
discounted product. A rate prices an instance type where its `discountedSku` is the SKU of a
plain Linux, shared-tenancy EC2 product of the region (the product the on-demand price is read
from), or, for a rate naming no such SKU, where its `discountedUsageType` and
`discountedOperation` are that product's (`BoxUsage:<type>` and `RunInstances`): the plan's
rate is for exactly that offer. The rate is the effective hourly price under the
plan whatever the purchase option (the file splits out no upfront part): `price_per_hour` is the
rate and `upfront_total` 0, no part of it split out (docs/sql.md).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from decimal import Decimal
from typing import Any, Protocol, TypeGuard

from collectors import kit
from collectors.aws import terms
from collectors.aws.terms import LEASE_MONTHS, PURCHASE_OPTIONS
from collectors.base import ParseResult, Payloads, PriceRecord, money
from collectors.kit import Host, Offer

# productFamily -> offering_class (the file's spelling, spaces and case aside).
PLAN_CLASSES = {
    "computesavingsplans": "compute_savings_plan",
    "ec2instancesavingsplans": "ec2_instance_savings_plan",
}
YEAR_MONTHS = {1: 12, 3: 36}
HOURLY = "Hrs"
NO_UPFRONT = Decimal(0)  # none split out: the plan's rate is the whole effective price

Usage = tuple[str, str]  # (usageType, operation) of an EC2 product, or (SKU_KEY, its SKU)
SKU_KEY = "#sku"  # no usage type is spelled so


Boxes = dict[tuple[str, Usage], dict[str, Any]]  # (region, usage) -> the box's attributes


class Pricer(Protocol):
    """What `records` uses of the collector (collectors.aws.collector), by its shape."""

    @property
    def instance_types(self) -> tuple[str, ...]: ...
    def wanted(self, attrs: dict[str, Any]) -> bool: ...
    def _place(
        self, instance_type: str, region: str, zone: str | None, host: Host, result: ParseResult
    ) -> terms.Place | None: ...
    def _usable(
        self, offer: Offer | None, place: terms.Place, result: ParseResult
    ) -> TypeGuard[Offer]: ...


def records(
    payloads: Payloads,
    regions: Iterable[str],
    boxes: Boxes,
    collector: Pricer,
    result: ParseResult,
) -> list[PriceRecord]:
    """The Savings Plans rates of `boxes`, per region asked; a region whose file could not be
    read leaves its types' stored offers open (unconfirmed), never withdrawn."""
    found: dict[tuple[Any, ...], PriceRecord] = {}
    index = kit.obj(payloads.get("public/plans"))
    if index.get("failed"):
        result.notes.append(f"no Savings Plans prices: {index['failed']}")
    for region in regions:
        kept = kit.obj(payloads.get(f"public/plans/{region}"))
        if kept.get("failed") or (index.get("failed") and not index.get("missing")):
            if kept.get("failed"):
                result.notes.append(f"{region} Savings Plans not read: {kept['failed']}")
            types = (str(a["instanceType"]) for (at, _), a in boxes.items() if at == region)
            result.unreadable.update(types)
            continue
        for keys, offer in offers(kept):
            attrs = next((boxes[(region, k)] for k in keys if (region, k) in boxes), None)
            if attrs is None:  # another OS, tenancy or type: not a box this collection prices
                continue
            host = terms.host_size(attrs)
            place = collector._place(str(attrs["instanceType"]), region, None, host, result)
            if place is not None and collector._usable(offer, place, result):
                record = terms.record(place, offer)
                # A plan listed twice is one price: the first one read.
                found.setdefault(record.key(), record)
    return list(found.values())


def api_boxes(collector: Pricer, pages: Iterable[tuple[str, Any]]) -> Boxes:
    """The plain Linux boxes of the Price List pages (what the plans' rates are joined to on
    the API path); items that are not products are the API path's to count, skipped here."""
    boxes: Boxes = {}
    for _, page in pages:
        for item in kit.obj(page).get("PriceList") or []:
            try:
                product = json.loads(item) if isinstance(item, str) else None
            except (ValueError, RecursionError):
                continue
            attrs = kit.obj(kit.obj(kit.obj(product).get("product")).get("attributes"))
            if terms.is_plain_linux_box(attrs) and collector.wanted(attrs):
                for key in keys_of(kit.obj(product)):
                    boxes[(str(attrs.get("regionCode")), key)] = attrs
    return boxes


def keys_of(product: dict[str, Any]) -> list[Usage]:
    """The keys a Savings Plans rate names an EC2 product by: its SKU (`discountedSku`), and
    its usage type and operation (`discountedUsageType`, `discountedOperation`)."""
    head = kit.obj(product.get("product"))
    attrs = kit.obj(head.get("attributes"))
    sku, usage, operation = head.get("sku"), attrs.get("usagetype"), attrs.get("operation")
    keys: list[Usage] = [(SKU_KEY, sku)] if isinstance(sku, str) else []
    if isinstance(usage, str) and isinstance(operation, str):
        keys.append((usage, operation))
    return keys


def offers(kept: dict[str, Any]) -> Iterator[tuple[list[Usage], Offer | None]]:
    """(the keys of the product it prices, offer or None when the rate or its plan is not
    understood) per kept rate."""
    plans = {_text(kit.obj(p).get("sku")): kit.obj(p) for p in _list(kept.get("products"))}
    for term in _list(kept.get("terms")):
        term = kit.obj(term)
        plan = plans.get(_text(term.get("sku")))
        shape = _plan(plan, term) if plan is not None else None
        for rate in _list(term.get("rates")):
            rate = kit.obj(rate)
            sku, usage = _text(rate.get("discountedSku")), _text(rate.get("discountedUsageType"))
            operation = _text(rate.get("discountedOperation"))
            keys: list[Usage] = [(SKU_KEY, sku)] if sku is not None else []
            if usage is not None and operation is not None:
                keys.append((usage, operation))
            if keys:
                yield keys, _offer(shape, rate)


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
    return Offer("reserved", currency, money(amount), months, payment, offering, NO_UPFRONT)


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None
