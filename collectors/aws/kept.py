"""What the public price files' collection keeps between runs: one JSON file per region in the
provider's state folder (the rows it read and the file's ETag), so that an unchanged file is
not read again. Read back only when whole; written whole or not at all."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


class KeptFiles:
    """The kept files of one kind (`what`: the file they spare reading, for the log lines) in
    `folder`; None keeps nothing (no state folder)."""

    def __init__(self, folder: Path | None, log: Any, what: str) -> None:
        self.folder = folder
        self.log = log
        self.what = what

    def read(self, region: str) -> dict[str, Any] | None:
        """The region's kept object; None when none is kept or it cannot be read."""
        path = self._path(region)
        if path is None or not path.exists():
            return None
        try:
            seen = json.loads(path.read_text())
        except (OSError, ValueError) as exc:  # a damaged state file: read the region again
            self.log.warning("aws: %s: %s; %s is read again", path, exc, self.what)
            return None
        return seen if isinstance(seen, dict) else None

    def write(self, region: str, kept: dict[str, Any]) -> None:
        path = self._path(region)
        if path is None:
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            temporary = path.with_suffix(".tmp")
            temporary.write_text(json.dumps(kept, separators=(",", ":")))
            os.replace(temporary, path)  # a reader never meets half a file
        except OSError as exc:  # only costs a full read next time
            self.log.warning("aws: could not keep %s: %s", path, exc)

    def _path(self, region: str) -> Path | None:
        return None if self.folder is None else self.folder / f"{region}.json"
