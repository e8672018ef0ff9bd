"""A newcomer's first run with no credential variable at all: Scaleway's public catalog needs
none, so `collect` (config.toml's default, enabled) stores its prices from the recording on
loopback, and `latest` shows them in EUR."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from collectors import REGISTRY
from storage.query import query
from tracker.cli import cli
from tracker.collecting.replay import Recording, ReplayServer

RECORDING = Path(__file__).parents[2] / "tracker" / "demo_data" / "scaleway"


@pytest.fixture(autouse=True)
def no_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for info in REGISTRY.values():
        for variable in (*info.credential_env.values(), *info.optional_credential_env.values()):
            monkeypatch.delenv(variable, raising=False)


def test_scaleway_collects_with_no_key(tmp_path: Path) -> None:
    server = ReplayServer(Recording.load(RECORDING)).start()
    try:
        config = tmp_path / "config.toml"
        others = (f"[providers.{name}]\nenabled = false" for name in REGISTRY if name != "scaleway")
        config.write_text(
            "\n".join(
                [
                    '[storage]\npath = "prices.duckdb"',
                    f'[providers.scaleway]\nendpoint = "{server.url}"',
                    *others,
                ]
            )
            + "\n"
        )
        collected = CliRunner().invoke(cli, ["--config", str(config), "collect"])
        assert collected.exit_code == 0, collected.output
        assert server.unmatched == []
    finally:
        server.stop()
    store = tmp_path / "prices.duckdb"
    runs = query(store, "SELECT provider, status, records FROM collection_runs")
    assert runs.rows == [("scaleway", "ok", 17)]
    latest = CliRunner().invoke(
        cli, ["--config", str(config), "latest", "--format", "json", "--provider", "scaleway"]
    )
    assert latest.exit_code == 0, latest.output
    offers = json.loads(latest.stdout)
    sxm = [o for o in offers if o["instance_type"] == "H100-SXM-8-80G"]
    assert [(o["currency"], o["per_hour"], o["zone"]) for o in sxm] == [("EUR", 23.028, "fr-par-2")]
    assert len(offers) == 17 and {o["per_gpu_hour"] for o in sxm} == {23.028 / 8}
