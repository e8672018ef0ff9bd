"""Running `gpu-tracker daemon` as a real process against loopback replays of the provider APIs.

`replayed(tmp_path, ...)` starts a replay server per bundled demo recording and writes a
config.toml pointing the collectors at them; `DaemonProcess` runs the daemon on it and
collects its log lines (stderr) as they come.

Nothing here waits a fixed time: a test waits for a log line, a request reaching a server or
a state in the store, with a generous deadline that only a broken daemon reaches. `hold` keeps
a provider's answers back until the test lets them go, so "a signal while a collection is in
flight" is a fact, not a guess about how long a delay lasts on a busy machine.
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

from tracker.collecting.demo import DEMO_FX, replay_providers
from tracker.collecting.replay import ReplayServer


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
        try:
            yield Replayed(config_path, store, env, servers)
        finally:  # answers still held back go out, so no server thread waits forever
            for server in servers.values():
                for exchange in server.exchanges:
                    if exchange.hold is not None:
                        exchange.hold.set()


def hold(setup: Replayed, provider: str) -> threading.Event:
    """From now on `provider`'s server keeps every answer until the returned event is set."""
    release = threading.Event()
    for exchange in setup.servers[provider].exchanges:
        exchange.hold = release
    return release


def wait_until(test: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    """Wait for a state (a file, a request, a row); the deadline is only a safety net."""
    deadline = time.monotonic() + timeout
    while not test():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.02)


def wait_for_request(setup: Replayed, provider: str) -> None:
    """Until `provider`'s server has been asked something (its collection is in flight)."""
    server = setup.servers[provider]
    wait_until(lambda: bool(server.requests), f"a request to the {provider} server")


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

    def said(self, needle: str) -> bool:
        return self.count(needle) > 0

    def signal(self, sig: int, *, group: bool = False) -> None:
        if group:
            os.killpg(self.proc.pid, sig)
        else:
            self.proc.send_signal(sig)

    def wait(self, timeout: float = 60.0) -> int:
        """The exit status; and every line it wrote is in `lines`."""
        code = self.proc.wait(timeout)
        self._reader.join(30)
        return code

    def stop(self, sig: int, timeout: float = 60.0, *, group: bool = False) -> int:
        self.signal(sig, group=group)
        return self.wait(timeout)

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
