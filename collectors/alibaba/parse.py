"""Alibaba Cloud ECS, the pure half: the answers `AlibabaCollector.fetch` keeps, to records.

Payload keys (the answers echo nothing of the request, so the key carries it):

    types/page-<n>                           DescribeInstanceTypes
    <region>/price/<type>/<unit>-<period>    DescribePrice (Hour-1, Month-1/3/6, Year-1/3), or
                                             the error body when the type is not sold that way
    <region>/spot/<type>/page-<n>            DescribeSpotPriceHistory

DescribePrice prices the instance plus its system disk: only the `instanceType` module of
`DetailInfos` is the instance's price. `DiscountPrice` is the discount AMOUNT; the price paid is
`TradePrice` (= OriginalPrice - DiscountPrice). The currency is the answer's own `Currency`.

GPU facts are DescribeInstanceTypes' own (`GPUSpec`, `GPUAmount`, `GPUMemorySize` per GPU, the
host's `CpuCoreCount` and `MemorySize`); the GPU table is the cross-check (a contradiction is
logged, the answer wins) and fills what the answer leaves out. A `GPUSpec` no table spells is
stored with the model unknown (NULL), never dropped.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import datetime
from decimal import Decimal
from typing import Any

from collectors import kit
from collectors.alibaba.catalogue import known_types, listed, number
from collectors.base import ParseResult, Payloads, PriceRecord, effective_hourly, money
from collectors.common import PayloadShapeError, PriceKind
from collectors.gpus import InstanceGpu

PROVIDER = "alibaba"
# "<PriceUnit>-<Period>" -> (price kind, term in months). A subscription's TradePrice is the
# total for the whole period, paid up front.
PRICE_TERMS: dict[str, tuple[PriceKind, int | None]] = {
    "Hour-1": ("on_demand", None),
    "Month-1": ("reserved", 1),
    "Month-3": ("reserved", 3),
    "Month-6": ("reserved", 6),
    "Year-1": ("reserved", 12),
    "Year-3": ("reserved", 36),
}
INSTANCE_MODULE = "instanceType"
# DescribePrice's answers for "this type is not sold here in this billing mode": kept as
# payloads so the record of the run is complete, and yield no price. A type refused one way
# (pay-as-you-go) may still be sold another (subscription, spot).
NOT_OFFERED_CODES = frozenset(
    {"PriceNotFound", "InvalidInstanceType.ValueNotSupported", "InvalidInstanceType.NotSupported"}
)

log = logging.getLogger(f"collectors.{PROVIDER}")


def _skip(result: ParseResult, where: str, why: str, itype: str | None = None) -> None:
    result.skipped_rows += 1
    if itype is not None:
        result.unreadable.add(itype)  # its offers missing here: unconfirmed, not withdrawn
    log.warning("%s: %s: skipped: %s", PROVIDER, where, why)


def parse_payloads(payloads: Payloads, regions: frozenset[str]) -> ParseResult:
    """Every price of the asked regions, with each priced type's source of GPU facts."""
    result = ParseResult()
    known, unknown = known_types(payloads)
    result.unknown_instance_types.update(unknown)
    for itype, why in sorted(unknown.items()):
        log.warning("%s: %s: %s; its prices are not stored", PROVIDER, itype, why)
    spot: dict[tuple[Any, ...], PriceRecord] = {}
    for key, body in payloads.items():
        region, call, itype, rest = _split(key)
        if call == "types" or region not in regions:
            continue
        found = known.get(itype)
        if found is None:
            result.unknown_instance_types.add(itype)
        elif call == "price":
            record = _price_record(key, body, (region, itype, rest), found.gpu, result)
            result.records.extend([record] if record else [])
        else:
            for record in _spot_records(key, body, (region, itype), found.gpu, result):
                _keep_once(spot, record, key, result)
    result.records.extend(spot.values())
    result.facts = {r.instance_type: known[r.instance_type].source for r in result.records}
    return result


# -- DescribePrice -----------------------------------------------------------------------------


