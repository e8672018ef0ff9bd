"""The single values of the GPU table's TOML (a table, a model name, a number in bounds),
each checked into a ConfigError that names its key.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from collectors.common import ConfigError, shown, text

# A model name is what the `gpu_model` column holds and `--gpu` is matched against: short,
# printable, and free of the characters SQL and TOML quoting would trip over.
_MODEL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ._+-]{0,39}$")


def table(value: Any, key: str) -> Mapping[str, Any]:
    """A TOML table, else a ConfigError naming `key`."""
    if not isinstance(value, Mapping):
        raise ConfigError(f"{key}: expected a table, got {shown(value)}")
    return value


def model_name(value: Any, key: str) -> str:
    name = text(value, key)
    if not _MODEL_NAME.match(name):
        raise ConfigError(
            f"{key}: {shown(name)} is not a GPU model name (letters, digits, space . _ + -, "
            "at most 40 characters)"
        )
    return name


def number(value: Any, key: str, bounds: tuple[float, float], *, fraction: bool = False) -> float:
    """A number within `bounds`; with `fraction`, also a share written "1/6" (exact in no
    decimal)."""
    if fraction and isinstance(value, str) and re.fullmatch(r"\s*\d+\s*/\s*\d+\s*", value):
        top, _, bottom = value.partition("/")
        if int(bottom) != 0:
            value = float(Fraction(int(top), int(bottom)))
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        written = "a number" + (' or a share like "1/6"' if fraction else "")
        raise ConfigError(f"{key}: expected {written}, got {shown(value)}")
    low, high = bounds
    if not low <= value <= high:
        raise ConfigError(f"{key}: {value:g} is outside {low:g} to {high:g}")
    return float(value)
