"""Tencent Cloud: DescribeZoneInstanceConfigInfos answers to price records (pure, no I/O).

Each row of `InstanceTypeQuotaSet` is one instance type in one zone under one charge type,
with an `ItemPrice` holding list and discounted amounts. The price stored is the one paid:
`UnitPriceDiscount` per hour (pay-as-you-go, spot), `DiscountPrice*` for the prepaid totals.
`Discount` is never applied by us ("20" means 20 % of list, and the API already did it).
Zero or null means "not sold that way": no record. Numbers may arrive as strings.

Spot prices are per zone. Pay-as-you-go and prepaid prices are per region when every zone
agrees (they do, as far as the docs go); zones that disagree keep their own records.

GPU facts: the answer's own `GpuCount` (physical GPUs, below 1 for a vGPU share), `Cpu` and
`Memory`; the answer names no GPU, so the model and its per-GPU memory come from the GPU table's
entry for the type, else from its `InstanceFamily` ([names.tencent] in the table, the memory of
the family's listed sizes). A type the table contradicts is logged; the answer wins.
"""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from dataclasses import replace
from typing import Any, TypeAlias

from collectors import gpus, kit
from collectors.base import ParseResult, Payloads, PriceRecord
from collectors.common import PayloadShapeError, PriceKind
from collectors.tencent.prices import Skip, offered

PROVIDER = "tencent"
ACTION = "DescribeZoneInstanceConfigInfos"
CHARGE_KINDS: dict[str, PriceKind] = {
    "POSTPAID_BY_HOUR": "on_demand",
    "SPOTPAID": "spot",
    "PREPAID": "reserved",
}
AVAILABLE = {"SELL": True, "SOLD_OUT": False}
TEXT_FIELDS = ("Zone", "InstanceType", "InstanceChargeType")

Log: TypeAlias = "logging.LoggerAdapter[logging.Logger]"


def parse(
    payloads: Payloads,
    *,
    currency: str,
    regions: frozenset[str],
    log: Log,
) -> ParseResult:
    """Every answer of the asked regions to records; see the module docstring for the rules."""
    return _Parser(currency, log).run(payloads, regions)


class _Parser:
    def __init__(self, currency: str, log: Log) -> None:
        self.currency, self.log = currency, log
        self.result = ParseResult()
        self.offers: dict[tuple[Any, ...], PriceRecord] = {}  # per zone, first seen wins
        self.skipped: Counter[str] = Counter()
        self.contradictions: dict[str, str] = {}
        self.facts: dict[tuple[Any, ...], gpus.Resolved | None] = {}  # one look-up per shape

    def run(self, payloads: Payloads, regions: frozenset[str]) -> ParseResult:
        for key in sorted(payloads):
            region = _region_of_key(key)
            if regions and region not in regions:
                continue
            for index, item in enumerate(_quota_set(payloads[key], key)):
                self._row(item, region, f"{key} item {index}")
        self.result.records = _per_region(list(self.offers.values()), self.log)
        self.result.skipped_rows = sum(self.skipped.values())
        self._summary()
        return self.result

    def _row(self, item: Any, region: str, where: str) -> None:
        try:
            records = self._records(item, region)
        except Skip as skip:
            self.skipped[skip.reason] += 1
            if skip.odd and isinstance(item, dict) and isinstance(item.get("InstanceType"), str):
                self.result.unreadable.add(item["InstanceType"])  # unconfirmed, not withdrawn
            if skip.odd:
                self.log.warning("tencent: %s: skipped (%s): %s", where, skip.reason, _brief(item))
            return
        new = conflicts = 0
        for record in records:
            kept = self.offers.setdefault(record.key(), record)
            if kept is record:
                new += 1
            elif kept.price_per_hour != record.price_per_hour:
                # Which of two prices Tencent bills is not knowable from the answer: keep the
                # first (rows are read in a fixed order) and say so.
                conflicts += 1
                self.log.warning(
                    "tencent: %s: second price %s for %s; keeping %s",
                    where,
                    record.price_per_hour,
                    _offer(record),
                    kept.price_per_hour,
                )
        if records and not new:
            self.skipped["conflicting price" if conflicts else "duplicate"] += 1

    def _records(self, item: Any, region: str) -> list[PriceRecord]:
        if not isinstance(item, dict):
            raise Skip("not an object")
        if not all(isinstance(item.get(f), str) and item[f] for f in TEXT_FIELDS):
            raise Skip(f"lacks one of {', '.join(TEXT_FIELDS)}")
        zone, instance_type, charge = (item[f] for f in TEXT_FIELDS)
        if zone.rpartition("-")[0] != region:
            raise Skip(f"zone {zone} is not in {region}")
        kind = CHARGE_KINDS.get(charge)
        if kind is None:
            raise Skip(f"charge type {charge}")
        if not isinstance(item.get("Price"), dict):
            raise Skip("no Price object")
        found = self._facts(item, instance_type)
        if found is None:
            self.result.unknown_instance_types.add(instance_type)
            return []
        gpu = found.gpu
        prices = offered(kind, item["Price"])
        if not prices:
            raise Skip("not offered (no price)", odd=False)
        self.result.facts[instance_type] = found.source
        available = AVAILABLE.get(str(item.get("Status")))
        return [
            kit.record(
                PROVIDER,
                region,
                instance_type,
                gpu,
                kit.Offer(kind, self.currency, hourly, term, upfront_total=upfront),
                zone=zone,
                available=available,
            )
            for term, hourly, upfront in prices
        ]

    def _facts(self, item: dict[str, Any], instance_type: str) -> gpus.Resolved | None:
        """The GPUs of a row's type: the answer's count and host size, the table's (or the
        family's) model and per-GPU memory, the user's entry over both; None when no one gives
        a count and a per-GPU memory."""
        count = kit.size(item.get("GpuCount"), kit.NUMBERS_OR_TEXT)
        cpu = kit.size(item.get("Cpu"), kit.NUMBERS_OR_TEXT)
        memory = kit.size(item.get("Memory"), kit.NUMBERS_OR_TEXT)
        family = item.get("InstanceFamily")
        shape = (instance_type, count, cpu, memory, family)
        if shape not in self.facts:
            said = _said(instance_type, count, (cpu, memory), family)
            if said is not None:
                why = gpus.contradiction(PROVIDER, instance_type, said)
                if why is not None:
                    self.contradictions[instance_type] = why
            found = gpus.resolve(PROVIDER, instance_type, said)
            # A per-GPU memory of 0 is "unknown": only a user's entry can supply it.
            usable = found is not None and found.gpu.gpu_memory_gib > 0
            self.facts[shape] = found if usable else None
        return self.facts[shape]

    def _summary(self) -> None:
        result = self.result
        for instance_type, why in sorted(self.contradictions.items()):
            self.log.warning("tencent: %s: %s; using the API's", instance_type, why)
        if result.unknown_instance_types:
            unknown = ", ".join(sorted(result.unknown_instance_types))
            self.log.warning(
                "tencent: instance types without GPU facts (neither the GPU table nor their "
                "family names the GPU): %s",
                unknown,
            )
        reasons = ", ".join(f"{k}: {n}" for k, n in sorted(self.skipped.items()))
        self.log.info(
            "tencent: %d records, %d rows skipped%s",
            len(result.records),
            result.skipped_rows,
            f" ({reasons})" if reasons else "",
        )


