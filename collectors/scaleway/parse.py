"""Scaleway's catalog pages (as `collectors.scaleway.collector` keeps them) to price records.

Pure. The catalog lists every instance, CPU ones included: a product is a GPU Instance when its
`product_category` is "Instance" and its `properties.hardware.gpu.count` is at least 1. Each
product is one commercial type in one zone (`sku` "/instance/server/h100-1-80g/fr-par-2",
`locality.zone`), priced as `price.retail_price` (`currency_code`, `units` + `nanos` / 1e9) per
`unit_of_measure` (an hour, or a minute: x 60). `parse` makes one on-demand record per GPU
product and zone: instance_type the commercial type (`product`, "H100-1-80G"), region the zone's
region ("fr-par"), zone the zone, the price for the whole instance. The per-GPU memory is the
type's suffix ("-80G"), else the GPU table's only memory for the model; vCPUs and RAM come from
`hardware`. Scaleway sells no spot or reserved GPU hours through the catalog, and says nothing
of capacity (available None). A product no longer sold (`status` end_of_sale and after) makes no
record.
"""

from __future__ import annotations

import logging
import re
from decimal import Decimal
from typing import Any

from collectors import gpus, kit
from collectors.base import ParseResult, Payloads, money
from collectors.common import PayloadShapeError

NAME = "scaleway"
Log = logging.LoggerAdapter[Any]
PAGE_SIZE = 100
CATEGORY = "Instance"
# Lifecycle states in which a product can no longer be ordered.
NOT_SOLD = frozenset({"end_of_sale", "end_of_life", "retired"})
HOURS_PER_UNIT = {"hour": Decimal(1), "minute": Decimal(60)}  # price per unit -> per hour
NANOS = Decimal(10) ** 9
BYTES_PER_GIB = 1024**3
# "H100-SXM-2-80G": the memory of one GPU in GB closes the commercial type's name.
MEMORY_SUFFIX = re.compile(r"-(\d{1,4})G$")
ZONE = re.compile(r"([a-z]{2}-[a-z]{3})-\d{1,2}")


class _Skip(Exception):
    """A GPU product the parser cannot read: logged, counted in skipped_rows."""


def parse(payloads: Payloads, asked: tuple[str, ...], log: Log) -> ParseResult:
    """One on-demand record per GPU product and zone (`asked`: regions or zones, none = all)."""
    result = ParseResult()
    gpu_rows = 0
    for entry in all_products(payloads):
        product = kit.obj(entry)
        if not _is_gpu_instance(product):
            continue  # CPU instances, storage, anything else the catalog sells
        gpu_rows += 1
        instance_type = str(product.get("product"))[:100]
        try:
            _offer(product, frozenset(asked), result, log)
        except _Skip as why:
            log.warning("%s: %s skipped: %s", NAME, instance_type, why)
            result.skipped_rows += 1
            result.unreadable.add(instance_type)  # its offers stay open, unconfirmed
    if gpu_rows and result.skipped_rows == gpu_rows:
        raise PayloadShapeError(
            NAME, f"none of the {gpu_rows} GPU products could be read: changed shape?"
        )
    return result


def _offer(product: dict[str, Any], asked: frozenset[str], result: ParseResult, log: Log) -> None:
    """The record of one GPU product in its zone, or its type reported as unknown."""
    instance_type, region, zone = _where(product)
    if str(product.get("status")) in NOT_SOLD:
        return  # no longer ordered: its open offer closes as withdrawn
    price, currency = _price(product)
    if asked and region not in asked and zone not in asked:
        return
    said = _said(product, instance_type)
    found = gpus.resolve(NAME, instance_type, said)
    if found is None:
        log.warning("%s: %s: no GPU memory known", NAME, instance_type)
        result.unknown_instance_types.add(instance_type)
        return
    if found.gpu.gpu_model is not None and gpus.model(found.gpu.gpu_model) is None:
        log.warning(
            "%s: %s: GPU %s not in the GPU table; stored under its own name",
            NAME,
            instance_type,
            found.gpu.gpu_model,
        )
    offer = kit.Offer("on_demand", currency, price)
    result.records.append(kit.record(NAME, region, instance_type, found.gpu, offer, zone=zone))
    told = MEMORY_SUFFIX.search(instance_type) is not None or found.source == "config"
    result.facts[instance_type] = found.source if told else "table"


