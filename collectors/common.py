"""What every layer shares: the error tree, durations, price-kind labels and config value checks.

A leaf: it imports nothing of the project, so collectors, storage, alerts and tracker can all
lean on it without an arrow pointing back up (DESIGN.md, "The house").
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

PriceKind = Literal["on_demand", "spot", "reserved"]
PRICE_KINDS: tuple[PriceKind, ...] = ("on_demand", "spot", "reserved")
PAYMENT_OPTIONS = ("no_upfront", "partial_upfront", "all_upfront")
OFFERING_CLASSES = ("standard", "convertible")
# How a price kind reads in tables and messages; `on-demand` is accepted wherever one is typed.
KIND_LABELS: dict[str, str] = {"on_demand": "on-demand", "spot": "spot", "reserved": "reserved"}

_DURATION = re.compile(r"^\s*(\d+)\s*([smhd])\s*$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}

# An environment variable's name as config.toml may give it: upper case, like the ecosystem's
# own (LAMBDA_API_KEY). Key IDs are often valid identifiers too, so the usual key prefixes are
# refused: a pasted key must never be taken for a name (and echoed in "set <name>").
_ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]{0,63}$")
_KEY_PREFIXES = ("AKIA", "ASIA", "AKID", "LTAI", "DOP_V1_")


class TrackerError(Exception):
    """Root of every error this project raises on purpose."""


class ConfigError(TrackerError):
    """config.toml (or a command-line value) is wrong; the message names the key."""


class CollectorError(TrackerError):
    """A provider could not be collected; the message names the provider."""

    def __init__(self, provider: str, message: str) -> None:
        super().__init__(f"{provider}: {message}")
        self.provider = provider


class MissingCredentials(CollectorError):
    """Credentials are absent: the provider is skipped, not failed."""

    def __init__(self, provider: str, variable: str) -> None:
        super().__init__(provider, f"no credentials; set {variable}")
        self.variable = variable


class FetchError(CollectorError):
    """The API could not be reached or kept failing after retries."""


class PayloadShapeError(CollectorError):
    """The API answered, but not in the shape the parser knows: fail loudly, store nothing."""


class StoreError(TrackerError):
    """The DuckDB store could not be read or written."""


class NotifyError(TrackerError):
    """An alert channel refused or could not be reached."""


def kind_label(kind: str) -> str:
    """`on_demand` -> `on-demand`: a price kind as people read it."""
    return KIND_LABELS.get(kind, kind)


def parse_kind(value: Any, key: str) -> PriceKind:
    """A price kind as a person types it (`on-demand` or `on_demand`, any case)."""
    text = value.strip().lower().replace("-", "_") if isinstance(value, str) else None
    for kind in PRICE_KINDS:
        if text == kind:
            return kind
    accepted = ", ".join(KIND_LABELS[k] for k in PRICE_KINDS)
    raise ConfigError(f"{key}: unknown price kind {value!r} (accepted: {accepted})")


def parse_duration(value: Any, key: str, *, noun: str = "a duration") -> int:
    """'30s', '15m', '24h', '7d' -> seconds (never zero)."""
    match = _DURATION.match(value) if isinstance(value, str) else None
    if not match or int(match.group(1)) == 0:
        raise ConfigError(f'{key}: {value!r} is not {noun} like "30m", "24h", "7d"')
    return int(match.group(1)) * _UNIT_S[match.group(2)]


def duration_words(seconds: int | None) -> str:
    """Seconds as config.toml writes them: 86400 -> '1d', 5400 -> '90m'; '' for none."""
    if not seconds:
        return ""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def text(value: Any, key: str) -> str:
    """A non-empty string, else a ConfigError naming `key`."""
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{key}: expected a non-empty string, got {value!r}")
    return value


def choice(value: Any, choices: tuple[str, ...], key: str) -> str:
    """One of `choices`, else a ConfigError naming `key` and what it accepts."""
    if value not in choices:
        raise ConfigError(f"{key}: expected one of {', '.join(choices)}, got {value!r}")
    return str(value)


def no_unknown(table: Mapping[str, Any], allowed: set[str], prefix: str) -> None:
    """A config table with a key nobody reads is an error naming it (a typo never silently
    leaves a default in force)."""
    for key in table:
        if key not in allowed:
            choices = ", ".join(sorted(allowed)) or "none"
            raise ConfigError(f"{prefix}{key}: unknown key (allowed here: {choices})")


def env_variable_name(value: Any, key: str) -> str:
    """`value` when it is the name of an environment variable, else a ConfigError naming `key`
    that does not repeat the value (what gets pasted there by mistake is the secret itself)."""
    if (
        not isinstance(value, str)
        or not _ENV_NAME.match(value)
        or value.upper().startswith(_KEY_PREFIXES)
    ):
        raise ConfigError(
            f"{key}: expected the NAME of an environment variable (upper case letters, digits "
            "and _, like LAMBDA_API_KEY), not its value: put the secret in that variable"
        )
    return value
