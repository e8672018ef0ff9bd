"""The GPU table's entries read from TOML: the bundled data file and the user's [gpus] tables
in config.toml go through the same checks, so an entry means the same wherever it is written.

Every error is a ConfigError naming the key (`gpus.instance_types."X".gpu_count`), whether the
key is in the user's config or (a packaging bug) in the bundled file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from collectors.common import ConfigError, no_unknown, shown, text
from collectors.gpus.checks import clash, quoted, sold_with
from collectors.gpus.forms import FormFactor, form_factor, lowest, parse_forms
from collectors.gpus.values import model_name, number, table

_VENDORS = ("nvidia", "amd", "intel", "google", "aws", "huawei", "other")
# No GPU has a tenth of a TFLOPS or a million; no instance a thousand GPUs or 10 TB per GPU.
TFLOPS_RANGE = (0.1, 1_000_000.0)
COUNT_RANGE = (0.001, 1000.0)
MEMORY_RANGE = (0.1, 10_000.0)  # GiB of one GPU
HOST_RANGE = (0.1, 1_000_000.0)  # vCPUs, or GiB of host memory


@dataclass(frozen=True, slots=True)
class GpuVariant:
    """A memory variant of a model whose throughput differs from the model's (H100 NVL)."""

    memory_gib: float
    name: str | None = None
    fp16_tflops: float | None = None
    fp32_tflops: float | None = None
    source: str | None = None


@dataclass(frozen=True, slots=True)
class GpuModel:
    """One GPU model: dense FP16/BF16 tensor and FP32 vector TFLOPS of ONE GPU."""

    name: str
    vendor: str
    fp16_tflops: float | None
    fp32_tflops: float | None
    source: str | None = None
    memory_gib: tuple[float, ...] = ()  # the variants sold, GiB of one GPU
    aliases: tuple[str, ...] = ()  # other spellings any provider's answer may use
    variants: tuple[GpuVariant, ...] = ()
    form_factors: tuple[FormFactor, ...] = ()  # boards with figures of their own (H100 PCIe)

    def variant(self, memory_gib: float | None) -> GpuVariant | None:
        """The variant of this memory with its own figures, or None (the model's apply)."""
        return next((v for v in self.variants if v.memory_gib == memory_gib), None)

    def tflops(
        self, memory_gib: float | None = None, form_factor: str | None = None
    ) -> tuple[float | None, float | None]:
        """(FP16, FP32) TFLOPS of one GPU of this model with `memory_gib` of memory on a board of
        `form_factor`: a memory variant's own figures (the memory says the board: H100 NVL 94),
        else the board's, else the lowest of the model's (never an overstatement)."""
        f = next((f for f in self.form_factors if f.name == form_factor), None)
        low = self.unstated()
        fp16, fp32 = low if f is None else (f.fp16_tflops, f.fp32_tflops)
        v = self.variant(memory_gib)
        if v is not None:
            fp16, fp32 = v.fp16_tflops or fp16, v.fp32_tflops or fp32
        return (fp16 if fp16 is not None else low[0], fp32 if fp32 is not None else low[1])

    def unstated(self) -> tuple[float | None, float | None]:
        """(FP16, FP32) where nothing says the board: the lowest of the model's figures."""
        return lowest((self.fp16_tflops, self.fp32_tflops), self.form_factors)


@dataclass(frozen=True, slots=True)
class InstanceGpu:
    """The GPUs of one instance type, with the host size where the price data does not say it."""

    gpu_model: str | None  # None only for an offer whose GPU model nobody knows
    gpu_count: float  # fractional for a share of one GPU (Azure NV A10 v5)
    gpu_memory_gib: float  # of ONE GPU
    vcpus: float | None = None
    memory_gib: float | None = None


@dataclass(frozen=True, slots=True)
class TypeOverride:
    """A user's entry for one instance type: only the fields given replace what the API or the
    bundled table says; `provider` limits it to one provider's type of that name."""

    provider: str | None = None
    gpu_model: str | None = None
    gpu_count: float | None = None
    gpu_memory_gib: float | None = None
    vcpus: float | None = None
    memory_gib: float | None = None
    form_factor: str | None = None  # the board its GPUs are (SXM, PCIe, NVL): docs/gpus.md

    def over(self, base: InstanceGpu | None) -> InstanceGpu | None:
        """`base` with this entry's fields in place of its own; None when neither gives a GPU
        count and a per-GPU memory (no price can be put per GPU without them)."""

        def pick(own: Any, name: str) -> Any:
            return own if own is not None else (getattr(base, name) if base else None)

        count, memory = (
            pick(self.gpu_count, "gpu_count"),
            pick(self.gpu_memory_gib, "gpu_memory_gib"),
        )
        if not count or not memory:
            return None
        return InstanceGpu(
            pick(self.gpu_model, "gpu_model"),
            count,
            memory,
            pick(self.vcpus, "vcpus"),
            pick(self.memory_gib, "memory_gib"),
        )


