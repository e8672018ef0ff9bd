"""What the tracker knows of GPUs: facts from the provider's answer first, the table second.

The bundled table (`table.toml`, a data file in the package) holds what no API says: GPU models
with their memory variants and throughput, each provider's spelling of a GPU, and per instance
type only where the provider's answer names no GPU (Azure, GCP's shapes, Tencent's families).
The user's [gpus] tables in config.toml (`Overrides`) take precedence over both, and are
installed once per process by the collector being built (`install`), so every parser, in the
CLI, the daemon's child or a test, sees the same table.

Throughput figures are datasheet values for dense math (no structured sparsity), in TFLOPS:
FP16/BF16 on tensor cores, and FP32 on the vector units.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

from collectors.gpus.forms import FormFactor, FormRule, own_rules, parse_rules, which
from collectors.gpus.schema import (
    GpuModel,
    GpuVariant,
    InstanceGpu,
    Overrides,
    TypeOverride,
    parse_bundled_type,
    parse_model,
    parse_overrides,
)
from collectors.gpus.values import number, table

__all__ = [
    "GPU_MODELS",
    "GPU_NAMES",
    "INSTANCE_GPUS",
    "WHOLE_GPU_GIB",
    "FormFactor",
    "FormRule",
    "GpuModel",
    "GpuVariant",
    "InstanceGpu",
    "Overrides",
    "Resolved",
    "TypeOverride",
    "active",
    "bundled",
    "bundled_models",
    "canonical_model",
    "contradiction",
    "form_factor",
    "form_factor_rules",
    "install",
    "instance_types",
    "known",
    "lookup",
    "model",
    "models",
    "only_memory",
    "parse_overrides",
    "resolve",
    "stored_model",
]

# Where a type's GPU facts came from, for the run summary and `gpu-tracker gpus`.
Source = Literal["config", "api", "table"]


@cache
def _load() -> tuple[
    dict[str, GpuModel],
    dict[str, dict[str, str]],
    dict[str, dict[str, InstanceGpu]],
    dict[str, dict[str, float]],
    tuple[FormRule, ...],
]:
    """The bundled table, parsed once, on first use: a command that names no GPU (`sql`) never
    pays for it (docs/performance.md, "Start-up of a query")."""
    import tomllib
    from importlib import resources

    raw = tomllib.loads(resources.files(__package__).joinpath("table.toml").read_text("utf-8"))
    models = {
        name: parse_model(name, entry, f"models.{name}.")
        for name, entry in table(raw.get("models", {}), "models").items()
    }
    names = {p: dict(table(n, f"names.{p}")) for p, n in raw.get("names", {}).items()}
    types = {
        provider: {
            itype: parse_bundled_type(entry, f'instance_types.{provider}."{itype}".')
            for itype, entry in table(entries, f"instance_types.{provider}").items()
        }
        for provider, entries in raw.get("instance_types", {}).items()
    }
    whole = {
        provider: {
            m: number(v, f"whole_gpu_gib.{provider}.{m}", (0.1, 10_000.0)) for m, v in t.items()
        }
        for provider, t in raw.get("whole_gpu_gib", {}).items()
    }
    return models, names, types, whole, parse_rules(raw.get("form_factors", {}))


# The bundled table, as shipped (read-only by convention: the user's entries are `Overrides`).
# Declared, not bound: the module's `__getattr__` loads them on first use.
GPU_MODELS: dict[str, GpuModel]
GPU_NAMES: dict[str, dict[str, str]]
INSTANCE_GPUS: dict[str, dict[str, InstanceGpu]]
WHOLE_GPU_GIB: dict[str, dict[str, float]]
_TABLE = ("GPU_MODELS", "GPU_NAMES", "INSTANCE_GPUS", "WHOLE_GPU_GIB")


def __getattr__(name: str) -> Any:
    if name in _TABLE:
        return _load()[_TABLE.index(name)]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def bundled_models() -> dict[str, GpuModel]:
    """The bundled GPU models, without the user's entries."""
    return _load()[0]


def _spellings() -> dict[str, dict[str, str]]:
    """Each provider's own names for GPU models, to the canonical model."""
    return _load()[1]


_active = Overrides()


def install(overrides: Overrides | None) -> None:
    """Make `overrides` (the user's [gpus] tables) the ones every lookup in this process sees."""
    global _active
    _active = overrides or Overrides()


def active() -> Overrides:
    """The user's entries in force in this process."""
    return _active


def models() -> dict[str, GpuModel]:
    """Every GPU model: the bundled ones with the user's corrections, and the user's own."""
    return {**bundled_models(), **_active.models}


def model(name: str | None) -> GpuModel | None:
    """A GPU model by its canonical name, with the user's corrections; None if nobody knows it."""
    if name is None:
        return None
    return _active.models.get(name) or bundled_models().get(name)


def _override(provider: str, instance_type: str) -> TypeOverride | None:
    """The user's entry for the type where it says more than its board (which no parser reads:
    the store's views do, docs/gpus.md)."""
    entry = _active.instance_types.get(instance_type)
    if entry is None or entry.provider not in (None, provider):
        return None
    return None if entry == TypeOverride(entry.provider, form_factor=entry.form_factor) else entry


