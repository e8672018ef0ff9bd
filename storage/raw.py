"""The raw answers a collection received, kept as received: compressed, content-addressed.

Each answer is stored once under the SHA-256 of its bytes (`<sha256>.gz` in one folder, by
default `<store>.state/raw/`), so an answer identical to one already kept costs no new space
and a file whose bytes no longer match its name is found out on reading. A run lists its
answers in `collection_runs.raw` (JSON, in the order they were received); `gpu-tracker runs`
shows and prints them, `gpu-tracker reparse` rebuilds history from them (docs/trust.md).

Writes are atomic (a temporary file renamed into place), so a reader never sees half a file,
and two processes keeping the same answer at once both end with the one whole file.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from collectors.common import StoreError

SUFFIX = ".gz"
# Fast rather than small: an answer is compressed once, on the collection's own clock, and
# the content addressing already saves what repeats from run to run.
_LEVEL = 1  # a third of level 6's time for a third more bytes (docs/performance.md)


class RawMissing(StoreError):
    """A raw answer a run names is not (or no longer) kept."""


class RawDamaged(StoreError):
    """A kept raw answer whose bytes no longer match the SHA-256 it is named by."""


@dataclass(frozen=True)
class Kept:
    """One answer of a run: its name in the run (the request it answered), its SHA-256 and
    its size in bytes as received."""

    name: str
    sha256: str
    bytes: int

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "sha256": self.sha256, "bytes": self.bytes}


def listing(kept: Sequence[Kept] | None) -> str | None:
    """`collection_runs.raw` of a run: its answers in order, as JSON (None: none kept)."""
    if kept is None:
        return None
    return json.dumps([k.as_json() for k in kept], separators=(",", ":"))


def read_listing(value: str | None) -> list[Kept]:
    """The answers `collection_runs.raw` lists ([] for a run that kept none)."""
    if not value:
        return []
    return [Kept(str(k["name"]), str(k["sha256"]), int(k["bytes"])) for k in json.loads(value)]


class RawStore:
    """The folder of kept answers."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def path(self, sha256: str) -> Path:
        if len(sha256) != 64 or any(c not in "0123456789abcdef" for c in sha256):
            raise RawMissing(f"{sha256!r} is not a SHA-256 in hex")
        return self.folder / f"{sha256}{SUFFIX}"

    def put(self, name: str, data: bytes) -> Kept:
        """Keep `data` (a no-op when the same bytes are kept already); what the run lists."""
        sha256 = hashlib.sha256(data).hexdigest()
        target = self.path(sha256)
        if not target.exists():
            self.folder.mkdir(parents=True, exist_ok=True)
            fd, staging = tempfile.mkstemp(dir=self.folder, prefix=".", suffix=".part")
            try:
                # mtime=0: the same bytes compress to the same file, whenever kept.
                with (
                    os.fdopen(fd, "wb") as out,
                    gzip.GzipFile(fileobj=out, mode="wb", compresslevel=_LEVEL, mtime=0) as gz,
                ):
                    gz.write(data)
                os.replace(staging, target)
            except BaseException:
                Path(staging).unlink(missing_ok=True)
                raise
        return Kept(name, sha256, len(data))

    def get(self, sha256: str) -> bytes:
        """The bytes kept under `sha256`; RawMissing, or RawDamaged when they do not match."""
        path = self.path(sha256)
        try:
            with gzip.open(path, "rb") as gz:
                data = gz.read()
        except FileNotFoundError as exc:
            raise RawMissing(f"raw answer {sha256} is not kept (no {path})") from exc
        except (OSError, EOFError) as exc:  # a truncated or overwritten file
            raise RawDamaged(f"raw answer {path} cannot be read: {exc}") from exc
        if hashlib.sha256(data).hexdigest() != sha256:
            raise RawDamaged(f"raw answer {path}: its bytes no longer match its SHA-256")
        return data

    def payloads(self, kept: Sequence[Kept]) -> dict[str, Any]:
        """A run's answers as its collector's `parse` takes them: every kept answer is JSON
        text, decoded here, under its name, in the order received. Every file is read and
        verified before any is decoded (RawMissing, RawDamaged)."""
        texts = [(k.name, self.get(k.sha256)) for k in kept]
        return {name: json.loads(data) for name, data in texts}

    def has(self, sha256: str) -> bool:
        return self.path(sha256).exists()

    def files(self) -> Iterable[Path]:
        """Every kept answer's file (not a write under way)."""
        if not self.folder.is_dir():
            return ()
        return (p for p in self.folder.iterdir() if p.name.endswith(SUFFIX) and p.name[0] != ".")
