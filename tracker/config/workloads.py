"""`[workloads.<name>]`: named units of real work, and how many of them one GPU-hour of each GPU
model (or memory variant) does: the throughput `latest --workload` and `tco --workload` price
work with (docs/decide.md, "Cost per unit of work").

The bundled reference workloads (`collectors/gpus/workloads.toml`: MLPerf results, each number
with its source) are read when first needed; a user's table of the same name replaces one.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from collectors.common import ConfigError, shown
from tracker.config.keys import TEXT, Key, Kind, Table, refuse

if TYPE_CHECKING:
    from storage.reads.gpu_filter import GpuChoice, GpuNames

# A name typed after --workload and in a query string: no spaces, no quotes.
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
MAX_PER_GPU_HOUR = 1e12


@dataclass(frozen=True)
class Rate:
    """Units of work per GPU-hour of one GPU: a model (`memory_gib` None) or one variant."""

    gpu: str  # as written: "A100 80GB"
    choice: GpuChoice
    per_gpu_hour: float


@dataclass(frozen=True)
class Workload:
    """A unit of work and the throughput of each GPU named; `source` says where it is from."""

    name: str
    unit: str
    rates: tuple[Rate, ...]
    source: str | None = None

    def per_gpu_hour(self, model: str | None, memory_gib: float | None) -> float | None:
        """The throughput of an offer of `model` with `memory_gib` per GPU: its variant's,
        else its model's, else None (no throughput known: no guess)."""
        mine = self.of_model(model)
        exact = [r for r in mine if r.choice.memory_gib is not None]
        for rate in [*exact, *(r for r in mine if r.choice.memory_gib is None)]:
            if rate.choice.memory_gib in (None, memory_gib):
                return rate.per_gpu_hour
        return None

    def of_model(self, model: str | None) -> list[Rate]:
        """The rates given for `model` (any case), its variants' included."""
        lower = (model or "").lower()
        return [r for r in self.rates if r.choice.model.lower() == lower]

    def by_gpu(self) -> list[tuple[GpuChoice, float]]:
        """(GPU, throughput), variants before models: the order a lookup tries them in."""
        ordered = sorted(self.rates, key=lambda r: r.choice.memory_gib is None)
        return [(r.choice, r.per_gpu_hour) for r in ordered]

    def gpus(self) -> str:
        """The GPUs it has a throughput for, as written: `A100 80GB, H100 80GB, H200`."""
        return ", ".join(r.gpu for r in self.rates) or "none"


Workloads = Mapping[str, Workload]


def _rates(value: Any, key: str) -> dict[str, float]:
    """A table of GPU names to positive numbers (which GPUs they name is checked with the GPU
    table, in `parse_workloads`)."""
    if not isinstance(value, Mapping) or not value:
        raise refuse(
            key, f'expected a table like {{ A100 = 2.6, "A100 80GB" = 2.7 }}, got {shown(value)}'
        )
    for gpu, number in value.items():
        numeric = isinstance(number, int | float) and not isinstance(number, bool)
        if not numeric or not math.isfinite(number) or not 0 < number <= MAX_PER_GPU_HOUR:
            raise refuse(
                f'{key}."{gpu}"',
                f"expected a number above 0 (units per GPU-hour), got {shown(number)}",
            )
    return {str(gpu): float(number) for gpu, number in value.items()}


WORKLOAD = Table(
    "workloads.<name>",
    (
        Key("unit", TEXT, None, "what one unit of work is (an epoch, 1M tokens, ...)"),
        Key(
            "per_gpu_hour",
            Kind(
                "a table of GPU model or variant names to numbers above 0",
                _rates,
                {
                    "type": "object",
                    "additionalProperties": {"type": "number", "exclusiveMinimum": 0},
                },
            ),
            None,
            'units of work one GPU-hour does, per GPU (`"A100 80GB"` wins over `A100`)',
        ),
        Key("source", TEXT, None, "where the throughputs come from"),
    ),
)


def parse_workloads(raw: Mapping[str, Any], names: GpuNames) -> dict[str, Workload]:
    """[workloads]: the bundled workloads, each of the user's replacing the one of its name.
    `names`: the GPU names in force (the user's [gpus.models] included)."""
    found = dict(bundled())
    for name, entry in raw.items():
        key = f"workloads.{name}"
        if not _NAME.match(name):
            raise ConfigError(
                f"{key}: a workload's name is letters, digits, . _ - (like bert-train)"
            )
        if not isinstance(entry, Mapping):
            raise ConfigError(
                f'{key}: expected a table like {{ unit = "epoch", per_gpu_hour = ... }}'
            )
        got = WORKLOAD.read(entry, key + ".")
        for needed in ("unit", "per_gpu_hour"):
            if got[needed] is None:
                raise ConfigError(
                    f"{key}.{needed}: missing; a workload needs a unit and a throughput"
                )
        rates = _choices(got["per_gpu_hour"], names, f"{key}.per_gpu_hour")
        for same in [k for k in found if k.lower() == name.lower()]:  # names match in any case
            del found[same]
        found[name] = Workload(name, got["unit"], rates, got["source"])
    return found


def _choices(rates: Mapping[str, float], names: GpuNames, key: str) -> tuple[Rate, ...]:
    """Each GPU name as the GPU table means it; an unknown one, or two names of one GPU, refused."""
    chosen: dict[GpuChoice, str] = {}
    for gpu in rates:
        choice = names.parse(gpu)
        if not names.knows(choice):
            accepted = ", ".join(names.accepted)
            raise ConfigError(f'{key}."{gpu}": unknown GPU model or variant (accepted: {accepted})')
        if choice in chosen:
            raise ConfigError(f'{key}."{gpu}": names the same GPU as "{chosen[choice]}"')
        chosen[choice] = gpu
    return tuple(Rate(gpu, choice, rates[gpu]) for choice, gpu in chosen.items())


@cache
def bundled() -> dict[str, Workload]:
    """The reference workloads of the bundled data file, checked like a user's (their extra
    keys: `benchmark`, the source, and `results`, the published result of each number)."""
    import tomllib
    from importlib import resources

    from collectors.gpus import bundled_models
    from storage.reads.gpu_filter import names_of

    text = resources.files("collectors.gpus").joinpath("workloads.toml").read_text("utf-8")
    # The bundled table's names, as `tracker.config.gpu_names` gives them (that module imports
    # this one).
    models = bundled_models().values()
    names = names_of(
        (m.name, m.aliases, m.memory_gib, {v.memory_gib: v.name for v in m.variants})
        for m in models
    )
    found = {}
    for name, entry in tomllib.loads(text).items():
        rates = _choices(_rates(entry["per_gpu_hour"], name), names, name)
        found[name] = Workload(name, entry["unit"], rates, entry["benchmark"])
    return found


def find(workloads: Workloads, name: str) -> Workload:
    """The workload called `name` (any case); ValueError naming the accepted ones."""
    for known, workload in workloads.items():
        if known.lower() == name.strip().lower():
            return workload
    raise ValueError(
        f"--workload {name}: unknown workload (accepted: {', '.join(sorted(workloads))})"
    )
