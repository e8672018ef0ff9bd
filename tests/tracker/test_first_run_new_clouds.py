"""A newcomer's first run with the four clouds of issue 18 and no credentials at all: no
credential variable set, `collect` of all four against their recordings on loopback. Oracle
Cloud, Vultr and Vast.ai publish without a key and are stored; RunPod asks for one and is
skipped with one line naming the variable; the run succeeds and `latest` shows the three."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from collectors import REGISTRY
from storage.query import query
from tracker.cli import cli
from tracker.collecting.replay import Recording, ReplayServer

RECORDINGS = Path(__file__).parents[2] / "tracker" / "demo_data"
NEW = ("oci", "vultr", "vastai", "runpod")


@pytest.fixture(autouse=True)
def no_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for variables in (info.credential_env for info in REGISTRY.values()):
        for variable in variables.values():
            monkeypatch.delenv(variable, raising=False)
    monkeypatch.setattr(time, "sleep", lambda seconds: None)


@pytest.fixture
def servers() -> Iterator[dict[str, ReplayServer]]:
    started = {name: ReplayServer(Recording.load(RECORDINGS / name)).start() for name in NEW}
    yield started
    for server in started.values():
        server.stop()


def test_the_public_clouds_collect_with_no_key_and_runpod_is_one_line(
    servers: dict[str, ReplayServer], tmp_path: Path
) -> None:
    urls = {name: server.url for name, server in servers.items()}
    lines = [
        '[storage]\npath = "prices.duckdb"',
        f'[providers.oci]\nendpoint = "{urls["oci"]}"\nshapes_endpoint = "{urls["oci"]}"',
        'regions = ["us-ashburn-1"]',
        *(f'[providers.{name}]\nendpoint = "{urls[name]}"' for name in NEW[1:]),
        *(f"[providers.{name}]\nenabled = false" for name in REGISTRY if name not in NEW),
    ]
    config = tmp_path / "config.toml"
    config.write_text("\n".join(lines) + "\n")

    collected = CliRunner().invoke(cli, ["--config", str(config), "collect"])
    assert collected.exit_code == 0, collected.output
    skipped = [line for line in collected.output.splitlines() if "skipped:" in line]
    assert skipped == ["runpod skipped: runpod: no credentials; set RUNPOD_API_KEY"]
    assert servers["runpod"].requests == []  # nothing asked without the key
    runs = query(
        tmp_path / "prices.duckdb",
        "SELECT provider, status FROM collection_runs ORDER BY provider",
    ).rows
    assert runs == [("oci", "ok"), ("runpod", "skipped"), ("vastai", "ok"), ("vultr", "ok")]

    latest = CliRunner().invoke(
        cli, ["--config", str(config), "latest", "--format", "json", "--limit", "100"]
    )
    assert latest.exit_code == 0, latest.output
    assert {offer["provider"] for offer in json.loads(latest.stdout)} == {"oci", "vastai", "vultr"}
