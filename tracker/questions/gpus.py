"""The rows `gpu-tracker gpus` prints: the GPU models and per-type entries the tracker knows (the
bundled table with the user's [gpus] entries laid over it), and the types the store has seen
without facts, each with the config.toml entry that would give them.

The rows are plain dicts with JSON values, one shape for the table, CSV and JSON.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, Any

from collectors.gpus import (
    GPU_MODELS,
    INSTANCE_GPUS,
    GpuModel,
    InstanceGpu,
    Overrides,
    TypeOverride,
)
from storage.reads.gpu_filter import GpuChoice
from storage.reads.gpu_types import UnknownType

if TYPE_CHECKING:
    from tracker.config import Config

MODEL_COLUMNS = (
    "model", "variant", "form_factor", "vendor", "memory_gib", "fp16_tflops", "fp32_tflops",
    "source", "aliases", "origin",
)  # fmt: skip
TYPE_COLUMNS = (
    "provider", "instance_type", "gpu_model", "gpu_count", "gpu_memory_gib", "vcpus",
    "memory_gib", "origin",
)  # fmt: skip
UNKNOWN_COLUMNS = (
    "provider", "instance_type", "reason", "stored", "gpu_model", "gpu_count", "gpu_memory_gib",
    "regions", "first_seen", "last_seen", "configured", "snippet",
)  # fmt: skip


def answer(
    config: Config, *, unknown: bool = False, types: bool = False, provider: str | None = None
) -> list[dict[str, Any]]:
    """What `gpus` answers: the types the store has seen without facts (`unknown`: the only
    read of the store, a StoreError when it fails), else the per-type entries (`types`, or a
    `provider` named), else the models."""
    if unknown:
        from storage.reads.gpu_types import unknown_types

        known = sorted({*GPU_MODELS, *config.gpus.models})
        found = unknown_types(
            config.store_path, provider, known=known, timeout_s=config.store.query_timeout_s
        )
        return unknown_rows(found, config.gpus)
    if types or provider:
        return type_rows(config.gpus, provider)
    return model_rows(config.gpus)


# The placeholder the user replaces; a bare one (a number to give) is not TOML until then, so a
# config with an entry left unfilled fails to load, naming the line.
TO_FILL = "?"


def model_rows(overrides: Overrides) -> list[dict[str, Any]]:
    """One row per GPU model (the figures where nothing says the board: the lowest), then one
    per memory variant with figures of its own and one per board (form factor) with its own."""
    rows = []
    for name, found in {**GPU_MODELS, **overrides.models}.items():
        origin = "config" if name in overrides.models else "table"
        rows.append(_model_row(found, origin))
        for v in found.variants:
            fp16, fp32 = found.tflops(v.memory_gib)
            rows.append(
                {
                    **_model_row(found, origin),
                    "variant": v.name or GpuChoice(name, v.memory_gib).label,
                    "memory_gib": [v.memory_gib],
                    "fp16_tflops": fp16,
                    "fp32_tflops": fp32,
                    "source": v.source or found.source,
                }
            )
        for f in found.form_factors:
            fp16, fp32 = found.tflops(None, f.name)
            rows.append(
                {
                    **_model_row(found, origin),
                    "form_factor": f.name,
                    "fp16_tflops": fp16,
                    "fp32_tflops": fp32,
                    "source": f.source or found.source,
                }
            )
    return rows


def _model_row(found: GpuModel, origin: str) -> dict[str, Any]:
    return {
        "model": found.name,
        "variant": None,
        "form_factor": None,
        "vendor": found.vendor,
        "memory_gib": list(found.memory_gib),
        "fp16_tflops": found.unstated()[0],
        "fp32_tflops": found.unstated()[1],
        "source": found.source,
        "aliases": list(found.aliases),
        "origin": origin,
    }


def type_rows(overrides: Overrides, provider: str | None = None) -> list[dict[str, Any]]:
    """The per-instance-type entries of `provider` (None: every provider's): the bundled table's
    with the user's entries over them, and the user's own (provider null when theirs applies to
    a type of that name at any provider)."""
    rows = []
    matched = set()
    for owner, types in sorted(INSTANCE_GPUS.items()):
        if provider not in (None, owner):
            continue
        for name, base in sorted(types.items()):
            entry = overrides.instance_types.get(name)
            if entry is not None and entry.provider in (None, owner):
                matched.add(name)
                rows.append(_type_row(owner, name, entry.over(base) or base, "config"))
            else:
                rows.append(_type_row(owner, name, base, "table"))
    for name, entry in sorted(overrides.instance_types.items()):
        elsewhere = provider is not None and entry.provider not in (None, provider)
        if name in matched or elsewhere:
            continue
        # An entry that gives only part of the facts shows what it gives (the API says the rest).
        rows.append(_type_row(entry.provider, name, entry, "config"))
    return rows


def _type_row(
    provider: str | None, name: str, gpu: InstanceGpu | TypeOverride, origin: str
) -> dict[str, Any]:
    return {
        "provider": provider,
        "instance_type": name,
        "gpu_model": gpu.gpu_model,
        "gpu_count": gpu.gpu_count,
        "gpu_memory_gib": gpu.gpu_memory_gib,
        "vcpus": gpu.vcpus,
        "memory_gib": gpu.memory_gib,
        "origin": origin,
    }


def unknown_rows(found: list[UnknownType], overrides: Overrides) -> list[dict[str, Any]]:
    """One row per type seen without facts, with the entry to add and whether the config has
    one already (it applies from the next collection)."""
    return [
        {
            "provider": t.provider,
            "instance_type": t.instance_type,
            "reason": t.reason,
            "stored": t.stored,
            "gpu_model": t.gpu_model,
            "gpu_count": t.gpu_count,
            "gpu_memory_gib": t.gpu_memory_gib,
            "regions": list(t.regions),
            "first_seen": t.first_seen,
            "last_seen": t.last_seen,
            "configured": configured(t, overrides),
            "snippet": snippet(t),
        }
        for t in found
    ]


def configured(found: UnknownType, overrides: Overrides) -> bool:
    """Whether the user's [gpus] entry for the type, over what the store knows of it, gives a
    model, a GPU count and a per-GPU memory; for a GPU stored under the provider's own name,
    whether [gpus.models] has that model now."""
    if found.gpu_model is not None:
        return found.gpu_model in overrides.models
    entry = overrides.instance_types.get(found.instance_type)
    if entry is None or entry.provider not in (None, found.provider):
        return False
    known = None
    if found.gpu_count and found.gpu_memory_gib:
        known = InstanceGpu(None, found.gpu_count, found.gpu_memory_gib)
    built = entry.over(known)
    return built is not None and built.gpu_model is not None


def snippet(found: UnknownType) -> str:
    """The config.toml entry for the type: what the store knows filled in, a ? for the rest. A
    GPU stored under the provider's own name gets a model entry (its figures from a datasheet)."""
    if found.gpu_model is not None:
        memory = TO_FILL if found.gpu_memory_gib is None else toml_number(found.gpu_memory_gib)
        return "\n".join(
            [
                f"[gpus.models.{toml_string(found.gpu_model)}]",
                f"fp16_tflops = {TO_FILL}  # dense FP16/BF16 of ONE GPU, from its datasheet",
                f"memory_gib = [{memory}]",
                f'source = "{TO_FILL}"  # the datasheet',
            ]
        )
    count = TO_FILL if found.gpu_count is None else toml_number(found.gpu_count, share=True)
    memory = TO_FILL if found.gpu_memory_gib is None else toml_number(found.gpu_memory_gib)
    return "\n".join(
        [
            f"[gpus.instance_types.{toml_string(found.instance_type)}]",
            f"provider = {toml_string(found.provider)}",
            f'gpu_model = "{TO_FILL}"  # one `gpu-tracker gpus` lists, or add [gpus.models.<name>]',
            f"gpu_count = {count}",
            f"gpu_memory_gib = {memory}  # of ONE GPU",
        ]
    )


def toml_string(value: str) -> str:
    """`value` as a TOML basic string: quotes, backslashes and control characters escaped."""
    out = []
    for ch in value:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def toml_number(value: float, *, share: bool = False) -> str:
    """A number as the config takes it: 8, 0.5, or (`share`: a GPU count) a share like "1/6"
    that no decimal writes exactly."""
    if value == int(value):
        return str(int(value))
    part = Fraction(value).limit_denominator(1000)
    if share and float(part) == value and len(repr(value)) > 8:
        return f'"{part.numerator}/{part.denominator}"'
    return repr(value)
