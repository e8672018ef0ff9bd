"""DigitalOcean's sizes answer to price records: pure, no I/O.

A GPU size (one with `gpu_info`) makes one on-demand record per region it lists, narrowed to
the asked ones, available = the size's own `available` flag. A size that lists no region
(`regions: []`, `available: false`) keeps its list price: one record, region NULL, available
false, whatever regions are asked (the store looks for an offer of no region in every
collection); a size listed only in regions not asked makes no record. `price_hourly` is used as
given: `price_monthly` is 672 or 744 hours of it depending on the size, so it is never divided
back. The GPU facts are `gpu_info`'s (the API's), over the GPU table; a model the table does not
know is stored under its own name, its count and memory being known.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from collectors import gpus, kit
from collectors.base import ParseResult, Payloads, PriceRecord, money
from collectors.common import PayloadShapeError

PROVIDER = "paperspace"
CURRENCY = "USD"
MIB_PER_GIB = 1024  # `memory` is documented in MB but is MiB: 245760 for a 240 GB size
# Third-party copies of the answer show "-spot" GPU sizes that DigitalOcean does not document:
# storing them as on-demand would be wrong, and as spot a guess, so they are skipped and logged.
SPOT_SUFFIX = "-spot"

Log = logging.LoggerAdapter[Any]


class _Skip(Exception):
    """A size the parser does not understand: logged, counted in skipped_rows, not stored."""


class _Unplaced(Exception):
    """A GPU size whose GPU cannot be placed: reported in unknown_instance_types."""


@dataclass(frozen=True)
class _Offer:
    slug: str
    price: Decimal
    gpu: gpus.InstanceGpu
    source: str  # where the GPU facts came from: "api", "table" or "config"
    host: kit.Host
    regions: tuple[str, ...]
    available: bool | None


def parse(payloads: Payloads, regions: tuple[str, ...], log: Log) -> ParseResult:
    """One record per GPU size per asked region it lists; CPU sizes are ignored."""
    result = ParseResult()
    asked = frozenset(regions)
    seen: set[str] = set()
    examined = 0
    nowhere: list[str] = []
    for where, size in _sizes(payloads):
        if isinstance(size, dict) and not size.get("gpu_info"):
            continue  # a CPU Droplet size: no gpu_info at all
        examined += 1
        offer = _read(where, size, result, log)
        if offer is None:
            continue
        if offer.slug in seen:  # pages shifted while we walked them
            log.warning("%s: %s: %s listed twice; skipped", PROVIDER, where, offer.slug)
            result.skipped_rows += 1
            continue
        seen.add(offer.slug)
        where_sold = kit.sold_in(offer.regions, asked)
        if not where_sold:
            nowhere.append(offer.slug)
            continue
        result.records.extend(_record(offer, region) for region in where_sold)
        result.facts[offer.slug] = offer.source
    if examined and result.skipped_rows == examined:
        raise PayloadShapeError(
            PROVIDER, f"none of the {examined} GPU sizes could be read: changed shape?"
        )
    result.sold_out.update(nowhere)  # priced, but sold nowhere asked: their intervals close
    if nowhere:
        log.info(
            "%s: %d GPU sizes offered in no asked region, no record: %s",
            PROVIDER,
            len(nowhere),
            ", ".join(nowhere),
        )
    return result


def _read(where: str, size: Any, result: ParseResult, log: Log) -> _Offer | None:
    """The offer of one GPU size, or None (logged and counted) when it cannot be stored."""
    try:
        offer = _offer(size)
    except _Skip as why:
        log.warning("%s: %s skipped: %s", PROVIDER, where, why)
        result.skipped_rows += 1
        if isinstance(size, dict) and isinstance(size.get("slug"), str):
            result.unreadable.add(size["slug"])  # unconfirmed, not withdrawn
        return None
    except _Unplaced as why:
        log.warning("%s: %s: %s; its prices are not stored", PROVIDER, size["slug"], why)
        result.unknown_instance_types.add(size["slug"])
        return None
    note = _note(offer, _said(size), size["gpu_info"])
    if note:
        log.warning("%s: %s: %s", PROVIDER, offer.slug, note)
    return offer


def page_sizes(page: Any, where: str) -> list[Any]:
    sizes = page.get("sizes") if isinstance(page, dict) else None
    if not isinstance(sizes, list):
        raise PayloadShapeError(PROVIDER, f"{where}: answer has no sizes list")
    return sizes


def _sizes(payloads: Payloads) -> list[tuple[str, Any]]:
    """Every size of every page, in page order, with where it was ("page-2 size 7")."""
    keys = sorted(payloads, key=_page_number)
    return [
        (f"{key} size {index}", size)
        for key in keys
        for index, size in enumerate(page_sizes(payloads[key], key))
    ]


def _page_number(key: str) -> int:
    prefix, _, number = key.partition("-")
    if prefix != "page" or not number.isdigit():
        raise PayloadShapeError(PROVIDER, f"unexpected payload key {key!r}")
    return int(number)


def _offer(size: Any) -> _Offer:
    if not isinstance(size, dict) or not isinstance(size.get("slug"), str) or not size["slug"]:
        raise _Skip("no slug")
    if size["slug"].endswith(SPOT_SUFFIX):
        raise _Skip(f"{size['slug']}: an undocumented spot size, not stored as on-demand")
    info = size["gpu_info"]
    count = info.get("count") if isinstance(info, dict) else None
    if isinstance(count, bool) or not isinstance(count, int) or count <= 0:
        raise _Skip(f"{size['slug']}: gpu_info.count is {count!r}")
    price = _price(size["slug"], size.get("price_hourly"))
    regions = size.get("regions")
    if not isinstance(regions, list) or not all(isinstance(r, str) and r for r in regions):
        raise _Skip(f"{size['slug']}: regions is {regions!r}")
    available = size.get("available")
    if available is not None and not isinstance(available, bool):
        raise _Skip(f"{size['slug']}: available is {available!r}")
    resolved = _gpu(size["slug"], _said(size))
    if resolved is None:
        raise _Unplaced(f"gpu_info.vram is {info.get('vram')!r}, and the GPU table lacks the size")
    gpu = resolved.gpu  # the host size: the user's entry where it says one, else the API's
    megabytes = kit.size(size.get("memory"))
    host = (
        gpu.vcpus if gpu.vcpus is not None else kit.size(size.get("vcpus")),
        gpu.memory_gib
        if gpu.memory_gib is not None or megabytes is None
        else megabytes / MIB_PER_GIB,
    )
    regions = tuple(dict.fromkeys(regions))
    return _Offer(size["slug"], price, gpu, resolved.source, host, regions, available)


def _price(slug: str, value: Any) -> Decimal:
    """price_hourly exactly as written (str() of a float is its shortest repr)."""
    price = kit.exact(value)
    if price is None or price <= 0:
        raise _Skip(f"{slug}: price_hourly is {value!r}")  # never a zero or negative price
    return money(price)


def _said(size: dict[str, Any]) -> gpus.InstanceGpu | None:
    """What `gpu_info` says: the model (None for one the table does not know), the count, and
    per-GPU memory = vram.amount (the TOTAL of all the GPUs, in GiB) / count; None when the
    memory is not given in GiB (never guessed from another unit)."""
    info = size["gpu_info"]
    count = info["count"]
    model = gpus.stored_model(PROVIDER, info.get("model"))
    vram = info.get("vram")
    amount = vram.get("amount") if isinstance(vram, dict) else None
    unit = vram.get("unit") if isinstance(vram, dict) else None
    total = kit.size(amount)
    if total is None or unit != "gib":
        return None
    return gpus.InstanceGpu(model, count, total / count)


def _gpu(slug: str, said: gpus.InstanceGpu | None) -> gpus.Resolved | None:
    """The user's entry over what the API said over the table. A model the spellings do not
    know, on a size the table knows with the same count and memory, takes the table's model:
    the size's history keeps its meaning when DigitalOcean spells its GPU anew."""
    known = gpus.resolve(PROVIDER, slug)
    if said is not None and not gpus.known(said.gpu_model) and known is not None:
        same = (known.gpu.gpu_count, known.gpu.gpu_memory_gib) == (
            said.gpu_count,
            said.gpu_memory_gib,
        )
        return known if same else gpus.resolve(PROVIDER, slug, said)
    return gpus.resolve(PROVIDER, slug, said)


def _note(offer: _Offer, said: gpus.InstanceGpu | None, info: dict[str, Any]) -> str | None:
    """What a user should hear of the size's GPU facts: an unknown model, a memory the table
    stood in for, or an answer that contradicts the table."""
    if not gpus.known(offer.gpu.gpu_model):
        return f"GPU model {info.get('model')!r} is not in the GPU table; stored under its own name"
    if said is None:
        vram = info.get("vram")
        return (
            f"gpu_info.vram is {vram!r}; the GPU table's entry is stored"
            if offer.source == "table"
            else None
        )
    contradiction = gpus.contradiction(PROVIDER, offer.slug, said)
    if offer.source == "api" and said.gpu_model is not None and contradiction:
        return f"{contradiction}; the API's facts are stored"
    return None


def _record(offer: _Offer, region: str | None) -> PriceRecord:
    priced = kit.Offer("on_demand", CURRENCY, offer.price)  # the sizes API has list prices only
    # A size listed in no region can be created nowhere, whatever its `available` says.
    available = offer.available if region is not None else False
    return kit.record(
        PROVIDER,
        region,
        offer.slug,
        offer.gpu,
        priced,
        available=available,
        host=offer.host,
    )
