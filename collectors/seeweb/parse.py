"""Seeweb's plans to price records: pure, no I/O.

The answer is `{"status": "ok", "plans": [...]}`; a plan has `name` (`ECS1GPU7`, the instance
type), `cpu`, `ram` (MB, which Seeweb counts in MiB: 32768 is 32 GiB), `gpu` (the GPU count,
written as a string), `gpu_label` (`L40s 48GB`: the GPU and ONE GPU's memory; `A30` names no
memory), `hourly_price` (euros for the whole plan), `available` and `available_regions`
(`[{"location": "it-fr2"}, ...]`).

`available` says whether the plan is sold at all, not whether capacity exists: a plan with
`available` false makes no record (its prices close), and the records of the others have
`available` NULL (Seeweb does not say). One on-demand record per region in
`available_regions`; a plan listed in no region keeps its price once with region NULL and
available false. Plans without a GPU (`gpu` "0") are left out.
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

PROVIDER = "seeweb"
PAYLOAD_KEY = "plans"
CURRENCY = "EUR"  # Seeweb's list prices are in euros
MIB_PER_GIB = 1024
MOST_GPUS = 16
_MEMORY = re.compile(r"\s*(\d+)\s*GB\s*$", re.IGNORECASE)  # "L40s 48GB": 48 GB of one GPU

Log = logging.LoggerAdapter[Any]


class _Skip(Exception):
    """A plan the parser cannot read: logged, counted in skipped_rows."""


@dataclass(frozen=True)
class _Plan:
    name: str
    price: Decimal
    said: gpus.InstanceGpu | None  # None: no one knows one GPU's memory
    told: bool  # whether the label gave the memory
    regions: list[str]


def plans(body: Any) -> list[Any]:
    """The plans of the answer; a changed overall shape fails the run loudly."""
    found = kit.obj(body).get("plans")
    if not isinstance(found, list):
        said = kit.obj(body).get("message", kit.obj(body).get("error"))
        error = f" (the answer says: {flat(said[:200])})" if isinstance(said, str) else ""
        raise PayloadShapeError(PROVIDER, f"{PAYLOAD_KEY}: answer has no list{error}")
    return found


def parse(payloads: Payloads, regions: tuple[str, ...], log: Log) -> ParseResult:
    """One on-demand record per GPU plan per asked region it lists."""
    rows = plans(payloads.get(PAYLOAD_KEY))
    result = ParseResult()
    asked = frozenset(regions)
    gpu_rows = 0
    for entry in rows:
        row = kit.obj(entry)
        if kit.count(row.get("gpu"), kit.NUMBERS_OR_TEXT) == 0 or row.get("available") is False:
            continue  # a CPU plan, or one no longer sold
        gpu_rows += 1
        try:
            plan = _plan(row)
        except _Skip as why:
            name = kit.name(row.get("name"))
            log.warning("%s: %s skipped: %s", PROVIDER, name or "a plan", why)
            result.skipped_rows += 1
            if name is not None:
                result.unreadable.add(name)  # unconfirmed, not withdrawn
            continue
        found = gpus.resolve(PROVIDER, plan.name, plan.said)
        if found is None:
            log.warning("%s: %s: no GPU memory known", PROVIDER, plan.name)
            result.unknown_instance_types.add(plan.name)
            continue
        offer = kit.Offer("on_demand", CURRENCY, plan.price)
        for region in kit.sold_in(plan.regions, asked):
            available = False if region is None else None
            result.records.append(
                kit.record(PROVIDER, region, plan.name, found.gpu, offer, available=available)
            )
        told = plan.told or found.source == "config"
        result.facts[plan.name] = found.source if told else "table"
    if gpu_rows and result.skipped_rows == gpu_rows:
        raise PayloadShapeError(
            PROVIDER, f"none of the {gpu_rows} GPU plans could be read: changed shape?"
        )
    return result


def _plan(row: dict[str, Any]) -> _Plan:
    name = kit.name(row.get("name"))
    if name is None:
        raise _Skip(f"name is {str(row.get('name'))[:40]!r}")
    count = kit.count(row.get("gpu"), kit.NUMBERS_OR_TEXT)  # Seeweb writes it as text ("1")
    if count is None or not 0 < count <= MOST_GPUS:
        raise _Skip(f"gpu is {str(row.get('gpu'))[:40]!r}")
    price = kit.exact(row.get("hourly_price"), kit.NUMBERS_OR_TEXT)
    if price is None or price <= 0:
        raise _Skip(f"hourly_price is {str(row.get('hourly_price'))[:40]!r}")
    label = row.get("gpu_label")
    if not isinstance(label, str) or not label.strip() or len(label) > kit.LONGEST_NAME:
        raise _Skip(f"gpu_label is {str(label)[:40]!r}")
    listed = row.get("available_regions")
    if not isinstance(listed, list):
        raise _Skip(f"available_regions is {str(listed)[:40]!r}")
    where = sorted({n for r in listed if (n := kit.name(kit.obj(r).get("location"))) is not None})
    named = _MEMORY.search(label)
    told = float(named.group(1)) if named and int(named.group(1)) > 0 else None
    # The label's own spelling first ("L40s 48GB"), else the GPU without its memory.
    model = gpus.canonical_model(PROVIDER, label) or gpus.stored_model(
        PROVIDER, _MEMORY.sub("", label)
    )
    memory = told or gpus.only_memory(gpus.canonical_model(PROVIDER, model))
    ram = kit.size(row.get("ram"), kit.NUMBERS_OR_TEXT)
    host = (
        kit.size(row.get("cpu"), kit.NUMBERS_OR_TEXT),
        None if ram is None else ram / MIB_PER_GIB,
    )
    said = None if memory is None else gpus.InstanceGpu(model, count, memory, *host)
    return _Plan(name, money(price), said, told is not None, where)