@dataclass(frozen=True)
class Overrides:
    """The user's [gpus] tables: instance types by name, models by canonical name."""

    instance_types: Mapping[str, TypeOverride] = field(default_factory=dict)
    models: Mapping[str, GpuModel] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.instance_types or self.models)


_MODEL_KEYS = {"vendor", "fp16_tflops", "fp32_tflops", "source", "memory_gib", "aliases",
               "variants", "form_factors"}  # fmt: skip
_VARIANT_KEYS = {"name", "fp16_tflops", "fp32_tflops", "source"}
_TYPE_KEYS = {"provider", "gpu_model", "gpu_count", "gpu_memory_gib", "vcpus", "memory_gib",
              "form_factor"}  # fmt: skip
# What [gpus] entries may hold, for the config's JSON Schema (tracker.config.schema).
OVERRIDE_KEYS = {"models": _MODEL_KEYS, "variants": _VARIANT_KEYS, "instance_types": _TYPE_KEYS}


def _optional(raw: Mapping[str, Any], name: str, prefix: str, bounds: tuple[float, float],
              **how: bool) -> float | None:  # fmt: skip
    return None if name not in raw else number(raw[name], prefix + name, bounds, **how)


def _source(raw: Mapping[str, Any], prefix: str) -> str | None:
    return None if "source" not in raw else text(raw["source"], prefix + "source")


def parse_model(name: str, raw: Any, prefix: str, *, base: GpuModel | None = None) -> GpuModel:
    """One [models.<name>] entry. With `base` (the bundled entry a user corrects), the fields
    not given keep the base's values, a variant's too."""
    model_name(name, prefix.rstrip("."))
    raw = table(raw, prefix.rstrip("."))
    no_unknown(raw, _MODEL_KEYS, prefix)
    vendor = raw.get("vendor", base.vendor if base else "other")
    if vendor not in _VENDORS:
        raise ConfigError(
            f"{prefix}vendor: expected one of {', '.join(_VENDORS)}, got {shown(vendor)}"
        )
    fp16 = _optional(raw, "fp16_tflops", prefix, TFLOPS_RANGE)
    fp32 = _optional(raw, "fp32_tflops", prefix, TFLOPS_RANGE)
    memory: tuple[float, ...] = base.memory_gib if base else ()
    if "memory_gib" in raw:
        values = raw["memory_gib"]
        if not isinstance(values, list) or not values:
            raise ConfigError(f"{prefix}memory_gib: expected a list of GiB, got {shown(values)}")
        memory = tuple(
            sorted(
                {number(v, f"{prefix}memory_gib[{i}]", MEMORY_RANGE) for i, v in enumerate(values)}
            )
        )
    aliases: tuple[str, ...] = base.aliases if base else ()
    if "aliases" in raw:
        values = raw["aliases"]
        if not isinstance(values, list):
            raise ConfigError(f"{prefix}aliases: expected a list of names, got {shown(values)}")
        aliases = tuple(text(v, f"{prefix}aliases[{i}]") for i, v in enumerate(values))
    variants = {v.memory_gib: v for v in (base.variants if base else ())}
    for gib, entry in table(raw.get("variants", {}), prefix + "variants").items():
        where = f'{prefix}variants."{gib}".'
        try:
            memory_gib = number(float(gib), where.rstrip("."), MEMORY_RANGE)
        except ValueError:
            raise ConfigError(
                f'{where.rstrip(".")}: a variant is keyed by its GiB, like "94"'
            ) from None
        entry = table(entry, where.rstrip("."))
        no_unknown(entry, _VARIANT_KEYS, where)
        old = variants.get(memory_gib, GpuVariant(memory_gib))
        variants[memory_gib] = GpuVariant(
            memory_gib,
            text(entry["name"], where + "name") if "name" in entry else old.name,
            _optional(entry, "fp16_tflops", where, TFLOPS_RANGE) or old.fp16_tflops,
            _optional(entry, "fp32_tflops", where, TFLOPS_RANGE) or old.fp32_tflops,
            _source(entry, where) or old.source,
        )
    return GpuModel(
        name,
        str(vendor),
        fp16 if "fp16_tflops" in raw or base is None else base.fp16_tflops,
        fp32 if "fp32_tflops" in raw or base is None else base.fp32_tflops,
        _source(raw, prefix) or (base.source if base else None),
        memory,
        aliases,
        tuple(sorted(variants.values(), key=lambda v: v.memory_gib)),
        parse_forms(
            raw.get("form_factors", {}), prefix + "form_factors.", base.form_factors if base else ()
        ),
    )


