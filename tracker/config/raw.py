"""The `[raw]` table, validated: where the raw answers of every collection are kept and for how
long (docs/trust.md, "Raw answers").

The folder defaults to `raw/` in the store's state folder (`<store>.state/raw/`), worked out from
the store's path once the command line has had its say (`raw_dir`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from collectors.common import text
from tracker.config.keys import Key, Kind, Table, duration
from tracker.config.store import store_path

DEFAULT_KEEP = "90d"
_DAY_S = 86400
# Ten years: beyond it a value is a typo.
_MOST_S = 3650 * _DAY_S


@dataclass(frozen=True)
class RawSettings:
    """`dir`: the folder (None: `<store>.state/raw/`); `keep_s`: how long a file no run within
    that age names is kept (0: nothing is kept at all)."""

    dir: Path | None = None
    keep_s: int = 90 * _DAY_S


def parse_raw(raw: Mapping[str, Any], source: Path | None = None) -> RawSettings:
    """[raw]; a relative `dir` is resolved beside the config file `source`, as the store is."""
    got = RAW.read(raw)
    folder: Path | None = got["dir"]
    if folder is not None and not folder.is_absolute() and source is not None:
        folder = source.parent / folder
    return RawSettings(folder, got["keep"])


def state_dir(store: Path) -> Path:
    """The store's state folder: what collectors keep between runs, the raw answers."""
    return store.parent / f"{store.name}.state"


def raw_dir(settings: RawSettings, store: Path) -> Path | None:
    """Where the raw answers of the store at `store` are kept; None when `keep = "0"`."""
    if not settings.keep_s:
        return None
    return raw_home(settings, store)


def raw_home(settings: RawSettings, store: Path) -> Path:
    """Where the raw answers are, whether or not new ones are kept (`reparse` reads the ones
    kept before `keep = "0"` was set)."""
    return settings.dir or state_dir(store) / "raw"


def _folder(value: Any, key: str) -> Path:
    return store_path(text(value, key), key)


RAW = Table(
    "raw",
    (
        Key(
            "dir",
            Kind("a folder path without NUL, control characters or backslashes", _folder),
            None,
            "where raw answers are kept (default: `<store>.state/raw/`, relative paths beside "
            "the config file)",
        ),
        Key(
            "keep",
            duration(_MOST_S, zero=True),
            DEFAULT_KEEP,
            "how long an answer no run names any more is kept; `0` keeps none",
        ),
    ),
)
