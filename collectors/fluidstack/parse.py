"""Fluidstack's available configurations to price records: pure, no I/O.

The answer is a list of configurations, one per GPU type: `gpu_type` (`H100_SXM5_80GB`: the
model, the board and ONE GPU's memory), `gpu_counts` (the GPU counts a machine can have),
`price_per_gpu_hr` (US dollars per GPU-hour) and `regions` (where it can be deployed now).
Each GPU count is its own offer, named `<gpu_type>::<count>` (`H100_SXM5_80GB::8`), priced
count x `price_per_gpu_hr`, on-demand (the list has no spot or reserved prices), available in
each region it lists; a configuration listed in no region keeps its price once with region
NULL, sold out; one with no `regions` at all is stored once with region and available NULL.
The answer says nothing of the host: vCPUs and memory stay NULL.
"""

from __future__ import annotations

import logging
import re
from decimal import Decimal
from typing import Any

from collectors import gpus, kit
from collectors.base import ParseResult, Payloads, money
from collectors.common import PayloadShapeError, flat

PROVIDER = "fluidstack"
PAYLOAD_KEY = "configurations"
CURRENCY = "USD"
MOST_GPUS = 16
_MEMORY = re.compile(r"_(\d+)GB$")  # "H100_SXM5_80GB": 80 GB of one GPU

Log = logging.LoggerAdapter[Any]


class _Skip(Exception):
    """A configuration the parser cannot read: logged, counted in skipped_rows."""


def configurations(body: Any) -> list[Any]:
    """The configurations of the answer; a changed overall shape fails the run loudly."""
    if not isinstance(body, list):
        said = kit.obj(body).get("detail", kit.obj(body).get("error"))
        error = f" (the answer says: {flat(said[:200])})" if isinstance(said, str) else ""
        raise PayloadShapeError(PROVIDER, f"{PAYLOAD_KEY}: answer has no list{error}")
    return body


def parse(payloads: Payloads, regions: tuple[str, ...], log: Log) -> ParseResult:
    """One on-demand record per GPU type, GPU count and asked region it lists."""
    rows = configurations(payloads.get(PAYLOAD_KEY))
    result = ParseResult()
    asked = frozenset(regions)
    for entry in rows:
        row = kit.obj(entry)
        try:
            gpu_type, counts, price, listed = _configuration(row)
        except _Skip as why:
            named = kit.name(row.get("gpu_type"))
            log.warning("%s: %s skipped: %s", PROVIDER, named or "a configuration", why)
            result.skipped_rows += 1
            result.unreadable.update(_types_of(row))  # unconfirmed, not withdrawn
            continue
        _offers(gpu_type, counts, price, listed, asked, result, log)
    if rows and result.skipped_rows == len(rows):
        raise PayloadShapeError(
            PROVIDER, f"none of the {len(rows)} configurations could be read: changed shape?"
        )
    return result


def _configuration(row: dict[str, Any]) -> tuple[str, list[int], Decimal, list[str] | None]:
    gpu_type = kit.name(row.get("gpu_type"))
    if gpu_type is None:
        raise _Skip(f"gpu_type is {str(row.get('gpu_type'))[:40]!r}")
    counts = _counts(row.get("gpu_counts"))
    if not counts:
        raise _Skip(f"gpu_counts is {str(row.get('gpu_counts'))[:40]!r}")
    price = kit.exact(row.get("price_per_gpu_hr"), kit.NUMBERS_OR_TEXT)
    if price is None or price <= 0:
        raise _Skip(f"price_per_gpu_hr is {str(row.get('price_per_gpu_hr'))[:40]!r}")
    listed = row.get("regions")
    if listed is None:
        return gpu_type, counts, money(price), None  # no regions said: region NULL
    if not isinstance(listed, list):
        raise _Skip(f"regions is {str(listed)[:40]!r}")
    return gpu_type, counts, money(price), sorted({r for r in listed if kit.name(r)})


def _offers(
    gpu_type: str,
    counts: list[int],
    price: Decimal,
    listed: list[str] | None,
    asked: frozenset[str],
    result: ParseResult,
    log: Log,
) -> None:
    model = gpus.stored_model(PROVIDER, gpu_type)
    named = _MEMORY.search(gpu_type)
    told = float(named.group(1)) if named and int(named.group(1)) > 0 else None
    memory = told or gpus.only_memory(gpus.canonical_model(PROVIDER, gpu_type))
    for count in counts:
        instance_type = f"{gpu_type}::{count}"
        said = None if memory is None else gpus.InstanceGpu(model, count, memory)
        found = gpus.resolve(PROVIDER, instance_type, said)
        if found is None:
            log.warning("%s: %s: no GPU memory known", PROVIDER, instance_type)
            result.unknown_instance_types.add(instance_type)
            continue
        # The price is per GPU-hour: a machine of `count` GPUs costs count x the price.
        offer = kit.Offer("on_demand", CURRENCY, money(price * count))
        # No `regions` at all: one record of no region, whether it deploys unsaid.
        for region in [None] if listed is None else kit.sold_in(listed, asked):
            available = None if listed is None else region is not None
            result.records.append(
                kit.record(PROVIDER, region, instance_type, found.gpu, offer, available=available)
            )
        told_here = told is not None or found.source == "config"
        result.facts[instance_type] = found.source if told_here else "table"


def _counts(value: Any) -> list[int]:
    """The GPU counts of a configuration, each a whole number from 1 to MOST_GPUS; [] if any
    is not (a broken row, not a guess at which ones hold)."""
    if not isinstance(value, list) or not value:
        return []
    counts = []
    for item in value:
        number = kit.exact(item)
        if number is None or number != int(number) or not 0 < number <= MOST_GPUS:
            return []
        counts.append(int(number))
    return sorted(set(counts))


def _types_of(row: dict[str, Any]) -> set[str]:
    """The instance types an unreadable configuration stands for, where its name and counts
    are readable."""
    gpu_type = kit.name(row.get("gpu_type"))
    return (
        set() if gpu_type is None else {f"{gpu_type}::{n}" for n in _counts(row.get("gpu_counts"))}
    )
