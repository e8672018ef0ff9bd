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


_TYPES = ("InstanceTypes", "InstanceType")


def known_types(
    payloads: Payloads, *, report: bool = True
) -> tuple[dict[str, gpus.Resolved], dict[str, str]]:
    """The GPU types of DescribeInstanceTypes with their GPU facts (and where they came from),
    and the GPU types nobody gives a GPU count and per-GPU memory for, each with the reason.
    With `report`, what the table contradicts or cannot name is logged (once a run: the
    parse reports, the fetch only needs the list)."""
    known: dict[str, gpus.Resolved] = {}
    unknown: dict[str, str] = {}
    pages = [(k, p) for k, p in payloads.items() if k.startswith("types/")]
    if not pages:
        raise PayloadShapeError(PROVIDER, "no DescribeInstanceTypes answer (types/page-1)")
    items = [(key, item) for key, page in pages for item in _list(page, _TYPES, key)]
    sort = _Sorter(known, unknown, report)
    unreadable = [key for key, item in items if not sort(item, key)]
    if items and len(unreadable) == len(items):  # not one InstanceType could be read
        raise PayloadShapeError(PROVIDER, f"{items[0][0]}: an InstanceType without InstanceTypeId")
    return known, unknown


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


# -- instance types --------------------------------------------------------------------------


class _Sorter:
    """Sorts InstanceType items into `known` (with their facts) and `unknown` (with why)."""

    def __init__(
        self, known: dict[str, gpus.Resolved], unknown: dict[str, str], report: bool
    ) -> None:
        self.known, self.unknown, self.report = known, unknown, report

    def __call__(self, item: Any, key: str) -> bool:
        """Sort one item; False when it names no type."""
        if not isinstance(item, dict) or not isinstance(item.get("InstanceTypeId"), str):
            # One row of another shape: the type it names cannot be read, so its prices are
            # reported as of an unknown type; the others' stand.
            self._warn("%s: %s: an InstanceType without InstanceTypeId; skipped", PROVIDER, key)
            return False
        itype, amount = item["InstanceTypeId"], _number(item.get("GPUAmount"))
        if amount is None or amount <= 0:
            return True  # not a GPU type (the API sets GPUSpec on some of those too)
        said = self._said(itype, item)
        found = gpus.resolve(PROVIDER, itype, said)
        if found is None:
            self.unknown[itype] = (
                f"DescribeInstanceTypes gives no per-GPU memory (GPUSpec "
                f"{item.get('GPUSpec')!r}, GPUAmount {amount}) and the GPU table has no entry"
            )
            return True
        why = None if said is None else gpus.contradiction(PROVIDER, itype, said)
        if why is not None:
            self._warn("%s: %s: %s; using the API's", PROVIDER, itype, why)
        self.known[itype] = found
        return True

    def _said(self, itype: str, item: dict[str, Any]) -> InstanceGpu | None:
        """What DescribeInstanceTypes says of a GPU type, the table filling its gaps; None
        without a GPU count. A GPUSpec nobody spells leaves the model None (stored NULL)."""
        count = kit.size(item.get("GPUAmount"), kit.NUMBERS_OR_TEXT)
        if count is None:
            return None
        table = gpus.bundled(PROVIDER, itype)
        spec = item.get("GPUSpec")
        name = gpus.canonical_model(PROVIDER, spec)
        if name is None and table is not None and table.gpu_count == count:
            name = table.gpu_model  # a spelling the table lacks, of a type it knows
        elif name is None:
            self._warn(
                "%s: %s: GPUSpec %r is no GPU the table knows: stored with the model unknown "
                "(name it in [gpus.models.<name>] aliases)",
                PROVIDER,
                itype,
                spec,
            )
        memory = kit.size(item.get("GPUMemorySize"), kit.NUMBERS_OR_TEXT)
        memory = memory if memory is not None else (table.gpu_memory_gib if table else None)
        if memory is None:
            return None
        vcpus = kit.size(item.get("CpuCoreCount"), kit.NUMBERS_OR_TEXT)
        host = kit.size(item.get("MemorySize"), kit.NUMBERS_OR_TEXT)
        return InstanceGpu(
            name,
            count,
            memory,
            vcpus if vcpus is not None else (table.vcpus if table else None),
            host if host is not None else (table.memory_gib if table else None),
        )

    def _warn(self, message: str, *args: Any) -> None:
        if self.report:
            log.warning(message, *args)


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
