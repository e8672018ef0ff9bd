"""The `[export]` table of config.toml: where and how often the daemon exports the history.

[export]
to = "s3://bucket/gpu-prices/tracker=acct-1"   # a directory or an s3://, gs://, az:// URL
interval = "1d"
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from collectors.common import MAX_DURATION_S, ConfigError, text
from tracker.config.keys import Key, Kind, Table, duration

DEFAULT_INTERVAL_S = 86_400
_SCHEMES = ("s3://", "gs://", "az://", "abfs://", "abfss://")


@dataclass(frozen=True)
class ExportSettings:
    """`to` None: the daemon does not export."""

    to: str | None = None
    interval_s: int = DEFAULT_INTERVAL_S

    @property
    def enabled(self) -> bool:
        return self.to is not None


def _to(value: Any, key: str) -> str:
    return check_to(text(value, key), key)


EXPORT = Table(
    "export",
    (
        Key(
            "to",
            Kind("a directory or an s3://, gs://, az:// URL", _to),
            None,
            "where the history goes (default: no export)",
        ),
        Key(
            "interval",
            duration(MAX_DURATION_S, noun="an interval"),
            "1d",
            "how often it is exported",
        ),
    ),
)


def parse_export(raw: Mapping[str, Any]) -> ExportSettings:
    got = EXPORT.read(raw)
    return ExportSettings(got["to"], got["interval"])


def check_to(to: str, key: str) -> str:
    """A directory or an object-store URL the export knows (ConfigError naming `key`)."""
    if "://" in to and not to.lower().startswith(_SCHEMES):
        raise ConfigError(f"{key}: {to!r} is neither a directory nor an s3://, gs:// or az:// URL")
    if not to.strip():
        raise ConfigError(f"{key}: empty; give a directory or an s3://, gs:// or az:// URL")
    return to
