"""The JSON Schema of config.toml (`gpu-tracker config schema`), built from the declarations the
config is read by: every declared table's keys (tracker.config.keys), each provider's own options
and credential variables from the registry, the alert rule kinds with the keys each takes, and the
GPU table's override entries.

An editor that knows the schema (Taplo, VS Code's Even Better TOML, JetBrains) completes keys and
marks wrong types as the user types. The schema never accepts less than the reader does, and says
no more than it can say without running the checks: the reader stays the authority, and
`gpu-tracker config check` runs it (docs/configuration.md, "Editors and the schema").
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from tracker.config.keys import DURATION_PATTERN, STRING, Key, Schema, Table

_POSITIVE = {"type": "number", "exclusiveMinimum": 0}
_NAMES = {"type": "array", "items": STRING}
_ONE_OR_MORE = {"anyOf": [STRING, {**_NAMES, "minItems": 1}]}
_DURATION = {"type": "string", "pattern": DURATION_PATTERN}


def config_schema() -> dict[str, Any]:
    """The whole schema: a JSON-able dict (draft 2020-12)."""
    from tracker.config import DECLARED

    tables = {t.name: t for t in DECLARED}
    properties: dict[str, Any] = {
        name: table_schema(table) for name, table in tables.items() if "<" not in name
    }
    properties["providers"] = _providers()
    properties["fx"] = _fx(tables["fx.<currency>"])
    properties["workloads"] = _workloads(tables["workloads.<name>"])
    properties["alerts"] = _alerts()
    properties["gpus"] = _gpus()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "gpu-price-tracker config.toml",
        "description": "The configuration of gpu-tracker (docs/configuration.md).",
        "type": "object",
        "additionalProperties": False,
        "properties": dict(sorted(properties.items())),
    }


def table_schema(table: Table, extra: tuple[Key, ...] = ()) -> dict[str, Any]:
    """A declared table: its keys, their kinds and defaults; no other key."""
    return {
        "type": "object",
        "additionalProperties": False,
        "properties": {key.name: key_schema(key) for key in (*table.keys, *extra)},
    }


def key_schema(key: Key) -> dict[str, Any]:
    found: dict[str, Any] = {**key.kind.schema, "description": _described(key)}
    if key.default is not None and key.default != []:
        # As TOML would hold it: a Decimal default (a price ceiling) is a number there.
        found["default"] = float(key.default) if isinstance(key.default, Decimal) else key.default
    return found


def _described(key: Key) -> str:
    return f"{key.doc} ({key.kind.accepts})" if key.doc else key.kind.accepts


def _providers() -> dict[str, Any]:
    from collectors import REGISTRY
    from tracker.config.providers import provider_keys

    return {
        "type": "object",
        "description": "One table per provider: [providers.<name>] (docs/providers.md).",
        "additionalProperties": False,
        "properties": {
            name: table_schema(Table(f"providers.{name}", provider_keys(info)))
            for name, info in sorted(REGISTRY.items())
        },
    }


def _fx(rate: Table) -> dict[str, Any]:
    one = table_schema(rate)
    one["required"] = ["date"]
    one["oneOf"] = [{"required": ["units_per_usd"]}, {"required": ["usd_per_unit"]}]
    return {
        "type": "object",
        "description": "Exchange rates per ISO currency code other than USD, dated: one "
        "table or a list of them (docs/configuration.md, exchange rates).",
        "propertyNames": {"pattern": "^[A-Z]{3}$", "not": {"const": "USD"}},
        "additionalProperties": {"anyOf": [one, {"type": "array", "items": one}]},
    }


def _workloads(workload: Table) -> dict[str, Any]:
    one = table_schema(workload)
    one["required"] = ["unit", "per_gpu_hour"]
    return {
        "type": "object",
        "description": "Units of real work per GPU-hour, by name, over the bundled ones "
        "(docs/decide.md, cost per unit of work).",
        "additionalProperties": one,
    }


def _alerts() -> dict[str, Any]:
    from alerts.rules import COMMON_KEYS, KINDS
    from alerts.settings import CHANNEL_KEYS

    rules = [
        {
            "if": {"properties": {"kind": {"const": kind}}, "required": ["kind"]},
            "then": {
                "required": sorted(spec.required | {"name"}),
                "propertyNames": {"enum": sorted(COMMON_KEYS | spec.required | spec.optional)},
            },
        }
        for kind, spec in KINDS.items()
    ]
    keys = set(COMMON_KEYS).union(*(s.required | s.optional for s in KINDS.values()))
    properties = {k: _RULE_KEYS.get(k, {}) for k in sorted(keys)} | {"kind": {"enum": list(KINDS)}}
    rule: dict[str, Any] = {"type": "object", "required": ["name", "kind"]}
    rule |= {"properties": properties, "allOf": rules}
    return {
        "type": "object",
        "description": "Alert rules and channels (docs/alerts.md).",
        "additionalProperties": False,
        "properties": {
            "retry_base": _DURATION,
            "retry_max": _DURATION,
            "max_attempts": {"type": "integer", "minimum": 1},
            "slack": _closed(CHANNEL_KEYS["slack"]),
            "email": _closed(CHANNEL_KEYS["email"]),
            "rules": {"type": "array", "items": rule},
        },
    }


# The rule keys' values (alerts.rules reads them; a key of a new kind is at least allowed).
_RULE_KEYS: dict[str, Schema] = {
    "name": STRING,
    "channels": _ONE_OR_MORE,
    "cooldown": _DURATION,
    "window": _DURATION,
    "threshold": _POSITIVE,
    "hysteresis": {"type": "number", "minimum": 0},
    "currency": {"type": "string", "pattern": "^[A-Z]{3}$"},
    "per": {"enum": ["gpu", "instance"]},
    "direction": {"enum": ["any", "down", "up"]},
    "min_gpu_memory_gib": _POSITIVE,
    "gpu_model": _ONE_OR_MORE,
    "provider": _ONE_OR_MORE,
    "region": _ONE_OR_MORE,
    "instance_type": _ONE_OR_MORE,
    "price_kind": _ONE_OR_MORE,
    "payment_option": _ONE_OR_MORE,
    "term_months": {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "array"}]},
}


def _closed(keys: frozenset[str] | set[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "additionalProperties": False,
        "properties": {k: _CHANNEL_KEYS.get(k, STRING) for k in sorted(keys)},
    }


_CHANNEL_KEYS: dict[str, Schema] = {
    "timeout": _POSITIVE,
    "smtp_port": {"type": "integer", "minimum": 1, "maximum": 65535},
    "security": {"enum": ["starttls", "ssl", "none"]},
    "to": _ONE_OR_MORE,
}


def _gpus() -> dict[str, Any]:
    from collectors.gpus.schema import OVERRIDE_KEYS

    numbers = {"gpu_count", "gpu_memory_gib", "vcpus", "memory_gib", "fp16_tflops", "fp32_tflops"}

    def entry(keys: frozenset[str] | set[str], **special: Schema) -> dict[str, Any]:
        return {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                k: special.get(k, _POSITIVE if k in numbers else STRING) for k in sorted(keys)
            },
        }

    variant = entry(OVERRIDE_KEYS["variants"], name=STRING)
    board = entry({"fp16_tflops", "fp32_tflops", "source"})
    model = entry(
        OVERRIDE_KEYS["models"],
        memory_gib={"type": "array", "items": _POSITIVE},
        aliases=_NAMES,
        # keyed by the board: [gpus.models.H100.form_factors.PCIe]
        form_factors={"type": "object", "additionalProperties": board},
        # keyed by the variant's GiB: [gpus.models.H100.variants."94"]
        variants={
            "type": "object",
            "propertyNames": {"pattern": r"^[0-9]+(\.[0-9]+)?$"},
            "additionalProperties": variant,
        },
    )
    return {
        "type": "object",
        "description": "Entries over the bundled GPU table (docs/gpus.md).",
        "additionalProperties": False,
        "properties": {
            "instance_types": {
                "type": "object",
                "additionalProperties": entry(OVERRIDE_KEYS["instance_types"]),
            },
            "models": {"type": "object", "additionalProperties": model},
        },
    }
