"""The daemon over many cycles: is its memory flat, and what does one cycle cost in CPU?

Loopback servers replay the bundled recordings of all seven providers (this process serves
them); `gpu-tracker daemon` runs as its own process with every provider on a 1 s interval, so
it collects back to back. A cycle is complete when every provider has logged one more good
run; after each, the daemon's resident set size (RSS) and CPU time (user + system) are read.

Figures:
- RSS at cycle 10 and at the last cycle, and the growth between them (target: within 5%,
  and under 250 MB);
- CPU seconds per cycle (all seven providers collected, stored and alerts evaluated; the
  collector child processes included), the median over cycles after the tenth;
- the peak RSS of the daemon and its collector children together, sampled every 20 ms;
- baseline, measured in the same run: one `gpu-tracker collect` of the same seven providers
  as a fresh process (start-up, imports, one collection, exit): its peak RSS and CPU time.

    python bench/bench_daemon.py [--cycles 100]
"""

from __future__ import annotations

import argparse
import itertools
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import ExitStack, suppress
from pathlib import Path
from typing import Any

import psutil
import tomli_w

from tracker.collecting.demo import DEMO_FX, replay_providers

MB = 1024 * 1024


def _config(folder: Path, providers: dict[str, Any], interval: str) -> Path:
    for table in providers.values():
        if table.get("enabled", True):
            table["interval"] = interval
    document = {
        "storage": {"path": str(folder / "prices.duckdb")},
        "providers": providers,
        "fx": DEMO_FX,
        "daemon": {"jitter": "0s"},
        "review": {"enabled": False},
    }
    path = folder / "config.toml"
    path.write_text(tomli_w.dumps(document), encoding="utf-8")
    return path


def _baseline(config: Path, env: dict[str, str]) -> tuple[float, float]:
    """Peak RSS (MB) and CPU seconds of one `gpu-tracker collect` process (the kernel's own
    accounting of this process's children: the first child, so the peak is its own)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(
        [sys.executable, "-m", "tracker", "--config", str(config), "collect"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return after.ru_maxrss / 1024, cpu  # ru_maxrss is in KiB on Linux


class Daemon:
    """`gpu-tracker daemon` with its log lines counted per provider as they come."""

    def __init__(self, config: Path, env: dict[str, str], providers: list[str]) -> None:
        self.proc = psutil.Popen(
            [sys.executable, "-m", "tracker", "--config", str(config), "daemon"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.oks = dict.fromkeys(providers, 0)
        self.failures: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            for name in self.oks:
                if f" {name} ok: " in line:
                    self.oks[name] += 1
                elif f" {name} failed" in line:
                    self.failures.append(line.strip())

    def cycles(self) -> int:
        return min(self.oks.values())

    def sample(self) -> tuple[float, float]:
        """The daemon's own RSS (MB), and the CPU seconds of it and its finished children
        (each collection fetches and parses in a child process)."""
        times = self.proc.cpu_times()
        cpu = times.user + times.system + times.children_user + times.children_system
        return self.proc.memory_info().rss / MB, cpu

    def tree_rss(self) -> float:
        """The RSS of the daemon and the collector children it has right now (MB)."""
        total = self.proc.memory_info().rss
        for child in self.proc.children(recursive=True):
            with suppress(psutil.NoSuchProcess):
                total += child.memory_info().rss
        return total / MB


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cycles", type=int, default=100)
    args = parser.parse_args()
    with ExitStack() as stack, tempfile.TemporaryDirectory(prefix="bench-daemon-") as tmp:
        servers, providers, env = replay_providers(stack)
        env = {**os.environ, **env}
        base_dir = Path(tmp) / "baseline"
        base_dir.mkdir()
        base_rss, base_cpu = _baseline(_config(base_dir, _copy(providers), "1h"), env)
        folder = Path(tmp) / "daemon"
        folder.mkdir()
        daemon = Daemon(_config(folder, _copy(providers), "1s"), env, sorted(servers))
        samples: list[tuple[float, float]] = []
        tree_peak = 0.0
        started = time.monotonic()
        try:
            while len(samples) < args.cycles:
                if daemon.proc.poll() is not None:
                    raise SystemExit(f"the daemon exited {daemon.proc.returncode}")
                if daemon.cycles() > len(samples):
                    samples.append(daemon.sample())
                tree_peak = max(tree_peak, daemon.tree_rss())
                time.sleep(0.02)
        finally:
            daemon.proc.send_signal(signal.SIGTERM)
            daemon.proc.wait(60)
        seconds = time.monotonic() - started
        _report(samples, tree_peak, (base_rss, base_cpu), seconds, daemon.failures)


def _copy(providers: dict[str, Any]) -> dict[str, Any]:
    return {name: dict(table) for name, table in providers.items()}


def _report(
    samples: list[tuple[float, float]],
    tree_peak: float,
    baseline: tuple[float, float],
    seconds: float,
    failures: list[str],
) -> None:
    base_rss, base_cpu = baseline
    rss = [s[0] for s in samples]
    cpu = [b[1] - a[1] for a, b in itertools.pairwise(samples)]
    at10, last = rss[min(9, len(rss) - 1)], rss[-1]
    steady = cpu[9:] or cpu
    print(f"{len(samples)} cycles of 7 providers in {seconds:.0f} s; failed runs: {len(failures)}")
    print(f"RSS cycle 1: {rss[0]:.1f} MB, cycle 10: {at10:.1f} MB, cycle {len(rss)}: {last:.1f} MB")
    print(f"RSS growth cycle 10 -> {len(rss)}: {100 * (last - at10) / at10:+.1f} %")
    print(f"RSS max over all cycles: {max(rss):.1f} MB (target: under 250 MB)")
    print(f"peak RSS of the daemon and its collector children together: {tree_peak:.1f} MB")
    print(
        f"CPU per cycle, children included (median after cycle 10): "
        f"{statistics.median(steady):.3f} s"
    )
    print(
        f"baseline, one `gpu-tracker collect` process: {base_cpu:.3f} s CPU, {base_rss:.1f} MB peak"
    )
    for line in failures[:5]:
        print("  failed:", line)


if __name__ == "__main__":
    main()
