"""Volcano Engine ECS: instance types and spot price history to price records (pure, no I/O).

The answers (each the `Result` object), keyed by request:

    <region>/types/page-<n>             DescribeInstanceTypes
    <region>/spot/<type>/page-<n>       DescribeSpotPriceHistory of one GPU type

GPU facts are the answer's own: `Gpu.GpuDevices` (`ProductName`, `Count`, `Memory.Size` in
MiB) of a type, `Processor.Cpus` and `Memory.Size` (MiB) its host; a type with no GPU device
is not a GPU type. Spot prices are per zone and per hour, dated by the point's own
`Timestamp`: every point of the window asked is a record, so the history between two
collections is stored. The answer names no currency: it is the account's site (CNY China,
USD International), from the configuration.
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any, TypeAlias

from collectors import gpus, kit
from collectors.base import ParseResult, Payloads, PriceRecord, money
from collectors.common import PayloadShapeError

PROVIDER = "volcengine"
TYPES_LIST = "InstanceTypes"
SPOT_LIST = "SpotPrices"

Log: TypeAlias = "logging.LoggerAdapter[logging.Logger]"


class Skip(Exception):
    """A row that yields no record, for the reason given."""


def listed(answer: Any, field: str, key: str) -> list[Any]:
    """The list `field` of an answer's Result; a changed shape fails loudly."""
    rows = kit.obj(answer).get(field)
    if not isinstance(rows, list):
        raise PayloadShapeError(PROVIDER, f"{key}: the answer has no {field} list")
    return rows


def gpu_types(answers: list[Any], key: str) -> list[str]:
    """The GPU instance types DescribeInstanceTypes listed, in a stable order."""
    found = set()
    for answer in answers:
        for row in listed(answer, TYPES_LIST, key):
            itype = kit.obj(row).get("InstanceTypeId")
            if _devices(row) and isinstance(itype, str) and itype and len(itype) <= 60:
                found.add(itype)
    return sorted(found)


def parse(payloads: Payloads, *, currency: str, regions: frozenset[str], log: Log) -> ParseResult:
    """Every answer of the asked regions to records; see the module docstring for the rules."""
    result = ParseResult()
    skipped: Counter[str] = Counter()
    facts: dict[tuple[str, str], gpus.Resolved | None] = {}
    for key in sorted(payloads):
        region, kind, itype = _key(key)
        if kind == "types" and (not regions or region in regions):
            for row in listed(payloads[key], TYPES_LIST, key):
                _type(row, region, facts, result, skipped, log)
    kept: dict[tuple[Any, ...], PriceRecord] = {}
    for key in sorted(payloads):
        region, kind, itype = _key(key)
        if kind != "spot" or (regions and region not in regions):
            continue
        found = facts.get((region, itype))
        if found is None:
            continue  # a type without facts is reported once, from its type row
        for row in listed(payloads[key], SPOT_LIST, key):
            try:
                record = _spot(row, region, itype, found.gpu, currency)
            except Skip as why:
                skipped[str(why)] += 1
                log.warning("volcengine: %s: spot point skipped: %s", key, why)
                result.unreadable.add(itype)  # unconfirmed, not withdrawn
                continue
            first = kept.setdefault((record.key(), record.effective_at), record)
            if first is record:
                result.facts[itype] = found.source
    result.records = list(kept.values())
    result.skipped_rows = sum(skipped.values())
    if result.unknown_instance_types:
        unknown = ", ".join(sorted(result.unknown_instance_types))
        log.warning("volcengine: GPU types without GPU facts: %s", unknown)
    log.info("volcengine: %d records, %d rows skipped", len(result.records), result.skipped_rows)
    return result


def _key(key: Any) -> tuple[str, str, str]:
    parts = str(key).split("/")
    if len(parts) == 3 and parts[1] == "types" and all(parts):
        return parts[0], "types", ""
    if len(parts) == 4 and parts[1] == "spot" and all(parts):
        return parts[0], "spot", parts[2]
    raise PayloadShapeError(PROVIDER, f"unexpected payload key {str(key)[:80]!r}")


def _type(
    row: Any,
    region: str,
    facts: dict[tuple[str, str], gpus.Resolved | None],
    result: ParseResult,
    skipped: Counter[str],
    log: Log,
) -> None:
    itype = kit.obj(row).get("InstanceTypeId")
    if not _devices(row):
        return  # not a GPU type
    if not isinstance(itype, str) or not itype or len(itype) > 60:
        skipped["no InstanceTypeId"] += 1
        log.warning("volcengine: %s: a GPU type without an InstanceTypeId skipped", region)
        return
    try:
        said = _said(row)
    except Skip as why:
        skipped[str(why)] += 1
        log.warning("volcengine: %s %s skipped: %s", region, itype, why)
        result.unreadable.add(itype)
        return
    found = gpus.resolve(PROVIDER, itype, said)
    if found is None or found.gpu.gpu_memory_gib <= 0:
        result.unknown_instance_types.add(itype)
        found = None
    facts[(region, itype)] = found


def _devices(row: Any) -> list[Any]:
    devices = kit.obj(kit.obj(row).get("Gpu")).get("GpuDevices")
    return devices if isinstance(devices, list) else []


def _said(row: Any) -> gpus.InstanceGpu:
    """The type's GPUs and host as the answer says them."""
    devices = _devices(row)
    if len(devices) != 1:
        raise Skip("not one kind of GPU device")
    device = kit.obj(devices[0])
    name = device.get("ProductName")
    count = kit.size(device.get("Count"))
    memory = _gib(kit.obj(device.get("Memory")).get("Size"))
    model = gpus.stored_model(PROVIDER, name) if isinstance(name, str) and len(name) <= 60 else None
    if model is None or count is None or memory is None:
        raise Skip("its GPU device lacks a ProductName, Count or Memory.Size")
    body = kit.obj(row)
    vcpus = kit.size(kit.obj(body.get("Processor")).get("Cpus"))
    host = _gib(kit.obj(body.get("Memory")).get("Size"))
    return gpus.InstanceGpu(model, count, memory, vcpus, host)


def _gib(mib: Any) -> float | None:
    number = kit.size(mib)
    return None if number is None else number / 1024


def _spot(row: Any, region: str, itype: str, gpu: gpus.InstanceGpu, currency: str) -> PriceRecord:
    point = kit.obj(row)
    zone, stamp = point.get("ZoneId"), kit.utc_timestamp(point.get("Timestamp"))
    price = kit.exact(point.get("SpotPrice"), kit.NUMBERS_OR_TEXT)
    if point.get("InstanceTypeId", itype) != itype:
        raise Skip("a point of another instance type")
    if not isinstance(zone, str) or not zone.startswith(f"{region}-") or len(zone) > 60:
        raise Skip(f"zone {str(zone)[:40]!r} is not in {region}")
    if price is None or price <= 0 or stamp is None:
        raise Skip("no positive SpotPrice or no Timestamp")
    offer = kit.Offer("spot", currency, money(price), effective_at=stamp)
    return kit.record(PROVIDER, region, itype, gpu, offer, zone=zone)
