"""Alibaba Cloud ECS, the pure half: the answers `AlibabaCollector.fetch` keeps, to records.

Payload keys (the answers echo nothing of the request, so the key carries it):

    types/page-<n>                           DescribeInstanceTypes
    <region>/price/<type>/<unit>-<period>    DescribePrice (Hour-1, Month-1, Year-1, Year-3), or
                                             the error body when the type is not sold there
    <region>/spot/<type>/page-<n>            DescribeSpotPriceHistory

DescribePrice prices the instance plus its system disk: only the `instanceType` module of
`DetailInfos` is the instance's price. `DiscountPrice` is the discount AMOUNT; the price paid is
`TradePrice` (= OriginalPrice - DiscountPrice). The currency is the answer's own `Currency`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime
from decimal import Decimal
from typing import Any

from collectors import gpus, kit
from collectors.base import ParseResult, Payloads, PriceRecord, effective_hourly, money
from collectors.common import PayloadShapeError, PriceKind
from collectors.gpus import InstanceGpu

PROVIDER = "alibaba"
# "<PriceUnit>-<Period>" -> (price kind, term in months). A subscription's TradePrice is the
# total for the whole period, paid up front.
PRICE_TERMS: dict[str, tuple[PriceKind, int | None]] = {
    "Hour-1": ("on_demand", None),
    "Month-1": ("reserved", 1),
    "Year-1": ("reserved", 12),
    "Year-3": ("reserved", 36),
}
INSTANCE_MODULE = "instanceType"
# DescribePrice's answers for "this type is not sold here (in this billing mode)": kept as
# payloads so the record of the run is complete, and yield no price.
NOT_OFFERED_CODES = frozenset({"PriceNotFound", "InvalidInstanceType.ValueNotSupported"})

log = logging.getLogger(f"collectors.{PROVIDER}")


def _skip(result: ParseResult, where: str, why: str, itype: str | None = None) -> None:
    result.skipped_rows += 1
    if itype is not None:
        result.unreadable.add(itype)  # its offers missing here: unconfirmed, not withdrawn
    log.warning("%s: %s: skipped: %s", PROVIDER, where, why)


_TYPES = ("InstanceTypes", "InstanceType")


def known_types(payloads: Payloads) -> tuple[dict[str, InstanceGpu], dict[str, str]]:
    """GPU types whose DescribeInstanceTypes specs agree with the GPU table (with the API's
    host size), and the GPU types that do not, each with the reason."""
    known: dict[str, InstanceGpu] = {}
    unknown: dict[str, str] = {}
    pages = [(k, p) for k, p in payloads.items() if k.startswith("types/")]
    if not pages:
        raise PayloadShapeError(PROVIDER, "no DescribeInstanceTypes answer (types/page-1)")
    items = [(key, item) for key, page in pages for item in _list(page, _TYPES, key)]
    unreadable = [key for key, item in items if not _check_spec(item, key, known, unknown)]
    if items and len(unreadable) == len(items):  # not one InstanceType could be read
        raise PayloadShapeError(PROVIDER, f"{items[0][0]}: an InstanceType without InstanceTypeId")
    return known, unknown


def parse_payloads(payloads: Payloads, regions: frozenset[str]) -> ParseResult:
    """Every price of the asked regions; types the GPU table does not confirm are reported."""
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
        gpu = known.get(itype)
        if gpu is None:
            result.unknown_instance_types.add(itype)
        elif call == "price":
            record = _price_record(key, body, (region, itype, rest), gpu, result)
            result.records.extend([record] if record else [])
        else:
            for record in _spot_records(key, body, (region, itype), gpu, result):
                _keep_once(spot, record, key, result)
    result.records.extend(spot.values())
    return result


# -- instance types --------------------------------------------------------------------------


def _check_spec(
    item: Any, key: str, known: dict[str, InstanceGpu], unknown: dict[str, str]
) -> bool:
    """Sort one InstanceType into `known` or `unknown`; False when it names no type."""
    if not isinstance(item, dict) or not isinstance(item.get("InstanceTypeId"), str):
        # One row of another shape: the type it names cannot be read, so its prices are
        # reported as of an unknown type; the others' stand.
        log.warning("%s: %s: an InstanceType without InstanceTypeId; skipped", PROVIDER, key)
        return False
    itype, amount = item["InstanceTypeId"], _number(item.get("GPUAmount"))
    if amount is None or amount <= 0:
        return True  # not a GPU type (the API sets GPUSpec on some of those too)
    spec, memory = item.get("GPUSpec") or "?", _number(item.get("GPUMemorySize"))
    api = f"{spec} x {amount}, {memory if memory is not None else '?'} GiB each"
    table = gpus.lookup(PROVIDER, itype)
    if table is None:
        unknown[itype] = f"not in the GPU table (API: {api})"
        return True
    agrees = gpus.canonical_model(PROVIDER, spec) == table.gpu_model
    agrees = agrees and float(amount) == table.gpu_count
    if not agrees or (memory is not None and float(memory) != table.gpu_memory_gib):
        unknown[itype] = (
            f"the API says {api}; the GPU table says {table.gpu_model} x "
            f"{table.gpu_count:g}, {table.gpu_memory_gib:g} GiB each"
        )
        return True
    # The GPU facts are the table's (canonical names); the host size is the API's own.
    vcpus, mem = _number(item.get("CpuCoreCount")), _number(item.get("MemorySize"))
    known[itype] = replace(
        table,
        vcpus=float(vcpus) if vcpus is not None else table.vcpus,
        memory_gib=float(mem) if mem is not None else table.memory_gib,
    )
    return True


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
    modules = _list(price, ("DetailInfos", "DetailInfo"), key)
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
    trade = _number(module.get("TradePrice"))
    original, discount = _number(module.get("OriginalPrice")), _number(module.get("DiscountPrice"))
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
    items = _list(page, ("SpotPrices", "SpotPriceType"), key)
    currency = page.get("Currency")
    for index, item in enumerate(items):
        at = f"{key} item {index}"
        if not isinstance(item, dict) or item.get("InstanceType") != itype:
            _skip(result, at, "not an item of the asked instance type")
            continue
        price, stamp = _number(item.get("SpotPrice")), kit.utc_timestamp(item.get("Timestamp"))
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


def _list(body: Any, path: tuple[str, str], key: str) -> list[Any]:
    """A list wrapped in an object (XML heritage: {"SpotPrices": {"SpotPriceType": [...]}})."""
    outer = body.get(path[0]) if isinstance(body, dict) else None
    items = outer.get(path[1]) if isinstance(outer, dict) else None
    if not isinstance(items, list):
        raise PayloadShapeError(PROVIDER, f"{key}: the answer has no {'.'.join(path)} list")
    return items


def _number(value: Any) -> Decimal | None:
    """Alibaba sends numbers as JSON numbers or as strings, depending on the call."""
    return kit.exact(value, kit.NUMBERS_OR_TEXT)
