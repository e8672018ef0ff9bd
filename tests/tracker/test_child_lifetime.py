"""What outlives whom: a collection's child process dies with the daemon from its first
instant, and a second daemon named through a symlink finds the first one's lock."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from collectors.common import ConfigError
from tests.tracker.daemon_support import wait_until
from tracker.running import state
from tracker.running.state import DaemonLock, daemon_running, lock_path, state_path

# Starts a child the way the daemon starts each collection's, says its PID, then waits to be
# killed. The child would sleep for ten minutes on its own.
PARENT = """
import sys
from tracker.collecting.isolation import start_child
child = start_child([sys.executable, "-c", "import time; time.sleep(600)"])
print(child.pid, flush=True)
sys.stdin.read()
"""


def _gone(pid: int) -> bool:
    """Ended: no such process, or a zombie its new parent has not reaped yet."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


@pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's"
)
def test_a_child_dies_with_its_parent_killed_right_after_starting_it() -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])},
    )
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    try:
        parent.kill()  # kill -9: nothing of the parent's own code runs
        parent.wait()
        wait_until(lambda: _gone(child), f"child {child} to die with its parent", timeout=30)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)
        for pipe in (parent.stdin, parent.stdout):
            if pipe is not None:
                pipe.close()


def test_a_second_daemon_through_a_symlink_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(state, "_ACQUIRE_WAIT_S", 0.0)  # refused at the first try
    real = tmp_path / "data" / "prices.duckdb"
    real.parent.mkdir()
    link = tmp_path / "link.duckdb"
    link.symlink_to(real)
    linked_folder = tmp_path / "elsewhere"
    linked_folder.symlink_to(real.parent, target_is_directory=True)
    assert lock_path(link) == lock_path(real) == lock_path(linked_folder / "prices.duckdb")
    assert state_path(link) == real.parent / "prices.duckdb.daemon.json"

    first = DaemonLock(real)
    first.acquire()
    try:
        assert daemon_running(link)
        for through in (
            link,
            linked_folder / "prices.duckdb",
            real.parent / ".." / "data" / real.name,
        ):
            with pytest.raises(ConfigError, match="another gpu-tracker daemon"):
                DaemonLock(through).acquire()
    finally:
        first.release()
    second = DaemonLock(link)
    second.acquire()  # free again once the first is gone
    second.release()
