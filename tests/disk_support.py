"""A small disk for the full-disk tests: filled on purpose, or made read-only (the `tiny_disk`
fixture of tests/conftest.py mounts it)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest


def fill(disk: Path, leave_kib: int = 0) -> Path:
    """Fill `disk` with one file until at most `leave_kib` KiB are left: the filler's path."""
    filler = disk / "filler"
    with filler.open("wb", buffering=0) as out:
        for chunk in (1 << 20, 1 << 16, 1 << 12):
            while shutil.disk_usage(disk).free - chunk >= leave_kib * 1024:
                try:
                    out.write(b"\0" * chunk)
                except OSError:
                    break
    return filler


def remount_read_only(disk: Path) -> None:
    """Make a `tiny_disk` read-only (as root, a read-only mount is the only refusal)."""
    command = ["mount", "-o", "remount,ro", str(disk)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot remount a tmpfs read-only here: {done.stderr.strip()}")
