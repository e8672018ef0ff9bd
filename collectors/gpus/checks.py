"""Checks across GPU entries that no entry can make alone: every name a GPU is known by in
filters and answers (a model's name, its aliases, its memory variants' names) means one GPU,
and an instance type's per-GPU memory is one its model is sold with.

Names match case-insensitively (`--gpu h100`), so `aliases = ["H100"]` on the A100, or a variant
named "H100 NVL" on another model, would silently turn one GPU into another wherever the name
is read; a memory no one sells (`gpu_memory_gib = 40` on an L40S) would make a variant nobody
can buy (`--gpu "L40S 40GB"`). Such a user's entry is refused instead, naming its key.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the schema imports this module: no import back at run time
    from collectors.gpus.schema import GpuModel, TypeOverride

# What a name means: a model, and with a memory only its variant of that much per GPU.
Meaning = tuple[str, float | None]


def spellings(model: GpuModel) -> Iterator[tuple[str, Meaning, str]]:
    """Each name of `model` with what it means and the key that gives it ("" for the name)."""
    yield model.name, (model.name, None), ""
    for i, alias in enumerate(model.aliases):
        yield alias, (model.name, None), f"aliases[{i}]"
    for variant in model.variants:
        if variant.name:
            key = f'variants."{variant.memory_gib:g}".name'
            yield variant.name, (model.name, variant.memory_gib), key


def clash(
    bundled: Mapping[str, GpuModel], own: Mapping[str, GpuModel]
) -> tuple[str, str, str] | None:
    """The first name of the user's models (`own`) that already means another GPU: (model,
    ".<key>" that gives the name or "" for the model's own, the error in words), or None. The
    bundled models are read first, so a clash is always reported at the user's entry."""
    seen: dict[str, Meaning] = {}
    ordered = [m for name, m in bundled.items() if name not in own] + list(own.values())
    for model in ordered:
        for name, meaning, key in spellings(model):
            known = seen.setdefault(name.lower(), meaning)
            if known != meaning:
                words = f"{name!r} already names the {label(known)}; a name means one GPU"
                return model.name, f".{key}" if key else "", words
    return None


def label(meaning: Meaning) -> str:
    """How a person writes a meaning: `H100`, `H100 94GB`."""
    model, gib = meaning
    return model if gib is None else f"{model} {gib:g}GB"


def sold_with(entry: TypeOverride, models: Mapping[str, GpuModel]) -> str | None:
    """Why an instance type entry's per-GPU memory is not one its model is sold with, in words;
    None when it is, or when the entry or the model says no memory."""
    model = models.get(entry.gpu_model or "")
    if not model or not model.memory_gib or entry.gpu_memory_gib in (None, *model.memory_gib):
        return None
    sold = ", ".join(f"{gib:g}" for gib in model.memory_gib)
    return (
        f"the {model.name} is sold with {sold} GiB per GPU, not {entry.gpu_memory_gib:g}; add "
        f"it to [gpus.models.{quoted(model.name)}] memory_gib if it is sold so"
    )


def quoted(name: str) -> str:
    """A TOML key as a user writes it in a path: bare where it can be, else in quotes."""
    return name if re.fullmatch(r"[A-Za-z0-9_-]+", name) else f'"{name}"'
