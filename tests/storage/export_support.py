"""What the export tests share: a store built by the real pipeline from the demo's recordings
(the snapshot of six months before T0, then T0), later collections through the same replay
servers, reading an export back with DuckDB, and a filesystem that records what is done to it."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pyarrow.fs as pafs

from tracker.collecting import pipeline
from tracker.collecting.demo import DemoSetup, demo_setup

# Mid-month, so an hour or two later is the same month (the partitions are by month); after
# the recordings' own spot timestamps, which a collection dated earlier would skip as future.
T0 = datetime(2027, 1, 15, 6, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)


def build_demo_store(path: Path) -> Path:
    with demo_setup(path) as setup:
        setup.collect_earlier(now=T0)
        outcomes = pipeline.collect(setup.config, env=setup.env, now=T0)
    assert all(o.status == "ok" for o in outcomes), outcomes
    return path


def copy_store(source: Path, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copy(source, folder / "prices.duckdb"))


@contextmanager
def later(store: Path) -> Iterator[DemoSetup]:
    """The demo's replay servers and config, pointed at `store`, for more collections."""
    with demo_setup(store) as setup:
        yield setup


def collect(setup: DemoSetup, at: datetime, *names: str, earlier: bool = False) -> None:
    """One collection at `at`; with `earlier`, the servers answer the old snapshot's prices (a
    change back, for the providers whose prices moved)."""
    setup.replay(earlier=earlier)
    try:
        outcomes = pipeline.collect(setup.config, names, env=setup.env, now=at)
    finally:
        setup.replay(earlier=False)
    assert all(o.status == "ok" for o in outcomes), outcomes


def columns(store: Path, view: str = "prices") -> list[str]:
    with duckdb.connect(str(store), read_only=True) as con:
        return [str(row[0]) for row in con.execute(f"DESCRIBE {view}").fetchall()]


def differences(store: Path, exported: str, view: str = "prices") -> tuple[int, int, int]:
    """(rows of `view`, rows only in the view, rows only in the export), reading `exported` (a
    DuckDB file expression) with hive partitioning, column by column by name."""
    names = ", ".join(f'"{c}"' for c in columns(store, view))
    with duckdb.connect(str(store), read_only=True) as con:
        con.execute("SET TimeZone = 'UTC'")
        read = f"read_parquet({exported}, hive_partitioning = true)"
        total = con.execute(f"SELECT count(*) FROM {view}").fetchall()[0][0]
        only = "SELECT count(*) FROM (SELECT {n} FROM {a} EXCEPT ALL SELECT {n} FROM {b})"
        missing = con.execute(only.format(n=names, a=view, b=read)).fetchall()[0][0]
        extra = con.execute(only.format(n=names, a=read, b=view)).fetchall()[0][0]
    return total, missing, extra


def open_partitions(store: Path) -> set[tuple[str, str]]:
    """(provider, month of valid_from) of every partition holding a current price."""
    with duckdb.connect(str(store), read_only=True) as con:
        con.execute("SET TimeZone = 'UTC'")
        rows = con.execute(
            "SELECT DISTINCT provider, strftime(valid_from, '%Y-%m') FROM prices "
            "WHERE valid_to IS NULL"
        ).fetchall()
    return {(str(p), str(m)) for p, m in rows}


def stamps(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under `root`: (inode, mtime in ns), to tell a rewritten file from a kept one."""
    return {
        str(p.relative_to(root)): (p.stat().st_ino, p.stat().st_mtime_ns)
        for p in root.rglob("*")
        if p.is_file()
    }


class Recording(pafs.FileSystemHandler):  # type: ignore[misc]
    """A filesystem (local unless given) that records every write, move and delete done
    through it."""

    def __init__(self, fs: pafs.FileSystem | None = None) -> None:
        self.fs = fs or pafs.LocalFileSystem()
        self.ops: list[tuple[str, ...]] = []

    def get_type_name(self) -> str:
        return "recording"

    def normalize_path(self, path: str) -> str:
        return path

    def get_file_info(self, paths: list[str]) -> Any:
        return self.fs.get_file_info(paths)

    def get_file_info_selector(self, selector: pafs.FileSelector) -> Any:
        return self.fs.get_file_info(selector)

    def create_dir(self, path: str, recursive: bool) -> None:
        self.fs.create_dir(path, recursive=recursive)

    def delete_dir(self, path: str) -> None:
        self.ops.append(("delete_dir", path))
        self.fs.delete_dir(path)

    def delete_dir_contents(self, path: str, missing_dir_ok: bool = False) -> None:
        self.ops.append(("delete_dir_contents", path))
        self.fs.delete_dir_contents(path, missing_dir_ok=missing_dir_ok)

    def delete_root_dir_contents(self) -> None:
        raise AssertionError("the export never empties a root")

    def delete_file(self, path: str) -> None:
        self.ops.append(("delete", path))
        self.fs.delete_file(path)

    def move(self, src: str, dest: str) -> None:
        self.ops.append(("move", src, dest))
        self.fs.move(src, dest)

    def copy_file(self, src: str, dest: str) -> None:
        self.ops.append(("copy", src, dest))
        self.fs.copy_file(src, dest)

    def open_input_stream(self, path: str) -> Any:
        return self.fs.open_input_stream(path)

    def open_input_file(self, path: str) -> Any:
        return self.fs.open_input_file(path)

    def open_output_stream(self, path: str, metadata: Any) -> Any:
        self.ops.append(("write", path))
        return self.fs.open_output_stream(path, metadata=metadata)

    def open_append_stream(self, path: str, metadata: Any) -> Any:
        raise AssertionError("the export never appends")