def _said(
    instance_type: str, count: float | None, host: kit.Host, family: Any
) -> gpus.InstanceGpu | None:
    """What the answer says of a type's GPUs, the model and per-GPU memory from the table's
    entry or the family; None without a GPU count. The memory is 0 where no one knows it (a
    user's [gpus] entry may give it; `_Parser._facts` refuses it otherwise)."""
    table = gpus.bundled(PROVIDER, instance_type)
    memory: float | None
    if table is not None:
        model, memory = table.gpu_model, table.gpu_memory_gib
    else:
        model, memory = _family(family)
    if count is None:
        return None
    vcpus, host_gib = host
    if table is not None:
        vcpus = vcpus if vcpus is not None else table.vcpus
        host_gib = host_gib if host_gib is not None else table.memory_gib
    return gpus.InstanceGpu(model, count, memory or 0.0, vcpus, host_gib)


def _family(family: Any) -> tuple[str | None, float | None]:
    """(model, per-GPU memory) of an instance family: [names.tencent] names its GPU; the memory
    is the one every listed size of the family has, else the model's only variant."""
    if not isinstance(family, str) or not family:
        return None, None
    model = gpus.canonical_model(PROVIDER, family)
    sizes = {
        (entry.gpu_model, entry.gpu_memory_gib)
        for itype, entry in gpus.bundled_types().get(PROVIDER, {}).items()
        if itype.partition(".")[0] == family
    }
    if len(sizes) == 1:
        [(listed, memory)] = sizes
        return model or listed, memory if model in (None, listed) else None
    return model, gpus.only_memory(model)


def _per_region(records: list[PriceRecord], log: Log) -> list[PriceRecord]:
    """Spot stays per zone; other prices become one regional record when all zones agree."""
    # Spot records stand alone; the others are gathered by offer, in the order first seen.
    groups: dict[tuple[Any, ...], list[PriceRecord]] = defaultdict(list)
    for r in records:
        offer = (r.region, r.instance_type, r.price_kind, r.term_months)
        groups[(r.key(),) if r.price_kind == "spot" else offer].append(r)
    out: list[PriceRecord] = []
    for zonal in groups.values():
        first = zonal[0]
        if first.price_kind == "spot":
            out.extend(zonal)
        elif len({(r.price_per_hour, r.upfront_total) for r in zonal}) == 1:
            out.append(replace(first, zone=None, available=_any_available(zonal)))
        else:
            log.warning(
                "tencent: %s in %s is priced differently per zone (%s); stored per zone",
                _offer(first),
                first.region,
                ", ".join(f"{r.zone} {r.price_per_hour}" for r in zonal),
            )
            out.extend(zonal)
    return out


def _any_available(records: list[PriceRecord]) -> bool | None:
    said = {r.available for r in records}
    if True in said:
        return True
    return False if said == {False} else None


def _region_of_key(key: Any) -> str:
    action, _, region = str(key).partition("/")
    if action != ACTION or not region:
        raise PayloadShapeError(PROVIDER, f"unexpected payload key {key!r}")
    return region


def _quota_set(answer: Any, key: str) -> list[Any]:
    response = answer.get("Response") if isinstance(answer, dict) else None
    if isinstance(response, dict) and isinstance(response.get("Error"), dict):
        error = response["Error"]
        raise PayloadShapeError(PROVIDER, f"{key}: an error answer: {error.get('Code')}")
    rows = response.get("InstanceTypeQuotaSet") if isinstance(response, dict) else None
    if not isinstance(rows, list):
        raise PayloadShapeError(PROVIDER, f"{key}: no Response.InstanceTypeQuotaSet list")
    return rows


def _offer(record: PriceRecord) -> str:
    term = f" {record.term_months} months" if record.term_months else ""
    return f"{record.instance_type} {record.price_kind}{term}"


def _brief(item: Any) -> str:
    if not isinstance(item, dict):
        return repr(item)[:120]
    fields = (*TEXT_FIELDS, "Status")
    return " ".join(str(item.get(f, "?")) for f in fields)
