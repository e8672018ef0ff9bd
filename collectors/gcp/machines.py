"""Google Cloud: GPU machine prices, summed from the component rates of the catalog.

A machine's price in a region, for one offer, is vCPUs x the family's core rate + GiB x its
RAM rate + GPUs x the GPU rate (+ GiB of bundled local SSD x the local SSD rate). Every part
must be priced: a part without a rate means no price for that machine there, never a
cheaper one. The GPUs Google sells only attached to an N1 machine (T4, V100, P100, P4) are
priced with each N1 host shape the GPU table pairs them with (`n1-standard-8+nvidia-tesla-t4x1`),
never alone: alone they are no machine anyone can rent (docs/gpus.md).
"""

from __future__ import annotations

import logging
import re
from collections import defaultdict
from dataclasses import dataclass
from decimal import Decimal
from typing import TypeAlias

from collectors import gpus, kit
from collectors.base import ParseResult, PriceRecord, effective_hourly, money
from collectors.gcp.skus import OFFERS, Offer, SkuRate

PROVIDER = "gcp"
Log: TypeAlias = "logging.LoggerAdapter[logging.Logger]"
Key = tuple[str, Offer, str]  # component, offer, region


@dataclass(frozen=True)
class Recipe:
    """Which components price a machine: the host family's core and RAM, its GPU, its SSD."""

    host: str  # "a2": the "a2-core" and "a2-ram" components
    gpu: str  # the accelerator type whose component prices each GPU
    local_ssd_gib: int = 0  # bundled local SSD, billed by the GiB like any local SSD
    gpu_count: int | None = None  # the count an N1 type's name says, checked against its facts


# Bundled local SSD: 375 GiB disks, 1 per A100 80GB on a2-ultragpu, 2 per H100 on a3-highgpu
# and 16 on a3-megagpu-8g (Google's machine-type tables; gpuhunt's local_ssd_sizes_gib).
# fmt: off
RECIPES: dict[str, Recipe] = {
    **{f"a2-highgpu-{n}g": Recipe("a2", "nvidia-tesla-a100") for n in (1, 2, 4, 8)},
    "a2-megagpu-16g": Recipe("a2", "nvidia-tesla-a100"),
    **{f"a2-ultragpu-{n}g": Recipe("a2", "nvidia-a100-80gb", 375 * n) for n in (1, 2, 4, 8)},
    **{f"a3-highgpu-{n}g": Recipe("a3", "nvidia-h100-80gb", 750 * n) for n in (1, 2, 4, 8)},
    "a3-megagpu-8g": Recipe("a3plus", "nvidia-h100-mega-80gb", 16 * 375),
    **{f"g2-standard-{n}": Recipe("g2", "nvidia-l4") for n in (4, 8, 12, 16, 24, 32, 48, 96)},
}
# fmt: on

# The GPUs Google attaches only to N1 machines, and how a type of one such machine is named:
# "<N1 shape>+<accelerator>x<count>". Which shapes go with which GPU count is the GPU table's
# (Google's limits, [instance_types.gcp]); a user's [gpus.instance_types] entry of this form
# (an n1-highmem host, say) is priced the same way.
ATTACHABLE = ("nvidia-tesla-t4", "nvidia-tesla-v100", "nvidia-tesla-p100", "nvidia-tesla-p4")
N1_TYPE = re.compile(rf"n1-[a-z]+-\d+\+(?P<gpu>{'|'.join(ATTACHABLE)})x(?P<count>[1-9]\d*)")


def recipes() -> dict[str, Recipe]:
    """Every machine priced: the fixed shapes, and each N1 machine with attached GPUs the GPU
    table (with the user's entries) knows."""
    attached = {
        name: Recipe("n1", found["gpu"], gpu_count=int(found["count"]))
        for name in gpus.instance_types(PROVIDER)
        if (found := N1_TYPE.fullmatch(name))
    }
    return {**RECIPES, **attached}


class RateBook:
    """Component rates by (component, offer, region), for the asked regions only.

    Two SKUs pricing one component in one region for one offer at different prices leave it
    unpriced there: which one Google bills cannot be told from the catalog."""

    def __init__(self, regions: frozenset[str], log: Log) -> None:
        self.regions = regions
        self.log = log
        self._rates: dict[Key, SkuRate | None] = {}

    def add(self, rate: SkuRate) -> None:
        for region in rate.regions:
            if region not in self.regions:
                continue
            key = (rate.component, rate.offer, region)
            if key not in self._rates:
                self._rates[key] = rate
                continue
            kept = self._rates[key]
            if kept is not None and (kept.rate, kept.currency) != (rate.rate, rate.currency):
                self.log.warning(
                    "%s: SKUs %s and %s both price %s %s in %s (%s %s vs %s %s); using neither",
                    PROVIDER, kept.sku_id, rate.sku_id, rate.component, _label(rate.offer),
                    region, _show(kept.rate), kept.currency, _show(rate.rate), rate.currency,
                )  # fmt: skip
                self._rates[key] = None

    def get(self, component: str, offer: Offer, region: str) -> SkuRate | None:
        return self._rates.get((component, offer, region))

    def __contains__(self, key: Key) -> bool:
        return key in self._rates


