"""Hyperstack's flavors and pricebook to price records: pure, no I/O.

The flavors answer (`{"status": true, "message": ..., "data": [...]}`) groups flavors by GPU
model and region: each group has `gpu` (Hyperstack's GPU name, `A100-80G-PCIe`, `H100-80G-SXM5`,
`RTX-A6000`; empty for CPU flavors) and `region_name` (`CANADA-1`), and its `flavors` have a
`name` (`n3-H100x8`, the instance type), `gpu_count`, `cpu`, `ram` (GB) and `stock_available`.
The pricebook is a list of `{"name", "value", ...}`: `value` is US dollars per hour of ONE of
the resource `name` (a GPU by the flavors' GPU name), so a flavor costs `gpu_count` x the
value of its GPU. One GPU's memory is in the GPU name (`-80G-`), else the GPU table's only
memory of the model. `available` is `stock_available`. On-demand only: the pricebook has no
spot or reserved prices.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from collectors import gpus, kit
from collectors.base import ParseResult, Payloads, money
from collectors.common import PayloadShapeError, flat

PROVIDER = "hyperstack"
FLAVORS = "flavors"
PRICEBOOK = "pricebook"
CURRENCY = "USD"
MOST_GPUS = 16
_MEMORY = re.compile(r"-(\d+)G(?:-|$)")  # "A100-80G-PCIe": 80 GB of one GPU

Log = logging.LoggerAdapter[Any]


class _Skip(Exception):
    """A flavor the parser cannot read: logged, counted in skipped_rows."""


class _Unpriced(_Skip):
    """A flavor whose GPU the pricebook does not price: not for sale, so nothing is kept open."""


@dataclass(frozen=True)
class _Flavor:
    name: str
    region: str
    said: gpus.InstanceGpu | None  # None: no one knows one GPU's memory
    told: bool  # the GPU name gave the memory
    price: Decimal
    available: bool | None


def groups(payloads: Payloads) -> list[Any]:
    """The flavor groups of the answer; a changed overall shape fails the run loudly."""
    body = kit.obj(payloads.get(FLAVORS))
    found = body.get("data")
    if not isinstance(found, list):
        said = body.get("message")
        error = f" (the answer says: {flat(said[:200])})" if isinstance(said, str) else ""
        raise PayloadShapeError(PROVIDER, f"{FLAVORS}: answer has no list{error}")
    return found


def prices(payloads: Payloads) -> dict[str, Decimal]:
    """GPU name -> its price per GPU-hour; a changed overall shape fails the run loudly."""
    found = payloads.get(PRICEBOOK)
    if not isinstance(found, list):
        raise PayloadShapeError(PROVIDER, f"{PRICEBOOK}: answer has no list")
    book: dict[str, Decimal] = {}
    for entry in found:
        row = kit.obj(entry)
        name = _name(row.get("name"), spaces=True)
        value = kit.exact(row.get("value"), kit.NUMBERS_OR_TEXT)
        if name is not None and value is not None and value > 0:
            book[name] = money(value)
    if not book:
        raise PayloadShapeError(PROVIDER, f"{PRICEBOOK}: answer prices nothing")
    return book


def parse(payloads: Payloads, regions: tuple[str, ...], log: Log) -> ParseResult:
    """One on-demand record per GPU flavor per asked region it is listed in."""
    listed, book = groups(payloads), prices(payloads)
    result = ParseResult()
    asked = frozenset(regions)
    rows = 0
    for group in listed:
        entry = kit.obj(group)
        gpu, region = entry.get("gpu"), entry.get("region_name")
        flavors = entry.get("flavors")
        for raw in flavors if isinstance(flavors, list) else []:
            if kit.obj(raw).get("gpu", gpu) in ("", None):
                continue  # a CPU flavor
            rows += 1
            try:
                flavor = _flavor(raw, gpu, region, book)
            except _Skip as why:
                name = _name(kit.obj(raw).get("name"))
                log.warning("%s: %s skipped: %s", PROVIDER, name or "a flavor", why)
                result.skipped_rows += 1
                if name is not None and not isinstance(why, _Unpriced):
                    result.unreadable.add(name)  # unconfirmed, not withdrawn
                continue
            if not asked or flavor.region in asked:
                _record(flavor, result, log)
    if rows and result.skipped_rows == rows:
        raise PayloadShapeError(
            PROVIDER, f"none of the {rows} GPU flavors could be read: changed shape?"
        )
    return result


def _flavor(raw: Any, gpu: Any, region: Any, book: dict[str, Decimal]) -> _Flavor:
    row = kit.obj(raw)
    name = _name(row.get("name"))
    if name is None:
        raise _Skip(f"name is {str(row.get('name'))[:40]!r}")
    where = _name(row.get("region_name", region)) or _name(region)
    if where is None:
        raise _Skip(f"region_name is {str(region)[:40]!r}")
    gpu_name = _name(row.get("gpu", gpu), spaces=True)
    if gpu_name is None:
        raise _Skip(f"gpu is {str(gpu)[:40]!r}")
    count = kit.count(row.get("gpu_count"))
    if count is None or not 0 < count <= MOST_GPUS:
        raise _Skip(f"gpu_count is {str(row.get('gpu_count'))[:40]!r}")
    per_gpu = book.get(gpu_name)
    if per_gpu is None:
        raise _Unpriced(f"no price for {gpu_name} in the pricebook")
    model = gpus.stored_model(PROVIDER, gpu_name)
    named = _MEMORY.search(gpu_name)
    told = float(named.group(1)) if named and int(named.group(1)) > 0 else None
    memory = told or gpus.only_memory(gpus.canonical_model(PROVIDER, gpu_name))
    host = (kit.size(row.get("cpu")), kit.size(row.get("ram")))
    said = None if memory is None else gpus.InstanceGpu(model, count, memory, *host)
    stock = row.get("stock_available")
    available = stock if isinstance(stock, bool) else None
    # The pricebook prices one GPU: the flavor is gpu_count of them.
    return _Flavor(name, where, said, told is not None, money(per_gpu * count), available)


def _record(flavor: _Flavor, result: ParseResult, log: Log) -> None:
    found = gpus.resolve(PROVIDER, flavor.name, flavor.said)
    if found is None:
        log.warning("%s: %s: no GPU memory known", PROVIDER, flavor.name)
        result.unknown_instance_types.add(flavor.name)
        return
    offer = kit.Offer("on_demand", CURRENCY, flavor.price)
    result.records.append(
        kit.record(
            PROVIDER, flavor.region, flavor.name, found.gpu, offer, available=flavor.available
        )
    )
    told = flavor.told or found.source == "config"
    result.facts[flavor.name] = found.source if told else "table"


def _name(value: Any, *, spaces: bool = False) -> str | None:
    """A flavor, region or GPU name: printable text, not absurdly long; else None."""
    if not isinstance(value, str) or not value.strip() or len(value) > kit.LONGEST_NAME:
        return None
    if not value.isprintable() or (not spaces and any(c.isspace() for c in value)):
        return None
    return value
