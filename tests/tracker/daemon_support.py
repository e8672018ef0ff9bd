"""Running `gpu-tracker daemon` as a real process against loopback replays of the provider APIs.

`replayed(tmp_path, ...)` starts a replay server per bundled demo recording and writes a
config.toml pointing the collectors at them; `DaemonProcess` runs the daemon on it and
collects its log lines (stderr) as they come.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomli_w

from tracker.demo import DEMO_FX, replay_providers
from tracker.replay import ReplayServer


@dataclass
class Replayed:
    config_path: Path
    store: Path
    env: dict[str, str]
    servers: dict[str, ReplayServer]


@contextmanager
def replayed(
    tmp_path: Path,
    *,
    names: tuple[str, ...] | None = None,
    interval: str = "2s",
    extra: dict[str, Any] | None = None,
    overrides: dict[str, dict[str, Any]] | None = None,
) -> Iterator[Replayed]:
    """Loopback servers for the demo recordings (all, or `names`) and a config.toml for them."""
    with ExitStack() as stack:
        servers, providers, env = replay_providers(stack)
        for name, table in providers.items():
            if names is not None and name not in names:
                table.clear()
                table["enabled"] = False
            elif table.get("enabled", True):
                table["interval"] = interval
                table.update((overrides or {}).get(name, {}))
        store = tmp_path / "prices.duckdb"
        document: dict[str, Any] = {
            "storage": {"path": str(store)},
            "providers": providers,
            "fx": DEMO_FX,
            "daemon": {"jitter": "0s", "shutdown_grace": "5s"},
            "review": {"enabled": False},
        }
        for key, value in (extra or {}).items():
            document.setdefault(key, {}).update(value)
        config_path = tmp_path / "config.toml"
        config_path.write_text(tomli_w.dumps(document), encoding="utf-8")
        yield Replayed(config_path, store, env, servers)


def gpu_tracker(config: Path, *args: str, env: dict[str, str] | None = None) -> list[str]:
    return [sys.executable, "-m", "tracker", "--config", str(config), *args]


class DaemonProcess:
    """`gpu-tracker daemon` in a subprocess; its stderr lines gathered in `lines`."""

    def __init__(self, setup: Replayed, *args: str, own_group: bool = False) -> None:
        env = {**os.environ, **setup.env, "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(
            gpu_tracker(setup.config_path, "daemon", *args),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            # A process group of its own, so a test can signal it as a terminal or systemd
            # would signal theirs.
            start_new_session=own_group,
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        # EOF comes when every holder of the pipe is gone: the daemon and its children.
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, test: Callable[[list[str]], bool], timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while not test(list(self.lines)):
            if self.proc.poll() is not None:
                self._reader.join(2)
                raise AssertionError(f"daemon exited {self.proc.returncode}:\n{self.text()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting; daemon said:\n{self.text()}")
            time.sleep(0.05)

    def count(self, needle: str) -> int:
        return sum(needle in line for line in list(self.lines))

    def stop(self, sig: int, timeout: float = 30.0, *, group: bool = False) -> int:
        if group:
            os.killpg(self.proc.pid, sig)
        else:
            self.proc.send_signal(sig)
        code = self.proc.wait(timeout)
        self._reader.join(5)
        return code

    def __enter__(self) -> DaemonProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def text(self) -> str:
        return "\n".join(self.lines)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self._reader.join(10)  # before closing the stream it reads
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
