"""Configuration keys, declared once: per table each key's kind (type and bounds), default and a
one-line doc, and the one reader that checks a TOML table against its declarations.

Every declared key is a row of docs/configuration.md's key reference (a test holds them equal).
A kind's check turns the TOML value into the setting or raises a ConfigError naming the key path
(`daemon.jitter: ...`); checks that span keys (a write wait longer than the query timeout) stay
with the table's parser.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from collectors.common import (
    ConfigError,
    duration_words,
    no_unknown,
    parse_duration,
    shown,
    text,
)

Check = Callable[[Any, str], Any]


# A JSON Schema fragment: what an editor checks and completes a key's value by
# (`gpu-tracker config schema`). The check stays the authority; the schema says no more than it.
Schema = Mapping[str, Any]
DURATION_PATTERN = r"^\s*[0-9]+\s*[smhd]\s*$"
STRING: Schema = {"type": "string", "minLength": 1}


@dataclass(frozen=True)
class Kind:
    """What a key accepts, in the docs' words, the check that reads it, and its JSON Schema."""

    accepts: str
    check: Check
    schema: Schema = field(default_factory=lambda: STRING, compare=False)


@dataclass(frozen=True)
class Key:
    """A key of a table: `default` is the TOML value used when the key is left out (read like a
    given one), or None: no setting."""

    name: str
    kind: Kind
    default: Any
    doc: str


@dataclass(frozen=True)
class Table:
    """A config table's declared keys; `name` is its path (`daemon`, `providers.<name>`)."""

    name: str
    keys: tuple[Key, ...]

    def names(self) -> set[str]:
        return {key.name for key in self.keys}

    def read(
        self, raw: Mapping[str, Any], prefix: str | None = None, extra: Iterable[Key] = ()
    ) -> dict[str, Any]:
        """`raw` checked against the declarations (and `extra`, keys known only at run time):
        every key's setting by name, its default's when left out. Unknown keys are refused."""
        keys = (*self.keys, *extra)
        prefix = f"{self.name}." if prefix is None else prefix
        no_unknown(raw, {key.name for key in keys}, prefix)
        return {
            key.name: (
                key.kind.check(raw[key.name], prefix + key.name)
                if key.name in raw
                else None
                if key.default is None
                else key.kind.check(key.default, prefix + key.name)
            )
            for key in keys
        }


def refuse(key: str, message: str) -> ConfigError:
    """The error of a value a check refuses: `key: message`, to raise."""
    return ConfigError(f"{key}: {message}")


def duration(most: int, *, noun: str = "a duration", least: int = 1, zero: bool = False) -> Kind:
    """A duration like "30m"; `zero`: "0" (or "0s") is accepted too, as 0 s."""

    def check(value: Any, key: str) -> int:
        if zero and isinstance(value, str) and value.strip() in ("0", "0s"):
            return 0
        return parse_duration(value, key, noun=noun, least=least, most=most)

    bounds = f"from `{duration_words(least)}` to `{duration_words(most)}`"
    pattern = DURATION_PATTERN if not zero else f"({DURATION_PATTERN})|^\\s*0\\s*$"
    schema = {"type": "string", "pattern": pattern}
    return Kind(f"{noun} {bounds}" + (", or `0`" if zero else ""), check, schema)


def _boolean(value: Any, key: str) -> bool:
    if not isinstance(value, bool):
        raise refuse(key, f"expected true or false, got {value!r}")
    return value


BOOLEAN = Kind("true or false", _boolean, {"type": "boolean"})
TEXT = Kind("a non-empty string", text)


def whole(low: int, high: int) -> Kind:
    """A whole number from `low` to `high`."""

    def check(value: Any, key: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise refuse(key, f"expected a whole number from {low} to {high}, got {value!r}")
        return value

    schema = {"type": "integer", "minimum": low, "maximum": high}
    return Kind(f"a whole number from {low} to {high}", check, schema)


def number(low: float, high: float, message: str, *, low_open: bool = False) -> Kind:
    """A finite number from `low` (above it when `low_open`) to `high`; `message` is what the
    error says is expected."""

    def check(value: Any, key: str) -> float:
        numeric = isinstance(value, int | float) and not isinstance(value, bool)
        if (
            not numeric
            or not math.isfinite(value)
            or not (low < value if low_open else low <= value)
            or value > high
        ):
            raise refuse(key, f"expected {message}, got {shown(value)}")
        return float(value)

    least = "exclusiveMinimum" if low_open else "minimum"
    return Kind(message, check, {"type": "number", least: low, "maximum": high})


def one_of(*choices: str) -> Kind:
    """One of `choices` (a string)."""

    def check(value: Any, key: str) -> str:
        if value not in choices:
            raise refuse(key, f"expected one of {', '.join(choices)}, got {value!r}")
        return str(value)

    return Kind(f"one of {', '.join(f'`{c}`' for c in choices)}", check, {"enum": list(choices)})


def names(noun: str) -> Kind:
    """A list of strings (what they may name is the table's parser's to check)."""

    def check(value: Any, key: str) -> tuple[str, ...]:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise refuse(key, f"expected a list of {noun}, got {value!r}")
        return tuple(value)

    return Kind(f"a list of {noun}", check, {"type": "array", "items": {"type": "string"}})