def products(page: Any, key: str) -> list[Any]:
    found = kit.obj(page).get("products")
    if not isinstance(found, list):
        raise PayloadShapeError(NAME, f"{key}: answer has no products list")
    return found


def all_products(payloads: Payloads) -> list[Any]:
    """Every page's products in page order; a page without a `products` list is a changed shape."""
    rows: list[Any] = []
    for key in sorted(payloads, key=lambda k: int(k.rpartition("-")[2])):
        rows.extend(products(payloads[key], key))
    return rows


def next_page(page: Any, number: int) -> int | None:
    """The page after `number` while the pages so far hold fewer than `total_count` products."""
    total = kit.exact(kit.obj(page).get("total_count"))
    if total is None or number * PAGE_SIZE >= total:
        return None
    return number + 1


def _is_gpu_instance(product: dict[str, Any]) -> bool:
    if product.get("product_category") != CATEGORY:
        return False
    gpu = kit.obj(kit.obj(kit.obj(product.get("properties")).get("hardware")).get("gpu"))
    count = kit.exact(gpu.get("count"))
    return count is not None and count >= 1


def _where(product: dict[str, Any]) -> tuple[str, str, str]:
    """(instance type, region, zone) of a product: a type name and a zone it is sold in."""
    instance_type = product.get("product")
    if not isinstance(instance_type, str) or not re.fullmatch(r"[A-Za-z0-9-]{1,60}", instance_type):
        raise _Skip("no commercial type name")
    zone = kit.obj(product.get("locality")).get("zone")
    matched = ZONE.fullmatch(zone) if isinstance(zone, str) else None
    if matched is None:
        raise _Skip(f"locality is not a zone: {str(product.get('locality'))[:60]!r}")
    return instance_type, matched.group(1), matched.group(0)


def _price(product: dict[str, Any]) -> tuple[Decimal, str]:
    """The hourly price of the whole instance and its currency."""
    retail = kit.obj(kit.obj(product.get("price")).get("retail_price"))
    currency = retail.get("currency_code")
    if not isinstance(currency, str) or not re.fullmatch(r"[A-Z]{3}", currency):
        raise _Skip(f"currency_code is {str(currency)[:20]!r}")
    units = kit.exact(retail.get("units"), kit.NUMBERS_OR_TEXT)
    nanos = kit.exact(retail.get("nanos", 0))
    if units is None or nanos is None or units != int(units) or nanos != int(nanos):
        raise _Skip(f"retail_price is {str(retail)[:60]!r}")
    if not 0 <= nanos < NANOS or units < 0:
        raise _Skip(f"retail_price is {str(retail)[:60]!r}")
    measure = kit.obj(product.get("unit_of_measure"))
    unit, size = measure.get("unit"), kit.exact(measure.get("size", 1))
    per_hour = HOURS_PER_UNIT.get(unit) if isinstance(unit, str) else None
    if per_hour is None or size is None or size < 1 or size != int(size):
        raise _Skip(f"priced per {str(measure)[:60]!r}, not per hour")
    price = money((units + nanos / NANOS) * per_hour / size)
    if price <= 0:
        raise _Skip("no price (zero)")
    return price, currency


def _said(product: dict[str, Any], instance_type: str) -> gpus.InstanceGpu | None:
    """The instance's GPUs and host as the catalog gives them; None when no memory is known."""
    hardware = kit.obj(kit.obj(product.get("properties")).get("hardware"))
    gpu = kit.obj(hardware.get("gpu"))
    count = kit.size(gpu.get("count"))
    if count is None or count != int(count):
        raise _Skip(f"gpu count is {str(gpu.get('count'))[:20]!r}")
    model = gpus.stored_model(NAME, gpu.get("type"))
    suffix = MEMORY_SUFFIX.search(instance_type)
    memory = float(suffix.group(1)) if suffix else gpus.only_memory(model)
    if memory is None or memory <= 0:
        return None
    cpu = kit.obj(hardware.get("cpu"))
    vcpus = kit.size(cpu.get("threads")) or kit.size(kit.obj(cpu.get("virtual")).get("count"))
    ram = kit.size(kit.obj(hardware.get("ram")).get("size"))
    ram_gib = None if ram is None else ram / BYTES_PER_GIB
    return gpus.InstanceGpu(model, count, memory, vcpus, ram_gib)
