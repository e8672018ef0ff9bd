"""The names a GPU is known by in filters and answers (a model's name, its aliases, its memory
variants' names), and the check that a user's [gpus.models] entries give no name two meanings.

Names match case-insensitively (`--gpu h100`), so `aliases = ["H100"]` on the A100, or a variant
named "H100 NVL" on another model, would silently turn one GPU into another wherever the name
is read; such an entry is refused instead, naming its key.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the schema imports this module: no import back at run time
    from collectors.gpus.schema import GpuModel

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
