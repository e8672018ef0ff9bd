"""What a user means by a GPU in a filter (`--gpu`, an alert rule's `gpu_model`, `[review]
gpus`): a model, or one memory variant of it, and the SQL that picks its offers.

A name is a model's name or alias in any case (`a100`), a named variant of the GPU table
(`H100 NVL`: the H100 with 94 GiB per GPU), or a model followed by its per-GPU memory in GB or
GiB (`A100 80GB`, `A100-80GB`, `a100 80 gib`: the project counts a GPU's memory in the vendor's
nominal GB, which the table stores as GiB, so the two spellings mean the same number). A model
no table knows is kept as typed: the store's `gpu_model` values are matched case-insensitively,
and the commands refuse a name neither the store nor the table knows (`unknown`).

The names come from the tracker (`GpuNames`, built from the GPU table); this module only reads
them, so storage and alerts need not import the table.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

# A model, a separator (space, - or _) and a memory: "A100 80GB", "A100-80GB", "H100_94 GiB".
_WITH_MEMORY = re.compile(r"^(?P<model>.*?\S)[\s_-]+(?P<gib>\d+(?:\.\d+)?)\s*gi?b$", re.I)


@dataclass(frozen=True)
class GpuChoice:
    """A GPU model (as the store spells it where the table knows it), and with `memory_gib`
    only its variant of that much memory per GPU."""

    model: str
    memory_gib: float | None = None

    @property
    def label(self) -> str:
        """How a person writes it: `A100`, `A100 80GB`."""
        return self.model if self.memory_gib is None else f"{self.model} {self.memory_gib:g}GB"


@dataclass(frozen=True)
class GpuNames:
    """Every name a filter may give a GPU by: `names` in lower case -> what it means; per model
    the memory variants the GPU table lists; and `accepted`, every model and variant as a
    person writes it (`A100`, `A100 40GB`, `H100 NVL`), for the refusals; `named`, the models
    and the variants with a name of their own (`A100`, `H100 NVL`), without `<model> <N>GB`."""

    names: Mapping[str, GpuChoice] = field(default_factory=dict)
    memories: Mapping[str, tuple[float, ...]] = field(default_factory=dict)
    accepted: tuple[str, ...] = ()
    named: tuple[str, ...] = ()

    def parse(self, text: str) -> GpuChoice:
        """What `text` means (see the module docstring); a name nobody knows, as typed."""
        text = text.strip()
        found = self.names.get(text.lower())
        if found is not None:
            return found
        split = _WITH_MEMORY.match(text)
        if split is None:
            return GpuChoice(text)
        model = self.names.get(split["model"].lower())
        name = model.model if model is not None and model.memory_gib is None else split["model"]
        return GpuChoice(name, float(split["gib"]))

    def knows(self, choice: GpuChoice) -> bool:
        """Whether the GPU table knows `choice`: its model, and the memory among its variants."""
        gibs = self.memories.get(choice.model)
        return gibs is not None and (choice.memory_gib is None or choice.memory_gib in gibs)


def names_of(
    models: Iterable[tuple[str, Iterable[str], Iterable[float], Mapping[float, str | None]]],
) -> GpuNames:
    """The names of `models`, each given as (name, aliases, memory variants in GiB, {GiB:
    variant name or None} of the variants the table describes)."""
    names: dict[str, GpuChoice] = {}
    memories: dict[str, tuple[float, ...]] = {}
    accepted: set[str] = set()
    named: set[str] = set()
    for name, aliases, gibs, variants in models:
        for spelling in (name, *aliases):
            names[spelling.lower()] = GpuChoice(name)
        memories[name] = tuple(sorted({*gibs, *variants}))
        accepted |= {GpuChoice(name, gib).label for gib in memories[name]}
        named.add(name)
        for gib, variant in variants.items():
            if variant:
                names[variant.lower()] = GpuChoice(name, gib)
                named.add(variant)
    return GpuNames(names, memories, tuple(sorted(accepted | named)), tuple(sorted(named)))


def clause(choices: Iterable[GpuChoice], params: dict[str, Any], prefix: str = "g") -> str:
    """SQL over `gpu_model` and `gpu_memory_gib` true for an offer of any of `choices` (the
    models case-insensitively), its named parameters `$<prefix>_...` added to `params`;
    `true` for none."""
    ors = []
    for i, choice in enumerate(choices):
        params[f"{prefix}_model_{i}"] = choice.model
        test = f"lower(gpu_model) = lower(${prefix}_model_{i})"
        if choice.memory_gib is not None:
            params[f"{prefix}_gib_{i}"] = choice.memory_gib
            test += f" AND gpu_memory_gib = ${prefix}_gib_{i}"
        ors.append(f"({test})")
    return "(" + " OR ".join(ors) + ")" if ors else "true"


def at_least(memory_gib: float | None, params: dict[str, Any], prefix: str = "g") -> str:
    """SQL true for an offer with at least `memory_gib` GiB per GPU (`true` for None)."""
    if memory_gib is None:
        return "true"
    params[f"{prefix}_min_gib"] = memory_gib
    return f"gpu_memory_gib >= ${prefix}_min_gib"


def per_gpu(values: Iterable[tuple[GpuChoice, float]], params: dict[str, Any], prefix: str) -> str:
    """SQL over `gpu_model` and `gpu_memory_gib`: the value of the first of `values` whose GPU an
    offer is of (give a model's variants before the model), NULL where none is; its named
    parameters `$<prefix>_...` added to `params`."""
    whens = []
    for i, (choice, value) in enumerate(values):
        params[f"{prefix}_value_{i}"] = value
        whens.append(f"WHEN {clause([choice], params, f'{prefix}_{i}')} THEN ${prefix}_value_{i}")
    return f"CASE {' '.join(whens)} END" if whens else "NULL"
