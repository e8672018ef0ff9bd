"""Huawei Cloud: ECS flavors and BSS price inquiries to price records (pure, no I/O).

The answers, keyed by request: `flavors/<region>` (ECS ListFlavors), and per GPU flavor
`on_demand/<region>/<flavor>` (BSS "query pay-per-use product prices", one hour of the flavor's
Linux resource) and `period/<region>/<flavor>` (BSS "query yearly/monthly product prices": one
month, one year and three years, the product ids being the months). An inquiry the BSS refused
for that flavor (the product is not sold so) is kept as its error object and makes no record.

Prices are the official website amounts (the list price every account sees; `amount` is after
the asking account's own discounts), in the unit `measure_id` names (1 yuan or dollar, 2 a
tenth, 3 a hundredth) and the answer's `currency` (CNY on the China site, USD on the
international one). A yearly/monthly price is the total paid upfront for the term.

GPU facts are the flavor's own: `os_extra_specs` `info:gpus` (NVIDIA) or
`info:asic_accelerators` (Ascend), a JSON text of `name`, `memory_mb` and `count`; `vcpus` and
`ram` (MiB) are the host. `cond:operation:status` and `cond:operation:az` say whether a flavor
sells (`normal`, `obt`, `promotion`), is sold out (`sellout`) or is withdrawn (`abandon`).
"""

from __future__ import annotations

import json
import logging
import re
from collections import Counter
from decimal import Decimal
from typing import Any, TypeAlias

from collectors import gpus, kit
from collectors.base import ParseResult, Payloads, PriceRecord, effective_hourly, money
from collectors.common import PayloadShapeError

PROVIDER = "huawei"
GPU_KINDS = ("gpu", "ascend")  # ecs:performancetype of GPU-accelerated and AI-accelerated
GPU_SPECS = ("info:gpus", "info:asic_accelerators")
SELLING = {"normal": True, "obt": True, "promotion": True, "sellout": False}
TERMS = (1, 12, 36)  # months asked of the yearly/monthly inquiry, also its product ids
# measure_id: the unit of an amount (1 yuan/dollar, 2 jiao/dime, 3 fen/cent).
UNITS = {1: Decimal(1), 2: Decimal("0.1"), 3: Decimal("0.01")}
CURRENCY = re.compile(r"^[A-Z]{3}$")
_AZ_STATUS = re.compile(r"([a-z0-9-]+)\(([a-z]+)\)")

Log: TypeAlias = "logging.LoggerAdapter[logging.Logger]"


class Skip(Exception):
    """A flavor or an answer that yields no record, for the reason given."""


def flavors(answer: Any, key: str) -> list[Any]:
    """The `flavors` list of a ListFlavors answer; a changed shape fails loudly."""
    rows = kit.obj(answer).get("flavors")
    if not isinstance(rows, list):
        raise PayloadShapeError(PROVIDER, f"{key}: the answer has no flavors list")
    return rows


def gpu_flavor_ids(answer: Any, key: str) -> list[str]:
    """The ids of the GPU flavors of a ListFlavors answer that are still sold, to be priced."""
    ids = []
    for row in flavors(answer, key):
        try:
            flavor = _flavor_id(row)
            if _is_gpu(row) and _available(row) is not None:
                ids.append(flavor)
        except Skip:
            continue
    return sorted(set(ids))


def parse(payloads: Payloads, *, currency: str, regions: frozenset[str], log: Log) -> ParseResult:
    """Every answer of the asked regions to records; see the module docstring for the rules."""
    result = ParseResult()
    skipped: Counter[str] = Counter()
    for key in sorted(k for k in payloads if str(k).startswith("flavors/")):
        region = str(key).partition("/")[2]
        if regions and region not in regions:
            continue
        for row in flavors(payloads[key], key):
            try:
                result.records.extend(_flavor(payloads, region, row, currency, result))
            except Skip as why:
                skipped[str(why)] += 1
                flavor = kit.obj(row).get("id")
                log.warning("huawei: %s flavor %s skipped: %s", region, str(flavor)[:60], why)
                if isinstance(flavor, str) and flavor and len(flavor) <= 60:
                    result.unreadable.add(flavor)  # unconfirmed, not withdrawn
    result.skipped_rows = sum(skipped.values())
    if result.unknown_instance_types:
        log.warning(
            "huawei: GPU flavors without GPU facts: %s",
            ", ".join(sorted(result.unknown_instance_types)),
        )
    log.info("huawei: %d records, %d flavors skipped", len(result.records), result.skipped_rows)
    return result


def _flavor(
    payloads: Payloads, region: str, row: Any, currency: str, result: ParseResult
) -> list[PriceRecord]:
    flavor = _flavor_id(row)
    if not _is_gpu(row):
        return []
    available = _available(row)
    if available is None:
        return []  # withdrawn: no longer sold
    found = gpus.resolve(PROVIDER, flavor, _said(row))
    if found is None or found.gpu.gpu_memory_gib <= 0:
        result.unknown_instance_types.add(flavor)
        return []
    offers = _on_demand(payloads.get(f"on_demand/{region}/{flavor}"), currency)
    offers += _period(payloads.get(f"period/{region}/{flavor}"), currency)
    if offers:
        result.facts[flavor] = found.source
    host = (kit.size(kit.obj(row).get("vcpus"), kit.NUMBERS_OR_TEXT), _gib(kit.obj(row).get("ram")))
    return [
        kit.record(PROVIDER, region, flavor, found.gpu, offer, available=available, host=host)
        for offer in offers
    ]