def parse_type(raw: Any, prefix: str, providers: Mapping[str, Any] | None = None) -> TypeOverride:
    """One instance type entry of a user's [gpus.instance_types."<type>"]."""
    raw = table(raw, prefix.rstrip("."))
    no_unknown(raw, _TYPE_KEYS, prefix)
    provider = None
    if "provider" in raw:
        provider = text(raw["provider"], prefix + "provider")
        if providers is not None and provider not in providers:
            raise ConfigError(
                f"{prefix}provider: unknown provider {shown(provider)}; known: "
                + ", ".join(sorted(providers))
            )
    entry = TypeOverride(
        provider,
        model_name(raw["gpu_model"], prefix + "gpu_model") if "gpu_model" in raw else None,
        _optional(raw, "gpu_count", prefix, COUNT_RANGE, fraction=True),
        _optional(raw, "gpu_memory_gib", prefix, MEMORY_RANGE),
        _optional(raw, "vcpus", prefix, HOST_RANGE),
        _optional(raw, "memory_gib", prefix, HOST_RANGE),
        form_factor(raw["form_factor"], prefix + "form_factor") if "form_factor" in raw else None,
    )
    if entry == TypeOverride(provider):
        raise ConfigError(
            f"{prefix.rstrip('.')}: says nothing; give at least one of "
            + ", ".join(sorted(_TYPE_KEYS - {"provider"}))
        )
    return entry


def parse_bundled_type(raw: Any, prefix: str) -> InstanceGpu:
    """One entry of the bundled file's [instance_types.<provider>]: every GPU field given."""
    entry = parse_type(raw, prefix)
    if entry.gpu_model is None or entry.gpu_count is None or entry.gpu_memory_gib is None:
        raise ConfigError(
            f"{prefix.rstrip('.')}: gpu_model, gpu_count and gpu_memory_gib are needed"
        )
    built = entry.over(None)
    assert built is not None
    return built


def parse_overrides(
    raw: Any, bundled: Mapping[str, GpuModel], providers: Mapping[str, Any], prefix: str = "gpus."
) -> Overrides:
    """A user's [gpus] table: `instance_types` and `models`, checked against the bundled models
    (an instance type may name a model the table lacks only if [gpus.models] adds it)."""
    raw = table(raw, prefix.rstrip("."))
    no_unknown(raw, {"instance_types", "models"}, prefix)
    models: dict[str, GpuModel] = {}
    for name, entry in table(raw.get("models", {}), prefix + "models").items():
        where = f"{prefix}models.{quoted(name)}."
        models[name] = parse_model(name, entry, where, base=bundled.get(name))
    known = set(bundled) | set(models)
    types: dict[str, TypeOverride] = {}
    for name, entry in table(raw.get("instance_types", {}), prefix + "instance_types").items():
        where = f'{prefix}instance_types."{name}".'
        text(name, where.rstrip("."))
        parsed = parse_type(entry, where, providers)
        if parsed.gpu_model is not None and parsed.gpu_model not in known:
            raise ConfigError(
                f"{where}gpu_model: unknown GPU model {shown(parsed.gpu_model)}; add "
                f"[gpus.models.{quoted(parsed.gpu_model)}] or use one of: "
                + ", ".join(sorted(known))
            )
        if (wrong := sold_with(parsed, {**bundled, **models})) is not None:
            raise ConfigError(f"{where}gpu_memory_gib: {wrong}")
        types[name] = parsed
    if (found := clash(bundled, models)) is not None:  # (model, ".key" or "", what is wrong)
        raise ConfigError(f"{prefix}models.{quoted(found[0])}{found[1]}: {found[2]}")
    return Overrides(types, models)
