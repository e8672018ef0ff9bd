"""One export: compare what the store holds now with what the target holds, write only what
changed, move each file into place whole, then record it in the target's manifest.

The manifest (`_manifest.json` at the target's root) is the export's only bookkeeping, and it
lives with the files: a store that is replaced (restored, moved to another machine) compares
its content with what the target really holds and rewrites only what differs; several trackers
exporting to one bucket each keep theirs under their own prefix. A file the manifest names but
the target no longer has is written again.

The store is open only while its fingerprints are taken and the changed groups are written to
a local staging folder, in one read transaction (one snapshot, one `now()`); the upload and the
moves happen after it is closed, so a daemon's next collection is not kept waiting.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb

from collectors.common import ConfigError, StoreError
from storage.connection import LOCK_WAIT_S, connect, transaction
from storage.export.partitions import LAYOUT, RUNS, Group, fingerprints, stage
from storage.export.target import MANIFEST, Target
from storage.writes.space import refused_write

FORMAT = "gpu-tracker export"
# The runs file is Parquet too, named so that `DIR/**/*.parquet` reads exactly `prices`.
RUNS_FILE = "runs/collection_runs.parq"


@dataclass
class Report:
    """What an export did: the files written and deleted (relative to the root), the groups
    left as they were, and the rows written."""

    written: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    unchanged: int = 0
    rows: int = 0
    partitions: set[tuple[str, str]] = field(default_factory=set)  # (provider, month) rewritten

    @property
    def changed(self) -> bool:
        return bool(self.written or self.deleted)


def export(
    store: Path | str,
    target: Target,
    *,
    lock: AbstractContextManager[Any] | None = None,
    wait_s: float = LOCK_WAIT_S,
) -> Report:
    """Export the store at `store` to `target`. `lock`: the daemon's store lock (its sessions
    open the store read-write, under the lock); without it the store is opened read-only."""
    try:
        return _export(store, target, lock, wait_s)
    except (duckdb.Error, OSError) as exc:
        # A full disk names its cause and file, never DuckDB's "transaction is aborted".
        line = refused_write(exc)
        if line is not None:
            raise StoreError(f"{line}; no file was left half written") from exc
        if isinstance(exc, duckdb.Error):
            raise StoreError(str(exc).strip().splitlines()[0]) from exc
        raise


def _export(
    store: Path | str, target: Target, lock: AbstractContextManager[Any] | None, wait_s: float
) -> Report:
    target.sweep()
    old = _groups(target.read_manifest())
    present = target.existing()
    _not_over_another(target, present)
    report = Report()
    with ExitStack() as stack:
        reading = stack.enter_context(ExitStack())
        con = reading.enter_context(_open(store, lock, wait_s))  # first: no store, no folder
        with transaction(con, commit=False):
            current = fingerprints(con)
            changed = sorted(
                group
                for group, (_, print_) in current.items()
                if _stale(old.get(group.key), print_, present)
            )
            staged: dict[Group, list[Path]] = {}
            if changed:  # an export with nothing to write writes nothing, not even a folder
                staged = stage(con, changed, stack.enter_context(target.staging()))
        reading.close()  # the store is closed before anything is uploaded
        manifest = {key: entry for key, entry in old.items() if key in _keys(current)}
        # Closed intervals before open ones: while an export runs, a price closed since the
        # last one may show twice (closed, and still open), never not at all.
        for group in sorted(changed, key=lambda g: g.part != "closed"):
            files = _put(target, group, staged[group])
            gone = [f for f in old.get(group.key, {}).get("files", []) if f not in files]
            _delete(target, gone, report)
            manifest[group.key] = {"fingerprint": current[group][1], "files": files}
            report.written += files
            report.rows += current[group][0]
            if group.part != RUNS:
                report.partitions.add((group.provider, group.month))
    for key in sorted(set(old) - _keys(current)):  # a partition the store no longer has
        _delete(target, old[key].get("files", []), report)
    report.unchanged = len(current) - len(changed)
    if report.changed:
        target.write_manifest(_manifest(manifest))
    return report


@contextmanager
def _open(
    store: Path | str, lock: AbstractContextManager[Any] | None, wait_s: float
) -> Iterator[Any]:
    if lock is None:
        with connect(store, read_only=True, wait_s=wait_s, outside=True) as con:
            yield con
        return
    from storage.session import session

    with session(store, lock=lock, wait_s=wait_s) as con:
        yield con


def _not_over_another(target: Target, present: set[str]) -> None:
    """Refuse a root that holds another export below it (another tracker's prefix): files
    written beside it would mix two histories for every reader of the root."""
    nested = sorted(name for name in present if name.endswith("/" + MANIFEST))
    if nested:
        below = nested[0].rsplit("/", 1)[0]
        raise ConfigError(
            f"{target.root} holds another export in {below}/: give this tracker a prefix of its "
            "own beside it (like tracker=<name>/), not its parent"
        )


def _stale(entry: dict[str, Any] | None, fingerprint: str, present: set[str]) -> bool:
    if entry is None or entry.get("fingerprint") != fingerprint:
        return True
    return not all(name in present for name in entry.get("files", []))


def _put(target: Target, group: Group, staged: list[Path]) -> list[str]:
    if group.part == RUNS:
        names = [RUNS_FILE]
    else:
        names = [f"{group.directory}/{group.part}-{i}.parquet" for i in range(len(staged))]
    for local, name in zip(staged, names, strict=True):
        target.put(local, name)
    return names


def _delete(target: Target, names: list[str], report: Report) -> None:
    for name in names:
        target.delete(name)
        report.deleted.append(name)


def _keys(groups: dict[Group, Any]) -> set[str]:
    return {group.key for group in groups}


def _groups(manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    if manifest.get("format") != FORMAT or manifest.get("layout") != LAYOUT:
        return {}  # none yet, or of another layout: everything is written again
    groups: dict[str, dict[str, Any]] = manifest.get("groups", {})
    return groups


def _manifest(groups: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "layout": LAYOUT,
        "exported_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "groups": groups,
        "readme": f"{MANIFEST}: what this export holds, kept by gpu-tracker export; do not edit",
    }
