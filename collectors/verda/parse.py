"""Verda's instance types and availability to price records: pure, no I/O.

An instance type (`1H100.80S.30V`, `8H100.80S.176V`) has `price_per_hour` and `spot_price` as
decimal strings in US dollars for the whole instance (the `currency=usd` asked for), the GPU
model in `model` (older answers: only `gpu.description`, "8x H100 SXM5 80GB"), the count in
`gpu.number_of_gpus`, and in `gpu_memory.size_in_gigabytes` the memory of ALL its GPUs (640 for
8 x 80 GB): one GPU's is that over the count, where the description gives none of its own.
`dynamic_price` (the moving price of Verda's dynamic pricing) is not the list price and is not
stored. CPU-only types (`number_of_gpus` 0) are left out.

Availability is per location and per kind: on-demand in each location whose
`is_spot=false` list names the type, spot in each whose `is_spot=true` list does, with
available true. A type priced but startable nowhere keeps its list price once with region NULL
and available false (docs/sql.md), for each kind it is priced in.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from collectors import gpus, kit
from collectors.base import ParseResult, Payloads, PriceRecord, money
from collectors.common import PayloadShapeError, PriceKind

PROVIDER = "verda"
TYPES = "instance-types"
ON_DEMAND = "availability/on-demand"
SPOT = "availability/spot"
CURRENCY = "USD"
MOST_GPUS = 16
# "8x H100 SXM5 80GB" -> "H100 SXM5" and 80: the count, the GPU's name and ONE GPU's memory.
_DESCRIBED = re.compile(r"^\s*\d+\s*x\s+(.+?)(?:\s+(\d+)\s*GB)?\s*$")

Log = logging.LoggerAdapter[Any]


class _Skip(Exception):
    """An instance type the parser cannot read: logged, counted in skipped_rows."""


@dataclass(frozen=True)
class _Type:
    name: str
    prices: tuple[kit.Offer, ...]
    said: gpus.InstanceGpu


def instance_types(payloads: Payloads) -> list[Any]:
    """The instance types of the answer; a changed overall shape fails the run loudly."""
    found = payloads.get(TYPES)
    if not isinstance(found, list):
        raise PayloadShapeError(PROVIDER, "instance types: answer has no list")
    return found


def startable(payloads: Payloads, key: str) -> dict[str, set[str]]:
    """Instance type -> the locations whose list for `key` names it."""
    found = payloads.get(key)
    if not isinstance(found, list):
        raise PayloadShapeError(PROVIDER, f"{key}: answer has no list")
    where: dict[str, set[str]] = {}
    for entry in found:
        row = kit.obj(entry)
        location, names = kit.name(row.get("location_code")), row.get("availabilities")
        if location is None or not isinstance(names, list):
            continue  # an entry of no location names no capacity
        for name in names:
            if kit.name(name) is not None:
                where.setdefault(name, set()).add(location)
    return where


def parse(payloads: Payloads, regions: tuple[str, ...], log: Log) -> ParseResult:
    """Per GPU instance type: each price kind in each asked location that can start it."""
    rows = instance_types(payloads)
    where = {ON_DEMAND: startable(payloads, ON_DEMAND), SPOT: startable(payloads, SPOT)}
    result = ParseResult()
    asked = frozenset(regions)
    gpu_rows = 0
    for entry in rows:
        if kit.count(kit.obj(kit.obj(entry).get("gpu")).get("number_of_gpus")) == 0:
            continue  # a CPU instance
        gpu_rows += 1
        try:
            kind = _type(entry)
        except _Skip as why:
            name = kit.name(kit.obj(entry).get("instance_type"))
            log.warning("%s: %s skipped: %s", PROVIDER, name or "an instance type", why)
            result.skipped_rows += 1
            if name is not None:
                result.unreadable.add(name)  # unconfirmed, not withdrawn
            continue
        found = gpus.resolve(PROVIDER, kind.name, kind.said)
        if found is None:  # a user's entry that leaves nothing (the API always says)
            result.unknown_instance_types.add(kind.name)
            continue
        for offer in kind.prices:
            key = ON_DEMAND if offer.price_kind == "on_demand" else SPOT
            located = sorted(where[key].get(kind.name, ()))
            for region in kit.sold_in(located, asked):
                available = region is not None
                result.records.append(_record(kind.name, region, found.gpu, offer, available))
        result.facts[kind.name] = found.source
    if gpu_rows and result.skipped_rows == gpu_rows:
        raise PayloadShapeError(
            PROVIDER, f"none of the {gpu_rows} GPU instance types could be read: changed shape?"
        )
    return result


def _type(entry: Any) -> _Type:
    row = kit.obj(entry)
    name = kit.name(row.get("instance_type"))
    if name is None:
        raise _Skip(f"instance_type is {str(row.get('instance_type'))[:40]!r}")
    currency = row.get("currency", "usd")
    if not isinstance(currency, str) or currency.upper() != CURRENCY:
        raise _Skip(f"currency is {str(currency)[:20]!r}")
    gpu = kit.obj(row.get("gpu"))
    count = kit.count(gpu.get("number_of_gpus"))
    if count is None or not 0 < count <= MOST_GPUS:
        raise _Skip(f"number_of_gpus is {str(gpu.get('number_of_gpus'))[:40]!r}")
    on_demand = _price(row.get("price_per_hour"))
    if on_demand is None:
        raise _Skip(f"price_per_hour is {str(row.get('price_per_hour'))[:40]!r}")
    prices = [kit.Offer("on_demand", CURRENCY, on_demand)]
    spot = _price(row.get("spot_price"))
    if spot is not None and spot < on_demand:  # 0 or null: no spot, never on-demand instead
        prices.append(kit.Offer(_SPOT, CURRENCY, spot))
    model = gpus.stored_model(PROVIDER, _model(row, gpu))
    if model is None:
        raise _Skip("no GPU model")
    total = kit.size(kit.obj(row.get("gpu_memory")).get("size_in_gigabytes"))
    # gpu_memory is every GPU's together: one GPU's is the total over the count, unless the
    # description says one GPU's own ("8x H100 SXM5 80GB"), which is taken first.
    each = _described_memory(gpu) or (None if total is None else total / count)
    if each is None:
        raise _Skip("no gpu_memory")
    host = (
        kit.size(kit.obj(row.get("cpu")).get("number_of_cores")),
        kit.size(kit.obj(row.get("memory")).get("size_in_gigabytes")),
    )
    said = gpus.InstanceGpu(model, count, each, *host)
    return _Type(name, tuple(prices), said)


_SPOT: PriceKind = "spot"


def _model(row: dict[str, Any], gpu: dict[str, Any]) -> Any:
    """The GPU's name: `model`, else the name in `gpu.description` ("8x H100 SXM5 80GB")."""
    model = row.get("model")
    if isinstance(model, str) and model.strip():
        return model
    described = gpu.get("description")
    match = _DESCRIBED.match(described) if isinstance(described, str) else None
    return match.group(1) if match else None


def _described_memory(gpu: dict[str, Any]) -> float | None:
    """One GPU's memory in GB as `gpu.description` writes it, or None where it does not."""
    described = gpu.get("description")
    match = _DESCRIBED.match(described) if isinstance(described, str) else None
    size = match.group(2) if match else None
    return float(size) if size is not None and 0 < int(size) < 10_000 else None


def _record(
    name: str, region: str | None, gpu: gpus.InstanceGpu, offer: kit.Offer, available: bool
) -> PriceRecord:
    return kit.record(PROVIDER, region, name, gpu, offer, available=available)


def _price(value: Any) -> Decimal | None:
    """A positive price (Verda writes decimal strings) as exact money, else None."""
    number = kit.exact(value, kit.NUMBERS_OR_TEXT)
    return money(number) if number is not None and number > 0 else None
