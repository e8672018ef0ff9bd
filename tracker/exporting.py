"""The export run the command line and the daemon share (docs/export.md): where `[export] to`
or `--to` points (a relative directory beside the config), the target opened for it, and the
one line that says what an export did. The writing itself is `storage.export`'s."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from storage.export import Report, Target

# The variable Azure's own tools (az, adlfs) read the storage account from.
AZURE_ACCOUNT_ENV = "AZURE_STORAGE_ACCOUNT_NAME"


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
