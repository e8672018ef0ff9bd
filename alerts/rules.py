"""Alert rules: what each `[[alerts.rules]]` table means, validated with errors naming the key.

The TOML is already parsed (by `tracker`); this module turns one rule table into a `Rule`, or
raises ConfigError naming the key path (`alerts.rules[1].threshold`). Which keys a kind takes
is data (`KINDS`), so a key that means nothing for a kind is an error, not silently ignored.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal

from alerts.market.rule import IndexSettings, index_settings
from collectors.common import (
    PAYMENT_OPTIONS,
    PRICE_KINDS,
    ConfigError,
    choice,
    parse_duration,
    text,
)
from storage.reads.gpu_filter import GpuChoice, GpuNames, names_of

Comparison = Literal["below", "above", "change", "low", "stale", "index"]

_CURRENCY = re.compile(r"^[A-Z]{3}$")
_FILTERS = ("gpu_model", "provider", "region", "instance_type")
_COMMON = {"name", "kind", "channels", "cooldown"}
COMMON_KEYS = frozenset(_COMMON)  # every kind's (the config's JSON Schema reads them)
DIRECTIONS = ("any", "down", "up")


@dataclass(frozen=True)
class KindSpec:
    """What a rule kind compares and which keys it takes."""

    comparison: Comparison
    unit: Literal["price", "percent", "hours", "none"]
    price_kind: str | None  # the one price kind it looks at, None: any (or the filter's)
    required: frozenset[str]
    optional: frozenset[str]


def _spec(comparison: Comparison, unit: Any, kind: str | None, req: str, opt: str) -> KindSpec:
    return KindSpec(comparison, unit, kind, frozenset(req.split()), frozenset(opt.split()))


_OFFER_KEYS = " ".join(_FILTERS) + " min_gpu_memory_gib per"
KINDS: dict[str, KindSpec] = {
    "spot_price_below": _spec(
        "below", "price", "spot", "threshold currency", f"{_OFFER_KEYS} hysteresis"
    ),
    "spot_discount_above": _spec(
        "above", "percent", "spot", "threshold", f"{_OFFER_KEYS} currency hysteresis"
    ),
    "reserved_discount_above": _spec(
        "above",
        "percent",
        "reserved",
        "threshold",
        f"{_OFFER_KEYS} currency hysteresis term_months payment_option",
    ),
    "reserved_discount_below": _spec(
        "below",
        "percent",
        "reserved",
        "threshold",
        f"{_OFFER_KEYS} currency hysteresis term_months payment_option",
    ),
    "price_change": _spec(
        "change",
        "percent",
        None,
        "threshold window",
        f"{_OFFER_KEYS} currency hysteresis price_kind term_months payment_option direction",
    ),
    "new_low": _spec(
        "low", "price", None, "window currency", f"{_OFFER_KEYS} price_kind term_months"
    ),
    "stale_data": _spec("stale", "hours", None, "window", "provider"),
    "index": _spec("index", "price", None, "gpu price_kind", "segment below above move window"),
}


# Bounds (docs/configuration.md): thresholds and hysteresis, and reserved terms in months.
_NUMBER_MAX = 1_000_000_000
_TERM_MAX = 120
_MEMORY_MAX = 10_000  # GiB of one GPU


@dataclass(frozen=True)
class Filters:
    """Offer filters; an empty tuple matches everything. `gpu_model`: models, or one memory
    variant of a model (`A100 80GB`, `H100 NVL`)."""

    gpu_model: tuple[GpuChoice, ...] = ()
    provider: tuple[str, ...] = ()
    region: tuple[str, ...] = ()
    instance_type: tuple[str, ...] = ()
    price_kind: tuple[str, ...] = ()
    term_months: tuple[int, ...] = ()
    payment_option: tuple[str, ...] = ()


@dataclass(frozen=True)
class Rule:
    name: str
    kind: str
    channels: tuple[str, ...]
    threshold: Decimal | None = None  # a price, a percent; None for new_low / stale_data
    currency: str | None = None
    per: Literal["gpu", "instance"] = "gpu"
    filters: Filters = Filters()
    window_s: int | None = None
    hysteresis: Decimal = Decimal(0)
    cooldown_s: int = 0
    direction: str = "any"
    min_gpu_memory_gib: float | None = None  # offers with at least this much per GPU
    index: IndexSettings | None = None  # kind index: the index watched (alerts.market.rule)

    @property
    def spec(self) -> KindSpec:
        return KINDS[self.kind]


def parse_rule(
    raw: Any,
    key: str,
    *,
    channels: Collection[str],
    default_channels: tuple[str, ...],
    gpu_models: Collection[str] | GpuNames,
    providers: Collection[str],
) -> Rule:
    """One `[[alerts.rules]]` table; `key` is its path (`alerts.rules[0]`). `gpu_models`: the
    names a `gpu_model` filter may use (the GPU table's, or plain model names)."""
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{key}: expected a table ([[alerts.rules]]), got {raw!r}")
    kind = choice(raw.get("kind"), tuple(KINDS), f"{key}.kind")
    spec = KINDS[kind]
    for name in raw:
        if name not in _COMMON | spec.required | spec.optional:
            allowed = ", ".join(sorted(_COMMON | spec.required | spec.optional))
            raise ConfigError(f"{key}.{name}: unknown key for kind {kind} (allowed: {allowed})")
    for name in sorted(spec.required):
        if name not in raw:
            raise ConfigError(f"{key}.{name}: required for kind {kind}")
    k = f"{key}."
    return Rule(
        name=text(raw.get("name"), k + "name"),
        kind=kind,
        channels=_channels(raw.get("channels"), k + "channels", channels, default_channels),
        threshold=_threshold(raw, spec, k + "threshold"),
        currency=_currency(raw.get("currency"), k + "currency"),
        per=choice(raw.get("per", "gpu"), ("gpu", "instance"), k + "per"),  # type: ignore[arg-type]
        filters=_filters(raw, k, gpu_models, providers),
        window_s=parse_duration(raw["window"], k + "window") if "window" in raw else None,
        hysteresis=_number(raw.get("hysteresis", 0), k + "hysteresis", minimum=0),
        cooldown_s=parse_duration(raw["cooldown"], k + "cooldown") if "cooldown" in raw else 0,
        direction=choice(raw.get("direction", "any"), DIRECTIONS, k + "direction"),
        min_gpu_memory_gib=_memory(raw, k + "min_gpu_memory_gib"),
        index=index_settings(raw, k, gpu_models) if kind == "index" else None,
    )


def _memory(raw: Mapping[str, Any], key: str) -> float | None:
    if "min_gpu_memory_gib" not in raw:
        return None
    value = raw["min_gpu_memory_gib"]
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if not number or not math.isfinite(value) or not 0 < value <= _MEMORY_MAX:
        raise ConfigError(
            f"{key}: expected GiB per GPU > 0 and at most {_MEMORY_MAX}, got {value!r}"
        )
    return float(value)


def _threshold(raw: Mapping[str, Any], spec: KindSpec, key: str) -> Decimal | None:
    if "threshold" not in raw:
        return None
    value = _number(raw["threshold"], key, minimum=0)
    if value == 0:
        raise ConfigError(f"{key}: expected a number > 0, got {raw['threshold']!r}")
    if spec.comparison in ("above", "below") and spec.unit == "percent" and value >= 100:
        raise ConfigError(f"{key}: a discount is a percent under 100, got {raw['threshold']!r}")
    return value


def _filters(
    raw: Mapping[str, Any],
    k: str,
    gpu_models: Collection[str] | GpuNames,
    providers: Collection[str],
) -> Filters:
    names = (
        gpu_models
        if isinstance(gpu_models, GpuNames)
        else names_of((m, (), (), {}) for m in gpu_models)
    )
    values = _strings(raw, "gpu_model", k, str)
    models = tuple(
        _known(m, names, f"{k}gpu_model" + (f"[{i}]" if isinstance(raw["gpu_model"], list) else ""))
        for i, m in enumerate(values)
    )
    for provider in _strings(raw, "provider", k, str):
        if provider not in providers:
            known = ", ".join(sorted(providers))
            raise ConfigError(f"{k}provider: unknown provider {provider!r} (known: {known})")
    for kind in _strings(raw, "price_kind", k, str):
        choice(kind, PRICE_KINDS, f"{k}price_kind")
    for option in _strings(raw, "payment_option", k, str):
        choice(option, PAYMENT_OPTIONS, f"{k}payment_option")
    terms = _strings(raw, "term_months", k, int)
    if any(not 0 < t <= _TERM_MAX for t in terms):
        raise ConfigError(
            f"{k}term_months: expected months > 0 and at most {_TERM_MAX}, "
            f"got {raw['term_months']!r}"
        )
    return Filters(
        gpu_model=models,
        provider=_strings(raw, "provider", k, str),
        region=_strings(raw, "region", k, str),
        instance_type=_strings(raw, "instance_type", k, str),
        price_kind=_strings(raw, "price_kind", k, str),
        term_months=terms,
        payment_option=_strings(raw, "payment_option", k, str),
    )


def _strings(raw: Mapping[str, Any], name: str, k: str, kind: type) -> tuple[Any, ...]:
    """A filter value: one value or a list of them."""
    value = raw.get(name, [])
    if name in raw and value == []:  # an empty filter would match everything: surely not meant
        raise ConfigError(f"{k}{name}: an empty list; leave the key out to match every {name}")
    values = value if isinstance(value, list) else [value]
    for i, item in enumerate(values):
        if not isinstance(item, kind) or isinstance(item, bool) or item == "":
            where = f"{k}{name}" + (f"[{i}]" if isinstance(value, list) else "")
            expected = "a non-empty string" if kind is str else "a whole number"
            raise ConfigError(f"{where}: expected {expected} (or a list of them), got {item!r}")
    return tuple(values)


def _known(text: str, names: GpuNames, key: str) -> GpuChoice:
    """The GPU `text` names: a model or a variant of one the GPU table knows."""
    found = names.parse(text)
    if found.model not in names.memories:
        known = ", ".join(sorted(names.memories))
        raise ConfigError(f"{key}: unknown GPU model {text!r} (known: {known})")
    if not names.knows(found):
        variants = [a for a in names.accepted if a.startswith(found.model + " ")]
        raise ConfigError(
            f"{key}: the GPU table knows no {text!r} (the {found.model}s it knows: "
            f"{', '.join([found.model, *variants])})"
        )
    return found


def _channels(
    value: Any, key: str, configured: Collection[str], default: tuple[str, ...]
) -> tuple[str, ...]:
    if value is None:
        return default
    if not isinstance(value, list) or not value:
        raise ConfigError(f"{key}: expected a non-empty list of channel names, got {value!r}")
    for i, name in enumerate(value):
        if name not in configured:
            raise ConfigError(
                f"{key}[{i}]: {name!r} is not a configured channel "
                f"(configured: {', '.join(sorted(configured))}; add [alerts.{name}] to use it)"
            )
    if len(set(value)) != len(value):
        raise ConfigError(f"{key}: a channel is listed twice: {value!r}")
    return tuple(value)


def _number(value: Any, key: str, *, minimum: int) -> Decimal:
    if not isinstance(value, int | float) or isinstance(value, bool) or value < minimum:
        raise ConfigError(f"{key}: expected a number >= {minimum}, got {value!r}")
    # TOML has inf and nan: nan compares false with everything, so such a rule never fires.
    if not math.isfinite(value):
        raise ConfigError(f"{key}: expected a finite number, got {value!r}")
    # Compared in the store's DECIMAL(18,6), which ends below 10^12; no price or percent a
    # rule means comes near.
    if value > _NUMBER_MAX:
        raise ConfigError(f"{key}: {value!r} is out of range (at most {_NUMBER_MAX:,})")
    # Through str: the TOML float 2.35 is meant as 2.35, not as its binary neighbour.
    return Decimal(str(value))


def _currency(value: Any, key: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not _CURRENCY.match(value):
        raise ConfigError(f"{key}: expected an ISO currency code like USD or CNY, got {value!r}")
    return value
