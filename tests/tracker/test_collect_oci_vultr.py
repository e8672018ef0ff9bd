"""Oracle Cloud and Vultr through the real CLI with no credentials at all: `collect` against
their recordings on loopback into a real DuckDB file, then `latest` and the store's own views.
One failing provider (Vultr's second page answering 500) leaves the other's prices stored."""

from __future__ import annotations

import json
import shutil
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from collectors import REGISTRY
from storage.query import query
from tracker.cli import cli
from tracker.collecting.replay import Recording, ReplayServer

RECORDINGS = Path(__file__).parents[2] / "tracker" / "demo_data"


@pytest.fixture(autouse=True)
def no_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for variables in (info.credential_env for info in REGISTRY.values()):
        for variable in variables.values():
            monkeypatch.delenv(variable, raising=False)
    monkeypatch.setattr(time, "sleep", lambda seconds: None)  # a retried 500 is not waited


def serve(folder: Path) -> ReplayServer:
    return ReplayServer(Recording.load(folder)).start()


def write_config(tmp_path: Path, oci: str, vultr: str) -> Path:
    lines = [
        '[storage]\npath = "prices.duckdb"',
        f'[providers.oci]\nendpoint = "{oci}"\nshapes_endpoint = "{oci}"\ntimeout = 5',
        'regions = ["us-ashburn-1"]',
        f'[providers.vultr]\nendpoint = "{vultr}"\ntimeout = 5',
    ]
    lines += [f"[providers.{n}]\nenabled = false" for n in REGISTRY if n not in ("oci", "vultr")]
    path = tmp_path / "config.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def run(config: Path, *args: str) -> Any:
    return CliRunner().invoke(cli, ["--config", str(config), *args])


def test_collect_and_latest_without_any_key(tmp_path: Path) -> None:
    oci, vultr = serve(RECORDINGS / "oci"), serve(RECORDINGS / "vultr")
    try:
        config = write_config(tmp_path, oci.url, vultr.url)
        collected = run(config, "collect")
    finally:
        oci.stop()
        vultr.stop()
    assert collected.exit_code == 0, collected.output
    summary = collected.output
    assert "oci" in summary and "vultr" in summary and "failed" not in summary
    store = tmp_path / "prices.duckdb"
    rows = query(
        store,
        "SELECT provider, status, records FROM collection_runs ORDER BY provider",
    ).rows
    # OCI: 5 GPU shapes in one region, 2 of them preemptible: 7. Vultr: 13 located records
    # and the plan listed nowhere, once with region NULL: 14.
    assert rows == [("oci", "ok", 7), ("vultr", "ok", 14)]
    # 8 x 10.00 USD for BM.GPU.H100.8 and 23.92 for Vultr's 8x H100 bare metal, per GPU-hour
    # 10.00 and 2.99.
    h100 = query(
        store,
        "SELECT provider, instance_type, price_per_hour, price_per_gpu_hour_usd FROM latest_prices"
        " WHERE gpu_model = 'H100' AND price_kind = 'on_demand' ORDER BY provider",
    ).rows
    assert [(p, t, Decimal(str(h)), Decimal(str(g))) for p, t, h, g in h100] == [
        ("oci", "BM.GPU.H100.8", Decimal(80), Decimal(10)),
        ("vultr", "vbm-112c-2048gb-8-h100-gpu", Decimal("23.92"), Decimal("2.99")),
    ]
    latest = run(config, "latest", "--provider", "oracle", "--format", "json")
    assert latest.exit_code == 0, latest.output
    offers = json.loads(latest.output)
    assert {o["instance_type"] for o in offers} == {
        "VM.GPU3.1",
        "VM.GPU.A10.1",
        "BM.GPU.H100.8",
        "BM.GPU.MI300X.8",
        "BM.GPU.B200.8",
    }


def test_one_failing_provider_leaves_the_other_stored(tmp_path: Path) -> None:
    broken = tmp_path / "broken-vultr"
    shutil.copytree(RECORDINGS / "vultr", broken)
    spec = json.loads((broken / "exchanges.json").read_text())
    spec["exchanges"][1].update(status=500, body='{"error": "boom", "status": 500}')
    (broken / "exchanges.json").write_text(json.dumps(spec))
    oci, vultr = serve(RECORDINGS / "oci"), serve(broken)
    try:
        collected = run(write_config(tmp_path, oci.url, vultr.url), "collect")
    finally:
        oci.stop()
        vultr.stop()
    assert collected.exit_code != 0
    assert "vultr: plans/page-2: HTTP 500" in collected.output
    store = tmp_path / "prices.duckdb"
    rows = query(store, "SELECT provider, status FROM collection_runs ORDER BY provider").rows
    assert rows == [("oci", "ok"), ("vultr", "failed")]
    counts = query(store, "SELECT provider, count(*) FROM prices GROUP BY ALL").rows
    assert counts == [("oci", 7)]  # nothing of Vultr's: its collection is all or nothing
