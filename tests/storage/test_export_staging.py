"""The export's staging folders: a killed export's folder is removed by the next export, a
running export's is not; and an up-to-date export writes nothing, so a read-only target is
fine."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from storage.export import export, open_target
from storage.export.staging import OWNER
from tests.disk_support import remount_read_only

# An export that dies with its staging folder half filled: the folder's path, then kill -9.
DYING = """
import sys
from storage.export import open_target
with open_target(sys.argv[1]).staging() as folder:
    (folder / "data_0.tmp").write_bytes(b"half a file")
    print(folder, flush=True)
    sys.stdin.read()
"""


def _killed_export(out: Path) -> Path:
    dying = subprocess.Popen(
        [sys.executable, "-c", DYING, str(out)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])},
    )
    assert dying.stdout is not None and dying.stdin is not None
    folder = Path(dying.stdout.readline().strip())
    dying.kill()
    dying.wait()
    dying.stdin.close()
    dying.stdout.close()
    return folder


def test_the_next_export_removes_the_staging_of_dead_exports_only(
    demo_store: Path, tmp_path: Path
) -> None:
    out = tmp_path / "export"
    export(demo_store, open_target(str(out)))
    dead = _killed_export(out)
    assert (dead / OWNER).is_file() and (dead / "data_0.tmp").is_file()
    older = out / ".export-0123456789abcdef"  # a release before the owner file left it
    older.mkdir()
    (older / "data_0.tmp").write_bytes(b"half")
    target = open_target(str(out))
    with target.staging() as running:  # another export, still running
        report = export(demo_store, target)
        assert not report.changed
        assert not dead.exists() and not older.exists()
        assert running.is_dir()
    assert sorted(p.name for p in out.iterdir() if p.name.startswith(".")) == []


def test_an_up_to_date_export_into_a_read_only_target_writes_nothing(
    demo_store: Path, tiny_disk: Any
) -> None:
    disk = tiny_disk("disk", 4096)
    out = disk / "export"
    assert export(demo_store, open_target(str(out))).changed
    _killed_export(out)  # a leftover it may not remove: not a reason to fail
    before = sorted(p.relative_to(out) for p in out.rglob("*"))
    remount_read_only(disk)
    report = export(demo_store, open_target(str(out)))
    assert not report.changed and report.unchanged > 0
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == before
