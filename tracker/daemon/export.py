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
from typing import TYPE_CHECKING

from collectors.common import ConfigError, StoreError, duration_words
from tracker.exporting import beside, summary, target

if TYPE_CHECKING:
    from tracker.daemon.jobs import Shared

log = logging.getLogger("tracker.daemon")
JOB_ID = "export"


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