def _price_record(
    key: str, body: Any, where: tuple[str, str, str], gpu: InstanceGpu, result: ParseResult
) -> PriceRecord | None:
    region, itype, term = where
    if term not in PRICE_TERMS:
        raise PayloadShapeError(PROVIDER, f"{key}: unknown price term {term!r}")
    if not isinstance(body, dict):
        raise PayloadShapeError(PROVIDER, f"{key}: the answer is not an object")
    if str(body.get("Code")) in NOT_OFFERED_CODES:
        return None
    info = body.get("PriceInfo")
    price = info.get("Price") if isinstance(info, dict) else None
    if not isinstance(price, dict):
        raise PayloadShapeError(PROVIDER, f"{key}: the answer has no PriceInfo.Price")
    modules = listed(price, ("DetailInfos", "DetailInfo"), key)
    module = next((m for m in modules if _is_instance_module(m)), None)
    amount, why = _paid(module)
    currency = price.get("Currency")
    if not isinstance(currency, str) or not currency:
        amount, why = None, "the answer names no Currency"  # never assumed from the site
    if amount is None or not isinstance(currency, str):
        _skip(result, key, why, itype)
        return None
    kind, months = PRICE_TERMS[term]
    upfront = money(amount) if months else None
    hourly = effective_hourly(Decimal(0), amount, months) if months else money(amount)
    return _record(region, None, itype, gpu, kind, months, currency, hourly, upfront, None)


def _is_instance_module(module: Any) -> bool:
    return isinstance(module, dict) and module.get("Resource") == INSTANCE_MODULE


def _paid(module: dict[str, Any] | None) -> tuple[Decimal | None, str]:
    """What is paid for the instance, or why it is not known. Never the order total: it
    includes the system disk."""
    if module is None:
        return None, "no instanceType module in DetailInfos"
    trade = number(module.get("TradePrice"))
    original, discount = number(module.get("OriginalPrice")), number(module.get("DiscountPrice"))
    if original is not None and discount is not None:
        # DiscountPrice is the amount taken off, not a price: what is paid is the difference.
        if trade is None:
            trade = original - discount
        elif original - discount != trade:
            why = f"TradePrice {trade} is not OriginalPrice {original} - DiscountPrice {discount}"
            return None, why
    if trade is None or trade <= 0:
        return None, f"no positive price in the instanceType module ({trade})"
    return trade, ""


# -- DescribeSpotPriceHistory ------------------------------------------------------------------


def _spot_records(
    key: str, page: Any, where: tuple[str, str], gpu: InstanceGpu, result: ParseResult
) -> Iterator[PriceRecord]:
    region, itype = where
    items = listed(page, ("SpotPrices", "SpotPriceType"), key)
    currency = page.get("Currency")
    for index, item in enumerate(items):
        at = f"{key} item {index}"
        if not isinstance(item, dict) or item.get("InstanceType") != itype:
            _skip(result, at, "not an item of the asked instance type")
            continue
        price, stamp = number(item.get("SpotPrice")), kit.utc_timestamp(item.get("Timestamp"))
        zone = item.get("ZoneId")
        if price is None or price <= 0 or stamp is None or not isinstance(zone, str) or not zone:
            _skip(result, at, "no positive SpotPrice, Timestamp or ZoneId", itype)
            continue
        if not isinstance(currency, str) or not currency:
            _skip(result, at, "the answer names no Currency", itype)
            continue
        # Each item is the price in force from its Timestamp on, in its zone.
        yield _record(region, zone, itype, gpu, "spot", None, currency, money(price), None, stamp)


def _keep_once(
    kept: dict[tuple[Any, ...], PriceRecord], record: PriceRecord, key: str, result: ParseResult
) -> None:
    """Pages may repeat an item; two different prices for one zone at one moment are not
    knowable, so the first is kept and the second counted."""
    first = kept.setdefault((record.key(), record.effective_at), record)
    if first.price_per_hour != record.price_per_hour:
        _skip(
            result,
            key,
            f"a second spot price {record.price_per_hour} in {record.zone} at "
            f"{record.effective_at}; keeping {first.price_per_hour}",
        )


# -- helpers -----------------------------------------------------------------------------------


def _record(
    region: str,
    zone: str | None,
    itype: str,
    gpu: InstanceGpu,
    kind: PriceKind,
    months: int | None,
    currency: str,
    hourly: Decimal,
    upfront: Decimal | None,
    effective_at: datetime | None,
) -> PriceRecord:
    # A subscription is paid up front; Alibaba has no other payment option.
    offer = kit.Offer(
        kind, currency, hourly, months, upfront_total=upfront, effective_at=effective_at
    )
    return kit.record(PROVIDER, region, itype, gpu, offer, zone=zone)


def _split(key: str) -> tuple[str, str, str, str]:
    """(region, call, instance type, rest) of a payload key; ("", "types", "", n) for types."""
    parts = key.split("/")
    if len(parts) == 2 and parts[0] == "types" and parts[1].startswith("page-"):
        return "", "types", "", parts[1]
    if len(parts) == 4 and parts[1] in ("price", "spot") and all(parts):
        return parts[0], parts[1], parts[2], parts[3]
    raise PayloadShapeError(PROVIDER, f"unexpected payload key {key!r}")
