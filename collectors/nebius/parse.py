"""Nebius' answers (ProtoJSON, as `collectors.nebius.collector` keeps them) to price records.

Pure. `projects/<tenant>/page-N` say each project's region (`spec.region`);
`platforms/<project>/page-N` list the compute platforms (`gpu-h100-sxm`, `cpu-d3`) with their
presets (`8gpu-128vcpu-1600gb`: `resources.gpuCount`, `vcpuCount`, `memoryGibibytes`) and the
GPU memory (`spec.gpuMemoryGigabytes`); `estimate/<project>/<platform>/<preset>/<kind>` hold the
calculator's estimate, `hourlyCost.general.total.cost` a decimal string in US dollars for the
whole VM. One record per GPU preset and region: instance_type `<platform>/<preset>`, on-demand,
and spot from the preemptible estimate. The GPU is the platform name's second part (`h100`)
through the GPU table (`[names.nebius]`); one the table does not know is stored under that
name in capitals (`B300`), or as given when the capitals name another GPU (`rtx6000` with 96 GB
is not the 24 GB RTX 6000). The calculator says nothing of capacity: `available` is None.
"""

from __future__ import annotations

import logging
import re
from decimal import Decimal
from typing import Any

from collectors import gpus, kit
from collectors.base import ParseResult, Payloads, money
from collectors.common import PayloadShapeError

NAME = "nebius"
CURRENCY = "USD"  # the calculator answers in the billing currency, US dollars
KINDS = ("on_demand", "spot")
Log = logging.LoggerAdapter[Any]
GPU_PLATFORM = re.compile(r"gpu-([a-z0-9]{2,20})(?:-[a-z0-9-]{1,40})?")


class _Skip(Exception):
    """A preset the parser cannot price: logged, counted, its offers kept open."""


def items(page: Any, what: str) -> list[Any]:
    found = kit.obj(page).get("items", [])  # ProtoJSON leaves an empty list out
    if not isinstance(found, list):
        raise PayloadShapeError(NAME, f"{what}: answer has no items list")
    return found


def ids(page: Any, what: str) -> list[str]:
    """The ids of a tenants list page."""
    found = [kit.obj(kit.obj(i).get("metadata")).get("id") for i in items(page, what)]
    return [i for i in found if isinstance(i, str) and i]


def project_regions(page: Any) -> list[tuple[str, str]]:
    """(project id, region) of a projects list page."""
    pairs = []
    for item in items(page, "projects"):
        project = kit.obj(kit.obj(item).get("metadata")).get("id")
        region = kit.obj(kit.obj(item).get("spec")).get("region")
        if isinstance(project, str) and isinstance(region, str) and project and region:
            pairs.append((project, region))
    return pairs


def gpu_presets(page: Any) -> list[tuple[str, str, bool]]:
    """(platform, preset, preemptible allowed) of every GPU preset of a platforms page."""
    out = []
    for item in items(page, "platforms"):
        platform = kit.obj(item)
        name = kit.obj(platform.get("metadata")).get("name")
        if not isinstance(name, str):
            continue
        spot = kit.obj(platform.get("status")).get("allowedForPreemptibles") is True
        for preset in kit.obj(platform.get("spec")).get("presets") or []:
            count = kit.exact(
                kit.obj(kit.obj(preset).get("resources")).get("gpuCount"), kit.NUMBERS_OR_TEXT
            )
            preset_name = kit.obj(preset).get("name")
            if count and count > 0 and isinstance(preset_name, str):
                out.append((name, preset_name, spot))
    return out


def parse(payloads: Payloads, asked: tuple[str, ...], log: Log) -> ParseResult:
    result = ParseResult()
    regions = {
        project: region
        for key, page in payloads.items()
        if key.startswith("projects/")
        for project, region in project_regions(page)
    }
    presets = 0
    for key, page in sorted(payloads.items()):
        if not key.startswith("platforms/"):
            continue
        project = key.split("/")[1]
        region = regions.get(project)
        if region is None or (asked and region not in asked):
            continue
        for item in items(page, key):
            for preset in kit.obj(kit.obj(item).get("spec")).get("presets") or []:
                resources = kit.obj(kit.obj(preset).get("resources"))
                count = kit.size(resources.get("gpuCount"), kit.NUMBERS_OR_TEXT)
                if count is None:
                    continue  # a CPU preset
                presets += 1
                _preset(payloads, project, region, kit.obj(item), kit.obj(preset), result, log)
    if presets and result.skipped_rows == presets:
        raise PayloadShapeError(NAME, f"none of the {presets} GPU presets could be priced")
    return result


