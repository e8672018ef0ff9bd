"""The `[export]` table of config.toml: where and how often the daemon exports the history.

[export]
to = "s3://bucket/gpu-prices/tracker=acct-1"   # a directory or an s3://, gs://, az:// URL
interval = "1d"
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from collectors.common import ConfigError, no_unknown, parse_duration, text

DEFAULT_INTERVAL_S = 86_400
_KEYS = {"to", "interval"}
_SCHEMES = ("s3://", "gs://", "az://", "abfs://", "abfss://")


@dataclass(frozen=True)
class ExportSettings:
    """`to` None: the daemon does not export."""

    to: str | None = None
    interval_s: int = DEFAULT_INTERVAL_S

    @property
    def enabled(self) -> bool:
        return self.to is not None


def parse_export(raw: Mapping[str, Any]) -> ExportSettings:
    no_unknown(raw, _KEYS, "export.")
    to = None
    if "to" in raw:
        to = check_to(text(raw["to"], "export.to"), "export.to")
    interval = raw.get("interval", "1d")
    return ExportSettings(to, parse_duration(interval, "export.interval", noun="an interval"))


def check_to(to: str, key: str) -> str:
    """A directory or an object-store URL the export knows (ConfigError naming `key`)."""
    if "://" in to and not to.lower().startswith(_SCHEMES):
        raise ConfigError(f"{key}: {to!r} is neither a directory nor an s3://, gs:// or az:// URL")
    if not to.strip():
        raise ConfigError(f"{key}: empty; give a directory or an s3://, gs:// or az:// URL")
    return to
