"""What every layer shares: the error tree, durations, price-kind labels and config value checks.

A leaf: it imports nothing of the project, so collectors, storage, alerts and tracker can all
lean on it without an arrow pointing back up (docs/contributing.md, "The house").
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping
from typing import Any, Literal
from urllib.parse import quote, quote_plus, urlsplit

PriceKind = Literal["on_demand", "spot", "reserved"]
PRICE_KINDS: tuple[PriceKind, ...] = ("on_demand", "spot", "reserved")
PAYMENT_OPTIONS = ("no_upfront", "partial_upfront", "all_upfront")
OFFERING_CLASSES = ("standard", "convertible")
# How a price kind reads in tables and messages; `on-demand` is accepted wherever one is typed.
KIND_LABELS: dict[str, str] = {"on_demand": "on-demand", "spot": "spot", "reserved": "reserved"}

_DURATION = re.compile(r"^\s*([0-9]+)\s*([smhd])\s*$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}
# No duration is longer than ten years unless a key says less: beyond it, dates overflow and
# DuckDB's INTEGER seconds (2^31 s is 68 years) are near; a key gives its own tighter bound.
MAX_DURATION_S = 3650 * 86400

# An environment variable's name as config.toml may give it: upper case, like the ecosystem's
# own (LAMBDA_API_KEY). Key IDs are often valid identifiers too, so the usual key prefixes are
# refused: a pasted key must never be taken for a name (and echoed in "set <name>").
_ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]{0,63}$")
_KEY_PREFIXES = ("AKIA", "ASIA", "AKID", "LTAI", "DOP_V1_")


# What a secret becomes in every error text, log line and stored error.
MASK = "***"


class Redactor:
    """Replaces secrets in text with ***: each as given and in the forms HTTP carries it in
    (percent-encoded, JSON-escaped, inside a Basic-auth header), so an API that echoes the
    request back in its error gives nothing away. Of a URL (a Slack webhook), its path and
    query go too: urllib3 logs them without the host. Values shorter than `min_length` are left
    alone: the tracker holds every credential variable it finds, and masking a stand-in such as
    "test" would mangle every path holding the word."""

    def __init__(self, *secrets: str | None, min_length: int = 1) -> None:
        pieces: set[str] = set()
        self.secrets = tuple(s for s in secrets if s and len(s) >= max(min_length, 1))
        for secret in self.secrets:
            pieces.update(_forms(secret))
            parts = urlsplit(secret)
            if parts.scheme and parts.netloc:
                path = parts.path + (f"?{parts.query}" if parts.query else "")
                pieces.update(p for p in (path, parts.path, parts.query) if len(p) > 1)
        # Longest first, so a URL goes whole rather than leaving its host beside ***.
        self.pieces = sorted(pieces, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for piece in self.pieces:
            text = text.replace(piece, MASK)
        return text


def flat(text: str) -> str:
    """`text` on one line, as a server's error answer may not be: an HTML page's lines, a
    terminal's escape sequences (colours, cursor moves, window titles) and every other control
    character become single spaces, so a summary, a log line and a stored error stay one line
    and nothing a server sent can move the cursor."""
    return " ".join(_CONTROL.sub(" ", _ESCAPE.sub(" ", text)).split())


# A terminal's escape sequences (CSI: colours, cursor moves; OSC: titles, links), then any C0
# or C1 control character left.
_ESCAPE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _forms(secret: str) -> set[str]:
    raw = secret.encode()
    escaped = json.dumps(secret)[1:-1]
    forms = {secret, quote(secret, safe=""), quote_plus(secret), escaped}
    forms.add(escaped.replace("/", "\\/"))  # JSON encoders that escape slashes (PHP, Go's)
    # Basic auth: base64 of "user:password", the key as either half.
    forms |= {base64.b64encode(b).decode() for b in (raw, raw + b":", b":" + raw)}
    return {f for f in forms if f}


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


def parse_duration(
    value: Any,
    key: str,
    *,
    noun: str = "a duration",
    least: int = 1,
    most: int = MAX_DURATION_S,
) -> int:
    """'30s', '15m', '24h', '7d' -> seconds (never zero), between `least` and `most` seconds."""
    match = _DURATION.match(value) if isinstance(value, str) else None
    digits = match.group(1).lstrip("0") if match else ""
    if not match or not digits:
        raise ConfigError(f'{key}: {shown(value)} is not {noun} like "30m", "24h", "7d"')
    # A few digits more than any bound needs: int() of thousands of them is refused anyway.
    seconds = int(digits[:16]) * _UNIT_S[match.group(2)]
    if len(digits) > 16 or not least <= seconds <= most:
        raise ConfigError(
            f"{key}: {shown(value)} is out of range (from {duration_words(least)} "
            f"to {duration_words(most)})"
        )
    return seconds


def shown(value: Any, limit: int = 60) -> str:
    """A config value as an error quotes it: its repr, cut short (a pasted megabyte stays out
    of the one line)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 4] + "..." + text[-1:]


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
        raise ConfigError(f"{key}: expected a non-empty string, got {shown(value)}")
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
