"""The `index` rule kind's own settings: which index it watches (a GPU, a price kind, a
segment) and its condition: `below` or `above` a USD per GPU-hour value, or `move`, a share the
index moved by over `window` (docs/alerts.md, "Market index"). Checked here, each error naming
its key; `alerts.rules` takes the keys every kind shares."""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal

from collectors.common import ConfigError, parse_kind
from storage.reads.gpu_filter import GpuChoice, GpuNames, names_of
from storage.reads.index.read import KINDS, SEGMENTS

Condition = Literal["below", "above", "move"]
CONDITIONS: tuple[Condition, ...] = ("below", "above", "move")
_PRICE_MAX = 1_000_000  # USD per GPU-hour
_MOVE_MAX = 10  # a share: 10 is a move of 1,000%


@dataclass(frozen=True)
class IndexSettings:
    """The index a rule watches and when it fires."""

    gpu: GpuChoice
    price_kind: str
    segment: str
    condition: Condition
    value: Decimal  # USD per GPU-hour (below, above) or a share (move)


def index_settings(
    raw: Mapping[str, Any], k: str, gpu_models: Collection[str] | GpuNames
) -> IndexSettings:
    """The `index` keys of the rule table `raw` (its path `k`, ending in a dot)."""
    names = (
        gpu_models
        if isinstance(gpu_models, GpuNames)
        else names_of((m, (), (), {}) for m in gpu_models)
    )
    gpu = raw["gpu"]
    if not isinstance(gpu, str) or not gpu.strip():
        raise ConfigError(f"{k}gpu: expected a GPU model name, got {gpu!r}")
    choice = names.parse(gpu)
    if choice.model not in names.memories or not names.knows(choice):
        raise ConfigError(f"{k}gpu: unknown GPU {gpu!r} (known: {', '.join(names.accepted)})")
    try:
        kind = str(parse_kind(raw["price_kind"], f"{k}price_kind"))
    except ConfigError:
        kind = ""
    if kind not in KINDS:
        raise ConfigError(
            f"{k}price_kind: the index is of on_demand or spot prices, got {raw['price_kind']!r}"
        )
    segment = raw.get("segment", "all")
    if segment not in SEGMENTS:
        raise ConfigError(f"{k}segment: expected one of {', '.join(SEGMENTS)}, got {segment!r}")
    given = [name for name in CONDITIONS if name in raw]
    if len(given) != 1:
        raise ConfigError(f"{k[:-1]}: give one of below, above or move (got {given or 'none'})")
    condition = given[0]
    if (condition == "move") != ("window" in raw):
        raise ConfigError(f"{k}window: a window goes with move, and move with a window")
    bound = _MOVE_MAX if condition == "move" else _PRICE_MAX
    return IndexSettings(choice, kind, segment, condition, _positive(raw, condition, k, bound))


def _positive(raw: Mapping[str, Any], name: str, k: str, bound: float) -> Decimal:
    value = raw[name]
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if not number or not math.isfinite(value) or not 0 < value <= bound:
        unit = "a share (0.1 is 10%)" if name == "move" else "USD per GPU-hour"
        raise ConfigError(f"{k}{name}: expected {unit} above 0 and at most {bound}, got {value!r}")
    return Decimal(str(value))  # the TOML float 2.35 is meant as 2.35