@dataclass(frozen=True, slots=True)
class Resolved:
    gpu: InstanceGpu
    source: Source


def resolve(provider: str, instance_type: str, said: InstanceGpu | None = None) -> Resolved | None:
    """The GPUs of an instance type and where the facts came from: the user's entry over what
    the API `said`, which is taken over the bundled table; None when no one gives a GPU count
    and memory."""
    base, source = (
        (said, "api")
        if said is not None
        else (bundled_types().get(provider, {}).get(instance_type), "table")
    )
    entry = _override(provider, instance_type)
    if entry is not None:
        built = entry.over(base)
        return None if built is None else Resolved(built, "config")
    return None if base is None else Resolved(base, source)  # type: ignore[arg-type]


def lookup(provider: str, instance_type: str) -> InstanceGpu | None:
    """The GPUs of a provider's instance type from the table (with the user's entries), or None
    when neither knows it."""
    found = resolve(provider, instance_type)
    return None if found is None else found.gpu


def instance_types(provider: str) -> tuple[str, ...]:
    """Every instance type of a provider that the table (or a user's entry for that provider)
    knows, in a stable order."""
    own = {
        name
        for name, entry in _active.instance_types.items()
        if entry.provider == provider and lookup(provider, name) is not None
    }
    return tuple(sorted(set(bundled_types().get(provider, {})) | own))


def contradiction(
    provider: str, instance_type: str, said: InstanceGpu, unit: str = "GiB"
) -> str | None:
    """What the API's GPU facts (model, count, per-GPU memory) contradict in the table's entry
    for the type, in words; None when they agree or the table has no entry."""
    known = lookup(provider, instance_type)
    facts = (said.gpu_model, said.gpu_count, said.gpu_memory_gib)
    if known is None or (known.gpu_model, known.gpu_count, known.gpu_memory_gib) == facts:
        return None
    return (
        f"the API says {said.gpu_count:g} x {said.gpu_model} {said.gpu_memory_gib:g} {unit}, "
        f"the GPU table {known.gpu_count:g} x {known.gpu_model} {known.gpu_memory_gib:g} {unit}"
    )


def canonical_model(provider: str, name: Any) -> str | None:
    """The canonical model for a provider's own GPU name ("Tesla V100", "nvidia_h100"): the
    provider's spellings first, then any model's name or alias (the user's included); None
    when nobody knows it (also for a name that is not a string: an answer may carry anything)."""
    if not isinstance(name, str):
        return None
    found = _spellings().get(provider, {}).get(name)
    if found is not None:
        return found
    for known in models().values():
        if name == known.name or name in known.aliases:
            return known.name
    return None


def known(name: str | None) -> bool:
    """Whether `name` is a model the GPU table or the user's [gpus.models] knows: an offer stored
    under a provider's own GPU name (`stored_model`) is not, until someone adds it."""
    return model(name) is not None


def stored_model(provider: str, name: Any) -> str | None:
    """The `gpu_model` to store for a provider's own GPU name: the canonical model where anyone
    knows it, else the name as the API gives it, trimmed, so a GPU shows up the day a cloud
    sells it (docs/gpus.md); None only for an empty name or one that is not a string."""
    found = canonical_model(provider, name)
    if found is not None or not isinstance(name, str):
        return found
    return " ".join(name.split())[:60] or None


def only_memory(name: str | None) -> float | None:
    """The per-GPU memory of model `name` where it is sold in one variant only (what a provider
    that does not say the memory must mean); None otherwise or for a model nobody knows."""
    found = model(name)
    return found.memory_gib[0] if found is not None and len(found.memory_gib) == 1 else None


def tflops(
    name: str | None, memory_gib: float | None = None, form_factor: str | None = None
) -> tuple[float | None, float | None]:
    """(FP16, FP32) TFLOPS of one GPU of model `name` with `memory_gib` on a board of
    `form_factor` (GpuModel.tflops); (None, None) for a model nobody knows."""
    found = model(name)
    return (None, None) if found is None else found.tflops(memory_gib, form_factor)


def form_factor_rules(overrides: Overrides | None = None) -> tuple[FormRule, ...]:
    """The rules that read an instance type's form factor from its name, in the order they apply
    (collectors.gpus.forms): the user's entries that give one (`overrides`, default the ones in
    force) before the table's."""
    entries = (overrides if overrides is not None else _active).instance_types
    return (*own_rules(entries), *_load()[4])


def form_factor(provider: str, instance_type: str) -> str | None:
    """The form factor (SXM, PCIe, NVL) a provider's instance type has by its name; None when
    its name does not say (the model's lowest figures apply)."""
    return which(form_factor_rules(), provider, instance_type)


def bundled_types() -> Mapping[str, Mapping[str, InstanceGpu]]:
    """The bundled per-type table, every provider's."""
    return _load()[2]


def bundled(provider: str, instance_type: str) -> InstanceGpu | None:
    """The bundled table's own entry for a provider's type, without the user's: what a parser
    fills the gaps of an answer from, or checks it against."""
    return bundled_types().get(provider, {}).get(instance_type)
