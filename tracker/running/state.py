"""What lives beside the store while a daemon runs: its lock and its schedule.

`<store>.daemon.lock` is held (flock) for the daemon's whole life, so a second daemon on the
same store is refused instead of writing beside the first; the kernel drops the lock when
the process dies, even by kill -9, so a crash never leaves a stale lock behind. Both files
live beside the store's real file, whatever symlink the store was named through.

`<store>.daemon.json` is the schedule as the daemon sees it (per provider: interval, backoff,
next run), replaced atomically after every job. `gpu-tracker status` reads it without
touching the DuckDB file, which the daemon may be writing.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from collectors.common import ConfigError

# A `status` probing the lock holds it for a moment: a daemon starting just then waits that out.
_ACQUIRE_WAIT_S = 2.0


@dataclass
class ProviderSchedule:
    interval_s: int
    current_interval_s: int
    failures: int = 0  # consecutive failed runs
    next_run: datetime | None = None
    running_since: datetime | None = None


@dataclass
class DaemonState:
    pid: int
    started_at: datetime
    providers: dict[str, ProviderSchedule] = field(default_factory=dict)
    review_next: datetime | None = None


def lock_path(store: Path) -> Path:
    """Beside the store's real file: a second daemon given the store through a symlink (or a
    path with `..` in it) finds the first one's lock."""
    real = _real(store)
    return real.with_name(real.name + ".daemon.lock")


def state_path(store: Path) -> Path:
    real = _real(store)
    return real.with_name(real.name + ".daemon.json")


def _real(store: Path) -> Path:
    # Every symlink resolved, the store's own too, even where the file does not exist yet.
    return Path(os.path.realpath(store))


class DaemonLock:
    """The one-daemon-per-store lock, held until `release` (or the process ends)."""

    def __init__(self, store: Path) -> None:
        self.path = lock_path(store)
        self._file: IO[str] | None = None

    def acquire(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            handle = self.path.open("a+", encoding="utf-8")
        except OSError as exc:
            raise ConfigError(
                f"storage.path: cannot create the daemon's lock file {self.path}: "
                f"{exc.strerror or exc}"
            ) from exc
        deadline = time.monotonic() + _ACQUIRE_WAIT_S
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    handle.seek(0)
                    holder = handle.read().strip() or "unknown pid"
                    handle.close()
                    raise ConfigError(
                        f"another gpu-tracker daemon ({holder}) is already running on this "
                        f"store ({self.path.name[: -len('.daemon.lock')]}); stop it first, or "
                        "point this one at another storage.path"
                    ) from None
                time.sleep(0.05)
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()}, started {datetime.now(UTC):%Y-%m-%d %H:%M:%S} UTC\n")
        handle.flush()
        self._file = handle

    def release(self) -> None:
        if self._file is not None:
            fcntl.flock(self._file, fcntl.LOCK_UN)
            self._file.close()
            self._file = None


def daemon_running(store: Path) -> bool:
    """Whether a daemon holds the store's lock right now."""
    path = lock_path(store)
    if not path.exists():
        return False
    with path.open("r", encoding="utf-8") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
    return False


def write_state(store: Path, state: DaemonState) -> None:
    """Replace the schedule file atomically: a reader sees the old one or the new one."""
    path = state_path(store)
    text = json.dumps(asdict(state), default=_iso, indent=1)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        # mkstemp makes it private; it holds no secret, and `status` run by another user who
        # may read the store should see the schedule too.
        os.fchmod(fd, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def read_state(store: Path) -> DaemonState | None:
    """The last schedule a daemon wrote for `store`, or None (never ran, unreadable)."""
    try:
        raw = json.loads(state_path(store).read_text(encoding="utf-8"))
        providers = {
            name: ProviderSchedule(
                interval_s=int(p["interval_s"]),
                current_interval_s=int(p["current_interval_s"]),
                failures=int(p.get("failures", 0)),
                next_run=_parse(p.get("next_run")),
                running_since=_parse(p.get("running_since")),
            )
            for name, p in raw["providers"].items()
        }
        return DaemonState(
            pid=int(raw["pid"]),
            started_at=_parse(raw["started_at"]) or datetime.now(UTC),
            providers=providers,
            review_next=_parse(raw.get("review_next")),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _iso(value: Any) -> str:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"not JSON-able: {value!r}")


def _parse(value: Any) -> datetime | None:
    return datetime.fromisoformat(value) if value else None
