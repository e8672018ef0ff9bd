"""The `[export]` table of config.toml and the daemon's scheduled export.

    [export]
    to = "s3://bucket/gpu-prices/tracker=acct-1"   # a directory or an s3://, gs://, az:// URL
    interval = "1d"

No credentials in the file: the object stores' own chains find them (the AWS chain, Google's
Application Default Credentials, Azure's DefaultAzureCredential with the account named by
AZURE_STORAGE_ACCOUNT_NAME). The export takes the daemon's store lock only while it reads the
store; the upload runs after, so collections are not held up by a slow bucket.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from collectors.common import (
    ConfigError,
    StoreError,
    duration_words,
    no_unknown,
    parse_duration,
    text,
)
from tracker.exporting import beside, summary, target

if TYPE_CHECKING:
    from tracker.daemon.jobs import Shared

log = logging.getLogger("tracker.daemon")
DEFAULT_INTERVAL_S = 86_400
JOB_ID = "export"
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


class ExportJob:
    """The scheduled export (`[export] to`, every `[export] interval`)."""

    def __init__(self, shared: Shared) -> None:
        self.shared = shared
        self.__name__ = JOB_ID

    def __call__(self) -> None:
        from storage.export import export

        settings = self.shared.config.export
        if settings.to is None:
            return
        to = beside(settings.to, self.shared.config.source)
        with self.shared.tracking(JOB_ID):
            try:
                report = export(
                    self.shared.config.store_path,
                    target(to, self.shared.env),
                    lock=self.shared.store_lock,
                )
            except (StoreError, ConfigError, OSError) as exc:
                log.error("export to %s failed: %s", to, exc, extra={"export": "failed"})
                return
            except Exception:  # never into the scheduler: the next export must happen
                log.exception("export to %s: the job broke", to)
                return
        log.info(
            "export to %s: %s; next in %s",
            to,
            summary(report),
            duration_words(settings.interval_s),
            extra={"export": "ok", "files_written": len(report.written)},
        )