def _preset(
    payloads: Payloads,
    project: str,
    region: str,
    platform: dict[str, Any],
    preset: dict[str, Any],
    result: ParseResult,
    log: Log,
) -> None:
    name = str(kit.obj(platform.get("metadata")).get("name"))[:60]
    preset_name = str(preset.get("name"))[:60]
    instance_type = f"{name}/{preset_name}"
    try:
        prices = _prices(payloads, f"estimate/{project}/{name}/{preset_name}")
        said = _said(name, platform, preset)
    except _Skip as why:
        log.warning("%s: %s skipped: %s", NAME, instance_type, why)
        result.skipped_rows += 1
        result.unreadable.add(instance_type)
        return
    found = gpus.resolve(NAME, instance_type, said)
    if found is None:
        log.warning("%s: %s: no GPU memory known", NAME, instance_type)
        result.unknown_instance_types.add(instance_type)
        return
    if found.gpu.gpu_model is not None and gpus.model(found.gpu.gpu_model) is None:
        log.warning("%s: %s: GPU %s not in the GPU table", NAME, instance_type, found.gpu.gpu_model)
    for kind, price in prices.items():
        offer = kit.Offer(kind, CURRENCY, price)
        result.records.append(kit.record(NAME, region, instance_type, found.gpu, offer))
    result.facts[instance_type] = found.source


def _prices(payloads: Payloads, key: str) -> dict[Any, Decimal]:
    """On-demand (required) and spot (where estimated, and below on-demand) hourly prices."""
    prices: dict[Any, Decimal] = {}
    for kind in KINDS:
        if f"{key}/{kind}" not in payloads:
            continue
        total = kit.obj(
            kit.obj(kit.obj(payloads[f"{key}/{kind}"]).get("hourlyCost")).get("general")
        )
        cost = kit.exact(kit.obj(total.get("total")).get("cost"), kit.NUMBERS_OR_TEXT)
        if cost is None or cost <= 0:
            raise _Skip(f"{kind} estimate is {str(total)[:60]!r}")
        prices[kind] = money(cost)
    if "on_demand" not in prices:
        raise _Skip("no on-demand estimate")
    if "spot" in prices and prices["spot"] >= prices["on_demand"]:
        del prices["spot"]  # never an on-demand price standing in for spot
    return prices


def _said(name: str, platform: dict[str, Any], preset: dict[str, Any]) -> gpus.InstanceGpu | None:
    """The preset's GPUs and host as the platform gives them; None when no memory is known."""
    resources = kit.obj(preset.get("resources"))
    count = kit.size(resources.get("gpuCount"), kit.NUMBERS_OR_TEXT)
    if count is None or count != int(count):
        raise _Skip(f"gpuCount is {str(resources.get('gpuCount'))[:20]!r}")
    matched = GPU_PLATFORM.fullmatch(name)
    if matched is None:
        raise _Skip("a GPU preset on a platform not named gpu-<model>")
    memory = kit.size(kit.obj(platform.get("spec")).get("gpuMemoryGigabytes"), kit.NUMBERS_OR_TEXT)
    model = _model(matched.group(1), memory)
    memory = memory or gpus.only_memory(model)
    if memory is None:
        return None
    vcpus = kit.size(resources.get("vcpuCount"), kit.NUMBERS_OR_TEXT)
    ram = kit.size(resources.get("memoryGibibytes"), kit.NUMBERS_OR_TEXT)
    return gpus.InstanceGpu(model, count, memory, vcpus, ram)


def _model(token: str, memory: float | None) -> str | None:
    """The GPU of a platform's name part: Nebius' spelling in the table, else the name in
    capitals unless that is another GPU (its memories differ), else the name as given."""
    known = gpus.canonical_model(NAME, token)
    if known is not None:
        return known
    guess = gpus.canonical_model(NAME, token.upper())
    if guess is None:
        return gpus.stored_model(NAME, token.upper())
    facts = gpus.model(guess)
    if memory is None or facts is None or memory in facts.memory_gib:
        return guess
    return gpus.stored_model(NAME, token)
