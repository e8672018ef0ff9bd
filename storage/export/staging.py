"""The export's staging folders: where an export writes its files before it moves them into
place, each held by its owner while it runs, and swept by the next export once the owner is
gone (a kill -9, a power cut) so leftovers never pile up beside the export.

The owner holds a lock (flock) on the folder's `.owner` file for as long as it runs; the kernel
drops it when the process ends, however it ends. A folder whose `.owner` another process can
lock has no owner left. The file is locked before it takes its name, so a sweeper never sees an
`.owner` that is not yet locked; a folder with no `.owner` at all was left by a release before
the lock (or is being made this instant: then it is empty, and kept).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

OWNER = ".owner"
_CLAIMING = ".owner.new"


@contextmanager
def staging_folder(parent: Path, prefix: str) -> Iterator[Path]:
    """A new folder `<parent>/<prefix><uuid>` owned by this process until the block ends, then
    removed."""
    folder = parent / f"{prefix}{uuid.uuid4().hex}"
    folder.mkdir(parents=True)
    try:
        with _owned(folder):
            yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def sweep(parent: Path, prefix: str) -> list[Path]:
    """Remove the folders `<parent>/<prefix>*` no running export owns; the ones removed. What
    cannot be listed or removed (a read-only target) is left as it is."""
    removed: list[Path] = []
    try:
        candidates = [p for p in parent.iterdir() if p.name.startswith(prefix) and p.is_dir()]
    except OSError:
        return removed
    for folder in candidates:
        with contextlib.suppress(OSError):
            if _abandoned(folder):
                shutil.rmtree(folder)
                removed.append(folder)
    return removed


@contextmanager
def _owned(folder: Path) -> Iterator[None]:
    claiming = folder / _CLAIMING
    fd = os.open(claiming, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        note = f"pid {os.getpid()}, started {datetime.now(UTC):%Y-%m-%d %H:%M:%S} UTC\n"
        try:
            os.write(fd, note.encode())
        except OSError as exc:  # a full disk: say which file
            raise OSError(exc.errno, exc.strerror, str(claiming)) from exc
        os.rename(claiming, folder / OWNER)  # named only once locked
        yield
    finally:
        os.close(fd)  # the lock goes with it


def _abandoned(folder: Path) -> bool:
    owner = folder / OWNER
    if not owner.exists():
        # An older release's leftover, or a folder being made right now (still empty then,
        # or holding only the owner file being claimed).
        return any(p.name != _CLAIMING for p in folder.iterdir())
    with owner.open("r", encoding="utf-8") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # its export is running
        return True
