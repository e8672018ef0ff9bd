"""`gpu-tracker demo`: the whole pipeline offline, on recorded API answers bundled in the package.

Each folder of `demo_data/` is one provider's recording (wire-format answers + `exchanges.json`)
and a `demo.json` saying where its API lives under the server and which regions to ask for.
A loopback server replays each recording, the real collectors are pointed at it, and their
prices go into a throw-away store. No network, no credentials.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from collectors import REGISTRY
from tracker.config import Config, from_dict
from tracker.replay import Recording, ReplayServer

DEMO_DATA = Path(__file__).parent / "demo_data"
# The rate the shipped config.toml carries, so the demo shows CNY prices in USD too.
DEMO_FX = {
    "CNY": {
        "units_per_usd": 7.0197,
        "date": "2026-01-08",
        "source": "PBOC central parity (CFETS), 2026-01-08",
    }
}


@dataclass(frozen=True)
class DemoSetup:
    config: Config
    env: dict[str, str]
    servers: dict[str, ReplayServer]


def recordings(root: Path = DEMO_DATA) -> dict[str, Path]:
    """Provider name -> its demo recording folder, for every registered provider that has one."""
    return {
        folder.name: folder
        for folder in sorted(root.iterdir())
        if folder.name in REGISTRY and (folder / "exchanges.json").exists()
    }


@contextmanager
def demo_setup(store_path: Path, root: Path = DEMO_DATA) -> Iterator[DemoSetup]:
    """Loopback servers for every demo recording, and a config pointing the collectors at them."""
    with ExitStack() as stack:
        servers, providers, env = replay_providers(stack, root)
        config = from_dict(
            {"storage": {"path": str(store_path)}, "providers": providers, "fx": DEMO_FX},
            source=None,
        )
        yield DemoSetup(config, env, servers)


def replay_providers(
    stack: ExitStack, root: Path = DEMO_DATA
) -> tuple[dict[str, ReplayServer], dict[str, Any], dict[str, str]]:
    """Start a loopback server per recording (stopped when `stack` closes): the servers, the
    `[providers]` table pointing at them (as config.toml would hold it) and the environment
    with the recordings' stand-in credentials. The daemon's tests and benchmark write it out."""
    servers: dict[str, ReplayServer] = {}
    providers: dict[str, Any] = {name: {"enabled": False} for name in REGISTRY}
    env: dict[str, str] = {}
    for name, folder in recordings(root).items():
        server = ReplayServer(Recording.load(folder)).start()
        stack.callback(server.stop)
        servers[name] = server
        meta = json.loads((folder / "demo.json").read_text())
        providers[name] = {
            "endpoint": server.url + meta.get("endpoint_path", ""),
            "regions": meta.get("regions", []),
            "timeout": 10,
        }
        env.update(meta.get("env", {}))
    return servers, providers, env
