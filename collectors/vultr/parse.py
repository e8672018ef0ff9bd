"""Vultr's plan lists to price records: pure, no I/O.

`hourly_cost` is used as given: bare metal is billed monthly at 672 hours of it (23.92 x 672 =
16074.24) and cloud plans cap at a monthly price (2.397 -> 1750 is 730 hours), so the monthly
price is never divided back. A Cloud GPU plan's `gpu_vram_gb` is the plan's VRAM: the small
plans are slices of one GPU, so the count is that VRAM over one whole GPU's memory (4 GB of an
80 GB A100 is 0.05 of it) and the memory stored is the whole GPU's: the API's facts (a GPU the
table does not know has no whole memory, so no count: reported, not stored). Bare-metal plans
name no GPU at all: the GPU table holds theirs (Vultr: "do not parse the plan ID"). A user's
`[gpus.instance_types."<plan id>"]` entry is taken over both.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from collectors import gpus, kit
from collectors.base import ParseResult, Payloads, PriceRecord, money
from collectors.common import PayloadShapeError

PROVIDER = "vultr"
CLOUD = "plans"  # payload prefixes: "plans/page-<n>", "plans-metal/page-<n>"
METAL = "plans-metal"
# Each list's key in its answer, the first that is there: the live API, its ansible, libcloud
# and gpuhunt clients say `plans_metal`; the clients generated from Vultr's spec, `plans`.
LIST_KEYS = {CLOUD: ("plans",), METAL: ("plans_metal", "plans")}
CLOUD_GPU = "vcg"
CURRENCY = "USD"  # Vultr prices in US dollars only
MIB_PER_GIB = 1024  # `ram` is in MB, which Vultr counts in MiB (122880 for a 120 GB plan)
# Bare-metal ids end so; one missing from the GPU table is reported, not taken for a CPU plan.
GPU_METAL_SUFFIX = "-gpu"

Log = logging.LoggerAdapter[Any]


class _Skip(Exception):
    """A plan the parser does not understand: logged, counted in skipped_rows, not stored."""


class _Unplaced(Exception):
    """A GPU plan whose GPU cannot be placed: reported in unknown_instance_types."""


@dataclass(frozen=True)
class _Plan:
    plan_id: str
    prices: tuple[kit.Offer, ...]
    gpu: gpus.InstanceGpu
    source: str  # where the GPU facts came from: "api", "table" or "config"
    host: kit.Host
    locations: tuple[str, ...]


def meta(page: Any) -> dict[str, Any]:
    return kit.obj(kit.obj(page).get("meta"))


def plans(key: str, page: Any) -> list[Any]:
    """The plans of one page; a changed overall shape fails the run loudly."""
    body = kit.obj(page)
    names = LIST_KEYS.get(key.partition("/")[0], ())
    found = next((body[name] for name in names if name in body), None)
    if not isinstance(found, list):
        error = body.get("error")  # Vultr's error body: {"error": "...", "status": N}
        said = f" (the answer is an error: {_short(error)})" if isinstance(error, str) else ""
        raise PayloadShapeError(PROVIDER, f"{key}: answer has no plan list{said}")
    return found


def parse(payloads: Payloads, regions: tuple[str, ...], log: Log) -> ParseResult:
    """One record per price per GPU plan per asked location it lists."""
    for prefix in LIST_KEYS:
        if f"{prefix}/page-1" not in payloads:
            raise PayloadShapeError(PROVIDER, f"no {prefix} answer")
    result = ParseResult()
    asked = frozenset(regions)
    seen: set[str] = set()
    examined = 0
    nowhere: list[str] = []
    for key in sorted(payloads, key=_order):
        for index, raw in enumerate(plans(key, payloads[key])):
            if not _is_gpu_plan(key, raw):
                continue
            examined += 1
            plan = _read(f"{key} plan {index}", key, raw, result, log)
            if plan is None:
                continue
            if plan.plan_id in seen:  # pages shifted while we walked them
                log.warning("%s: %s listed twice; skipped", PROVIDER, plan.plan_id)
                result.skipped_rows += 1
                continue
            seen.add(plan.plan_id)
            where = kit.sold_in(plan.locations, asked)
            if not where:
                nowhere.append(plan.plan_id)
                continue
            # A location it lists is one it can be deployed in now; listed in none, sold out.
            result.records.extend(
                rec for loc in where for rec in _records(plan, loc, available=loc is not None)
            )
            result.facts[plan.plan_id] = plan.source
    if examined and result.skipped_rows == examined:
        raise PayloadShapeError(
            PROVIDER, f"none of the {examined} GPU plans could be read: changed shape?"
        )
    # Deployable in none of the asked locations: no record, and their open prices close.
    result.sold_out.update(nowhere)
    if nowhere:
        log.info("%s: %d GPU plans deployable nowhere asked: %s", PROVIDER, len(nowhere), nowhere)
    return result


def _order(key: str) -> tuple[str, int]:
    prefix, _, page = key.partition("/")
    number = page.removeprefix("page-")
    if prefix not in LIST_KEYS or not number.isdigit():
        raise PayloadShapeError(PROVIDER, f"unexpected payload key {key!r}")
    return prefix, int(number)


def _is_gpu_plan(key: str, raw: Any) -> bool:
    if not isinstance(raw, dict):
        return True  # not understood: examined, so that it is counted as skipped
    if key.startswith(f"{METAL}/"):
        plan_id = raw.get("id")
        return not isinstance(plan_id, str) or (
            gpus.lookup(PROVIDER, plan_id) is not None or plan_id.endswith(GPU_METAL_SUFFIX)
        )
    return raw.get("type") == CLOUD_GPU  # an answer to type=vcg may still hold other plans


def _read(where: str, key: str, raw: Any, result: ParseResult, log: Log) -> _Plan | None:
    plan_id = raw.get("id") if isinstance(raw, dict) else None
    if isinstance(plan_id, str) and plan_id:
        where = plan_id
    try:
        if where != plan_id:
            raise _Skip("no plan id")
        return _plan(plan_id, raw, metal=key.startswith(f"{METAL}/"))
    except _Skip as why:
        log.warning("%s: %s skipped: %s", PROVIDER, where, why)
        result.skipped_rows += 1
        if where == plan_id:
            result.unreadable.add(plan_id)  # unconfirmed, not withdrawn
    except _Unplaced as why:
        log.warning("%s: %s: %s; its prices are not stored", PROVIDER, where, why)
        result.unknown_instance_types.add(where)
    return None


def _plan(plan_id: str, raw: dict[str, Any], *, metal: bool) -> _Plan:
    hourly = _price(raw.get("hourly_cost"), "hourly_cost")
    prices = [kit.Offer("on_demand", CURRENCY, hourly)]
    if metal and raw.get("hourly_cost_preemptible") not in (None, 0):
        spot = _price(raw["hourly_cost_preemptible"], "hourly_cost_preemptible")
        if spot >= hourly:
            raise _Skip(f"preemptible {spot} is not below on-demand {hourly}")
        prices.append(kit.Offer("spot", CURRENCY, spot))
    locations = raw.get("locations")
    if not isinstance(locations, list) or not all(
        isinstance(loc, str) and loc for loc in locations
    ):
        raise _Skip(f"locations is {_short(locations)}")
    said, why = (None, "a bare-metal GPU plan the GPU table does not know")
    if not metal:
        try:
            said = _cloud_gpu(raw)
        except _Unplaced as unplaced:
            why = str(unplaced)
    found = gpus.resolve(PROVIDER, plan_id, said)
    if found is None:
        raise _Unplaced(why)
    gpu = found.gpu  # the host size: the user's entry where it says one, else the API's
    threads = raw.get("cpu_threads") if metal else raw.get("vcpu_count")
    megabytes = kit.size(raw.get("ram"))
    host = (
        gpu.vcpus if gpu.vcpus is not None else kit.size(threads),
        gpu.memory_gib
        if gpu.memory_gib is not None or megabytes is None
        else megabytes / MIB_PER_GIB,
    )
    locations = tuple(dict.fromkeys(locations))
    return _Plan(plan_id, tuple(prices), gpu, found.source, host, locations)


def _price(value: Any, field: str) -> Decimal:
    price = kit.exact(value)
    if price is None or price <= 0:
        raise _Skip(f"{field} is {_short(value)}")  # never a zero or negative price
    return money(price)


def _cloud_gpu(raw: dict[str, Any]) -> gpus.InstanceGpu:
    """Model from `gpu_type`, count = the plan's VRAM over one whole GPU's memory."""
    named = raw.get("gpu_type")
    model = gpus.canonical_model(PROVIDER, named) if isinstance(named, str) else None
    whole = _whole_gib(model)
    if whole is None:  # no count can be told without one GPU's memory
        raise _Unplaced(f"gpu_type {_short(named)} is not in the GPU table")
    vram = kit.size(raw.get("gpu_vram_gb"))
    if vram is None:
        raise _Unplaced(f"gpu_vram_gb is {_short(raw.get('gpu_vram_gb'))}")
    count = vram / whole
    if (count > 1 and not count.is_integer()) or count > 16:
        raise _Unplaced(f"{vram:g} GB of VRAM is no whole number of {whole:g} GB {model}s")
    return gpus.InstanceGpu(model, count, whole)


def _whole_gib(model: str | None) -> float | None:
    """One whole GPU's memory: Vultr's own (its A100 is the 80 GB part), else the model's only
    variant (a user's [gpus.models] entry with the spelling as an alias and its memory)."""
    if model is None:
        return None
    whole = gpus.WHOLE_GPU_GIB.get(PROVIDER, {}).get(model)
    return whole if whole is not None else gpus.only_memory(model)


def _records(plan: _Plan, location: str | None, available: bool) -> list[PriceRecord]:
    """The plan's prices in `location`: a location it lists is one it can be deployed in now."""
    return [
        kit.record(
            PROVIDER, location, plan.plan_id, plan.gpu, price, available=available, host=plan.host
        )
        for price in plan.prices
    ]


def _short(value: Any) -> str:
    """A value for a log line: a hostile answer may put a megabyte where a number goes."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