def price_machines(book: RateBook, regions: tuple[str, ...], result: ParseResult) -> None:
    """Add a record per machine, region and offer whose every part is priced, and where the
    GPU facts of each type priced came from."""
    gaps: dict[tuple[Offer, str, tuple[str, ...]], list[str]] = defaultdict(list)
    for instance_type, recipe in recipes().items():
        found = gpus.resolve(PROVIDER, instance_type)
        if found is None:
            result.unknown_instance_types.add(instance_type)
            continue
        problem = _problem(recipe, found.gpu)
        if problem:
            book.log.warning("%s: %s is not priced: %s", PROVIDER, instance_type, problem)
            continue
        parts = _parts(recipe, found.gpu)
        for offer in OFFERS:
            unpriced: dict[str, list[str]] = defaultdict(list)
            for region in regions:
                priced = _price(book, parts, offer, region)
                if isinstance(priced, str):
                    unpriced[priced].append(region)
                elif priced is not None:
                    result.records.append(_record(instance_type, found.gpu, region, offer, *priced))
                    result.facts[instance_type] = found.source
            for missing, places in unpriced.items():
                gaps[offer, missing, tuple(places)].append(instance_type)
    # One line per gap, not per machine: one missing N1 rate leaves dozens of shapes unpriced.
    for (offer, missing, regions_without), types in gaps.items():
        book.log.info(
            "%s: no %s price in %s for %s: no rate for %s",
            PROVIDER, _label(offer), ", ".join(regions_without), _names(types), missing,
        )  # fmt: skip


def _price(
    book: RateBook, parts: list[tuple[str, Decimal]], offer: Offer, region: str
) -> tuple[str, Decimal] | str | None:
    """(currency, hourly total); or the parts that have no rate; or None when the machine is
    not sold there (no SKU prices its GPU there: nothing to say). Hosts and local SSD are
    shared with other machines and say nothing about where this one is sold."""
    gpu_component = parts[0][0]
    if (gpu_component, offer, region) not in book:
        return None
    rates = [book.get(component, offer, region) for component, _ in parts]
    missing = [component for (component, _), r in zip(parts, rates, strict=True) if r is None]
    if missing:
        return ", ".join(missing)
    priced = [r for r in rates if r is not None]
    currencies = {r.currency for r in priced}
    if len(currencies) != 1:
        return "one currency across the parts"
    total = sum((q * r.rate for (_, q), r in zip(parts, priced, strict=True)), Decimal(0))
    return currencies.pop(), total


def _problem(recipe: Recipe, gpu: gpus.InstanceGpu) -> str:
    """What keeps a type from being priced (a user's entry may lack the host size), or ""."""
    if gpu.vcpus is None or gpu.memory_gib is None:
        return "its GPU facts give no vCPUs or memory_gib of the host"
    if recipe.gpu_count is not None and gpu.gpu_count != recipe.gpu_count:
        return f"its name says {recipe.gpu_count} GPUs, its GPU facts {gpu.gpu_count:g}"
    return ""


def _parts(recipe: Recipe, gpu: gpus.InstanceGpu) -> list[tuple[str, Decimal]]:
    """(component, quantity): GPUs first, then vCPUs, GiB of memory, GiB of local SSD."""
    assert gpu.vcpus is not None and gpu.memory_gib is not None  # see _problem
    parts = [
        (recipe.gpu, _decimal(gpu.gpu_count)),
        (f"{recipe.host}-core", _decimal(gpu.vcpus)),
        (f"{recipe.host}-ram", _decimal(gpu.memory_gib)),
    ]
    if recipe.local_ssd_gib:
        parts.append(("local-ssd", Decimal(recipe.local_ssd_gib)))
    return parts


def _record(
    instance_type: str,
    gpu: gpus.InstanceGpu,
    region: str,
    offer: Offer,
    currency: str,
    total: Decimal,
) -> PriceRecord:
    kind, term = offer
    # Commitments are billed monthly for the term, with nothing up front; catalog rates are
    # already hourly.
    upfront = None if term is None else money(0)
    hourly = money(total) if term is None else effective_hourly(total, Decimal(0), term)
    # The catalog prices regions; a zone's own price does not exist here.
    priced = kit.Offer(kind, currency, hourly, term, upfront_total=upfront)
    return kit.record(PROVIDER, region, instance_type, gpu, priced)


def _decimal(value: float) -> Decimal:
    # The table's numbers are whole or short decimals; str() keeps them exact.
    return Decimal(str(value))


def _show(amount: Decimal) -> str:
    return f"{amount.normalize():f}"


def _names(types: list[str], shown: int = 3) -> str:
    more = len(types) - shown
    return ", ".join(types[:shown]) + (f" and {more} more" if more > 0 else "")


def _label(offer: Offer) -> str:
    kind, term = offer
    return kind if term is None else f"{term}-month commitment"
