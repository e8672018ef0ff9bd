"""The daemon's scheduled export (the `[export]` table: tracker/config/export.py).

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
from pathlib import Path
from typing import TYPE_CHECKING

from collectors.common import ConfigError, StoreError, duration_words

if TYPE_CHECKING:
    from storage.export import Report, Target
    from tracker.daemon.jobs import Shared

log = logging.getLogger("tracker.daemon")
# The variable Azure's own tools (az, adlfs) read the storage account from.
AZURE_ACCOUNT_ENV = "AZURE_STORAGE_ACCOUNT_NAME"
JOB_ID = "export"


def beside(to: str, config: Path | None) -> str:
    """`to` with a relative directory taken beside the config file, like `[storage] path` (a
    daemon's working directory is rarely the config's)."""
    if "://" in to or config is None or Path(to).expanduser().is_absolute():
        return to
    return str(config.parent / to)


def target(to: str, env: Mapping[str, str]) -> Target:
    from storage.export import open_target

    return open_target(to, azure_account=env.get(AZURE_ACCOUNT_ENV))


def summary(report: Report) -> str:
    """One line on what an export did."""
    if not report.changed:
        return f"nothing changed ({report.unchanged} file groups up to date)"
    months = len(report.partitions)
    return (
        f"{len(report.written)} files written ({report.rows:,} rows, {months} partitions), "
        f"{len(report.deleted)} deleted, {report.unchanged} file groups unchanged"
    )


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
