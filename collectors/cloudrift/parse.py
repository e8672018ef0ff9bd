"""CloudRift's instance-type list to price records: pure, no I/O.

Each instance type (`brand_short` names its GPU: "RTX 4090") has variants, one per GPU count
and host size (`rtx49-8c-nr.2`). A variant's `cost_per_hour` is in US cents for the whole
machine (65 = 0.65 USD), `vram` one GPU's memory in bytes, `dram` the host's memory in bytes.
Its datacenters are the keys of `available_nodes_per_dc` (older answers: `nodes_per_dc`) and
the type's `datacenters`; a datacenter with no free node keeps the list price with available
false, and a variant listed in no datacenter is stored once, region NULL, sold out. Variants
without a GPU (`gpu_count` 0) are CPU machines and are left out. CloudRift sells no spot or
reserved capacity in this list: on-demand only.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from collectors import gpus, kit
from collectors.base import ParseResult, Payloads, PriceRecord, money
from collectors.common import PayloadShapeError, flat

PROVIDER = "cloudrift"
PAYLOAD_KEY = "instance-types"
CURRENCY = "USD"
CENTS = Decimal(100)
GIB = 2**30
MOST_GPUS = 16  # no CloudRift machine has more; a larger count is a broken row

Log = logging.LoggerAdapter[Any]


class _Skip(Exception):
    """A variant the parser cannot read: logged, counted in skipped_rows."""


@dataclass(frozen=True)
class _Variant:
    name: str
    price: Decimal
    said: gpus.InstanceGpu | None  # None: no one knows one GPU's memory
    told: bool  # whether the answer gave the memory (`vram`)
    free: dict[str, bool]  # datacenter -> has a free node


def instance_types(body: Any) -> list[Any]:
    """The instance types of the answer; a changed overall shape fails the run loudly."""
    found = kit.obj(kit.obj(body).get("data")).get("instance_types")
    if not isinstance(found, list):
        said = f" (the answer is {_short(body)})" if isinstance(body, str) else ""
        raise PayloadShapeError(PROVIDER, f"instance types: answer has no list{said}")
    return found


def parse(payloads: Payloads, regions: tuple[str, ...], log: Log) -> ParseResult:
    """One on-demand record per GPU variant per asked datacenter it lists."""
    types = instance_types(payloads.get(PAYLOAD_KEY))
    result = ParseResult()
    asked = frozenset(regions)
    rows = 0
    for entry in types:
        brand, variants, datacenters = _type(entry)
        for raw in variants:
            if kit.count(kit.obj(raw).get("gpu_count")) == 0:
                continue  # a CPU machine
            rows += 1
            try:
                variant = _variant(raw, brand, datacenters)
            except _Skip as why:
                name = kit.name(kit.obj(raw).get("name"))
                log.warning("%s: %s skipped: %s", PROVIDER, name or "a variant", why)
                result.skipped_rows += 1
                if name is not None:
                    result.unreadable.add(name)  # unconfirmed, not withdrawn
                continue
            _offers(variant, asked, result, log)
    if rows and result.skipped_rows == rows:
        raise PayloadShapeError(
            PROVIDER, f"none of the {rows} GPU variants could be read: changed shape?"
        )
    return result


def _type(entry: Any) -> tuple[Any, list[Any], list[str]]:
    row = kit.obj(entry)
    variants = row.get("variants")
    datacenters = row.get("datacenters")
    entries = datacenters if isinstance(datacenters, list) else []
    # Names, or objects that carry one ({"name": "usny01_a01", ...}) in other answers.
    named = (d if isinstance(d, str) else kit.obj(d).get("name") for d in entries)
    listed = [n for n in map(kit.name, named) if n is not None]
    return row.get("brand_short"), variants if isinstance(variants, list) else [], listed


def _variant(raw: Any, brand: Any, datacenters: list[str]) -> _Variant:
    row = kit.obj(raw)
    name = kit.name(row.get("name"))
    if name is None:
        raise _Skip(f"name is {str(row.get('name'))[:40]!r}")
    count = kit.count(row.get("gpu_count"))
    if count is None or not 0 < count <= MOST_GPUS:
        raise _Skip(f"gpu_count is {str(row.get('gpu_count'))[:40]!r}")
    cents = kit.exact(row.get("cost_per_hour"))
    if cents is None or cents <= 0:
        raise _Skip(f"cost_per_hour is {str(row.get('cost_per_hour'))[:40]!r}")
    model = gpus.stored_model(PROVIDER, brand)
    if model is None:
        raise _Skip(f"brand_short is {str(brand)[:40]!r}")
    vram = kit.size(row.get("vram"))
    # Bytes as the driver reports them (24564 MiB for a 24 GB card): the nearest whole GiB.
    told = None if vram is None else float(round(vram / GIB)) or None
    memory = told or gpus.only_memory(gpus.canonical_model(PROVIDER, brand))
    dram = kit.size(row.get("dram"))
    host = (
        kit.size(row.get("logical_cpu_count")) or kit.size(row.get("cpu_count")),
        None if dram is None else round(dram / GIB, 1) or None,
    )
    said = None if memory is None else gpus.InstanceGpu(model, count, memory, *host)
    return _Variant(name, money(cents / CENTS), said, told is not None, _free(row, datacenters))


def _free(row: dict[str, Any], datacenters: list[str]) -> dict[str, bool]:
    """Every datacenter the variant is listed in, and whether it has a free node there."""
    counts = row.get("available_nodes_per_dc", row.get("nodes_per_dc"))
    free = {dc: False for dc in datacenters}
    for dc, nodes in kit.obj(counts).items():
        if kit.name(dc) is not None:
            number = kit.count(nodes)
            free[dc] = number is not None and number > 0
    return free


def _offers(variant: _Variant, asked: frozenset[str], result: ParseResult, log: Log) -> None:
    found = gpus.resolve(PROVIDER, variant.name, variant.said)
    if found is None:
        log.warning("%s: %s: no GPU memory known", PROVIDER, variant.name)
        result.unknown_instance_types.add(variant.name)
        return
    offer = kit.Offer("on_demand", CURRENCY, variant.price)
    for region in kit.sold_in(sorted(variant.free), asked):
        available = False if region is None else variant.free[region]
        result.records.append(_record(variant, region, found.gpu, offer, available))
    told = variant.told or found.source == "config"
    result.facts[variant.name] = found.source if told else "table"


def _record(
    variant: _Variant, region: str | None, gpu: gpus.InstanceGpu, offer: kit.Offer, free: bool
) -> PriceRecord:
    return kit.record(PROVIDER, region, variant.name, gpu, offer, available=free)


def _short(value: Any) -> str:
    return flat(str(value)[:400])[:120]
