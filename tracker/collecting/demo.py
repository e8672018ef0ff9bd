"""`gpu-tracker demo`: the whole pipeline offline, on recorded API answers bundled in the package.

Each folder of `demo_data/` is one provider's recording (wire-format answers + `exchanges.json`),
the same one its tests parse, and a `demo.json` saying where its API lives under the server,
which regions to ask for and whether its prices are `illustrative` (real formats, invented
numbers). A loopback server replays each recording, the real collectors are pointed at it, and
their prices go into a throw-away store. No network, no credentials.

The demo collects twice so the history has something to show: first as of six months ago (the
review's default look-back), with each provider's `earlier.json` exchanges answering before its
current ones (the prices that have moved since), then as of now from the current recording.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dateutil.relativedelta import relativedelta

from collectors import REGISTRY
from tracker.collecting import pipeline
from tracker.collecting.replay import Recording, ReplayServer
from tracker.config import Config, from_dict

DEMO_DATA = Path(__file__).parents[1] / "demo_data"
# The earlier snapshot: each folder's prices of then, answered before its current exchanges.
EARLIER = "earlier.json"
# Dated at the review's default look-back, so `review` right after the demo has a 'then'.
EARLIER_BY = relativedelta(months=6)
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
    """The demo's config, stand-in credentials and loopback servers, one per recording folder."""

    config: Config
    env: dict[str, str]
    servers: dict[str, ReplayServer]
    folders: dict[str, Path]

    @property
    def illustrative(self) -> list[str]:
        """The providers whose recorded prices are invented (real formats, made-up numbers)."""
        return [name for name, folder in self.folders.items() if _meta(folder).get("illustrative")]

    def replay(self, *, earlier: bool) -> None:
        """Serve each provider's earlier snapshot (its current answers where nothing moved), or
        its current recording."""
        for name, server in self.servers.items():
            folder = self.folders[name]
            current = Recording.load(folder)
            if earlier and (folder / EARLIER).exists():
                server.serve(Recording.load(folder, EARLIER), current)
            else:
                server.serve(current)

    def collect_earlier(
        self, now: datetime | None = None
    ) -> tuple[datetime, list[pipeline.Outcome]]:
        """Collect the earlier snapshot as of six months before `now`, then switch every server
        back to the current recording: the date it was collected as, and the outcomes."""
        at = (now or datetime.now(UTC)) - EARLIER_BY
        self.replay(earlier=True)
        try:
            return at, pipeline.collect(self.config, env=self.env, now=at)
        finally:
            self.replay(earlier=False)


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
        folders = recordings(root)
        yield DemoSetup(config, env, servers, {name: folders[name] for name in servers})


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
        meta = _meta(folder)
        url = server.url
        if meta.get("front"):  # an API that is not HTTP (Nebius' gRPC): a front over the replay
            front = _front(meta["front"], server)
            stack.callback(front.stop)
            url = front.url
        providers[name] = {"endpoint": url + meta.get("endpoint_path", ""), "timeout": 10}
        # Keys naming the server's own URL ("{url}/spot.js"): AWS's public files, for one.
        for key, value in meta.get("options", {}).items():
            providers[name][key] = value.replace("{url}", server.url)
        if meta.get("regions"):  # none listed: the provider's own (an empty list is refused)
            providers[name]["regions"] = meta["regions"]
        env.update(meta.get("env", {}))
    return servers, providers, env


def earlier_summary(at: datetime, outcomes: list[pipeline.Outcome]) -> list[str]:
    """The lines the demo prints about its earlier snapshot: when it is dated, what failed."""
    lines = [f"demo: the snapshot of {at:%Y-%m-%d} (six months ago) is stored; now today's"]
    lines += [f"demo: {o.provider} {o.status}: {o.error}" for o in outcomes if o.status != "ok"]
    return lines


def illustrative_note(providers: list[str]) -> str:
    """The line under the demo's tables that tells invented prices from recorded ones."""
    return (
        f"illustrative prices: {', '.join(providers)} (their APIs' real formats, invented "
        "numbers); the other recordings hold published list prices where a source gave them "
        "and plausible fill-ins elsewhere, as each recording's README says"
    )


def _front(target: str, server: ReplayServer) -> Any:
    """The started front `target` ("module:function") builds over `server`: it answers what
    the replay matches, in its API's own protocol, on a URL of its own."""
    module, _, function = target.partition(":")
    return getattr(importlib.import_module(module), function)(server).start()


def _meta(folder: Path) -> dict[str, Any]:
    meta: dict[str, Any] = json.loads((folder / "demo.json").read_text())
    return meta