def _flavor_id(row: Any) -> str:
    flavor = kit.obj(row).get("id")
    if not isinstance(flavor, str) or not flavor or len(flavor) > 60 or flavor != flavor.strip():
        raise Skip("no flavor id")
    return flavor


def _specs(row: Any) -> dict[str, Any]:
    return kit.obj(kit.obj(row).get("os_extra_specs"))


def _is_gpu(row: Any) -> bool:
    specs = _specs(row)
    kind = specs.get("ecs:performancetype", specs.get("hws:performancetype"))
    return kind in GPU_KINDS


def _available(row: Any) -> bool | None:
    """True where any zone sells the flavor, False where it is sold out in every zone, None
    where it is withdrawn (or its status is not understood)."""
    specs = _specs(row)
    zones = specs.get("cond:operation:az")
    said = [s for _, s in _AZ_STATUS.findall(zones)] if isinstance(zones, str) else []
    status = specs.get("cond:operation:status", "normal")
    if not said:
        said = [status] if isinstance(status, str) else []
    known = [SELLING[s] for s in said if s in SELLING]
    if not known:
        if said and all(s == "abandon" for s in said):
            return None
        raise Skip(f"sale status {str(status)[:40]!r} not understood")
    return any(known)


def _said(row: Any) -> gpus.InstanceGpu | None:
    """The flavor's GPUs as its `info:gpus` (or Ascend `info:asic_accelerators`) says them."""
    specs = _specs(row)
    text = next((specs[s] for s in GPU_SPECS if isinstance(specs.get(s), str)), None)
    if text is None:
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        raise Skip("its GPU information is not JSON") from None
    devices = (
        value
        if isinstance(value, list)
        else next((v for v in kit.obj(value).values() if isinstance(v, list)), None)
    )
    if not devices or len(devices) != 1:
        raise Skip("not one kind of GPU in its GPU information")
    device = kit.obj(devices[0])
    name, count = device.get("name"), kit.size(device.get("count"), kit.NUMBERS_OR_TEXT)
    memory = _gib(device.get("memory_mb"))
    model = gpus.stored_model(PROVIDER, name)
    if model is None or count is None or memory is None or len(str(name)) > 60:
        raise Skip("its GPU information lacks a name, count or memory")
    return gpus.InstanceGpu(model, count, memory)


def _gib(mib: Any) -> float | None:
    number = kit.size(mib, kit.NUMBERS_OR_TEXT)
    return None if number is None else number / 1024


def _currency(answer: dict[str, Any], configured: str) -> str:
    said = answer.get("currency", configured)
    if not isinstance(said, str) or not CURRENCY.match(said):
        raise Skip(f"currency {str(said)[:20]!r}")
    return said


def _amount(item: Any, field: str = "official_website_amount") -> Decimal:
    row = kit.obj(item)
    measure = row.get("measure_id", 1)
    unit = UNITS.get(measure) if type(measure) is int else None  # not a bool, not a list
    value = kit.exact(row.get(field), kit.NUMBERS_OR_TEXT)
    if unit is None or value is None or value <= 0:
        said = f"{str(row.get(field))[:20]!r} in unit {str(measure)[:20]!r}"
        raise Skip(f"{field} {said}")
    return value * unit


def _refused(answer: Any) -> bool:
    """An inquiry the BSS refused for this flavor (kept as its error object), or none made."""
    return answer is None or "error_code" in kit.obj(answer)


def _on_demand(answer: Any, currency: str) -> list[kit.Offer]:
    if _refused(answer):
        return []
    body = kit.obj(answer)
    rows = body.get("product_rating_results")
    if not isinstance(rows, list) or len(rows) != 1:
        raise Skip("the pay-per-use answer has no one product_rating_results row")
    hourly = money(_amount(rows[0]))
    return [kit.Offer("on_demand", _currency(body, currency), hourly)]


def _period(answer: Any, currency: str) -> list[kit.Offer]:
    if _refused(answer):
        return []
    body = kit.obj(answer)
    rows = kit.obj(body.get("official_website_rating_result")).get("product_rating_results")
    if not isinstance(rows, list):
        raise Skip("the yearly/monthly answer has no product_rating_results list")
    offers = []
    for months in TERMS:
        row = next((r for r in rows if kit.obj(r).get("id") == str(months)), None)
        if row is None:
            continue
        total = money(_amount(row))
        hourly = effective_hourly(Decimal(0), total, months)
        offers.append(
            kit.Offer("reserved", _currency(body, currency), hourly, months, upfront_total=total)
        )
    return offers
