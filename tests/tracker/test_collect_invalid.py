"""`gpu-tracker collect` over a provider answer with prices no one can rent at: the real CLI,
Lambda's recording served on loopback with the probe's values in it, a real DuckDB file. The
summary says how many prices were skipped and why, the run succeeds with the others stored,
and `collection_runs` keeps the count."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from collectors import REGISTRY
from storage.query import query
from tracker.cli import cli
from tracker.collecting.replay import Recording, ReplayServer

LAMBDA = Path(__file__).parents[2] / "tracker" / "demo_data" / "lambdalabs"


def hostile_recording(tmp_path: Path) -> Path:
    """Lambda's recording with a price of 1e-9 cents, one of 99999999999999 cents and a region
    name of 100 kB holding a NUL."""
    copy = tmp_path / "lambdalabs"
    shutil.copytree(LAMBDA, copy)
    body = json.loads((copy / "instance-types.json").read_text())
    data = body["data"]
    data["gpu_8x_h100_sxm5"]["instance_type"]["price_cents_per_hour"] = 1e-9
    data["gpu_4x_h100_sxm5"]["instance_type"]["price_cents_per_hour"] = 99999999999999
    data["gpu_2x_h100_sxm5"]["regions_with_capacity_available"] = [
        {"name": "x" * 100_000 + "\x00", "description": "hostile"}
    ]
    (copy / "instance-types.json").write_text(json.dumps(body))
    return copy


def test_collect_skips_the_invalid_prices_and_stores_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recording = hostile_recording(tmp_path)
    server = ReplayServer(Recording.load(recording)).start()
    try:
        config = tmp_path / "config.toml"
        others = "\n".join(
            f"[providers.{n}]\nenabled = false" for n in REGISTRY if n != "lambdalabs"
        )
        config.write_text(
            '[storage]\npath = "prices.duckdb"\n'
            f'[providers.lambdalabs]\nendpoint = "{server.url}"\n{others}\n'
        )
        monkeypatch.setenv("LAMBDA_API_KEY", "demo")
        result = CliRunner().invoke(cli, ["--config", str(config), "collect"])
    finally:
        server.stop()
    assert result.exit_code == 0, result.output
    summary = " ".join(result.output.split())  # the table wraps its notes
    # The 8x H100 has capacity in three regions: three records at 1e-9 cents.
    assert (
        "5 prices skipped: 3 zero after rounding, 1 above the ceiling, 1 text too long" in summary
    )
    store = tmp_path / "prices.duckdb"
    [run] = query(
        store, "SELECT status, records, prices_skipped, skip_reasons FROM collection_runs"
    ).rows
    assert run[0] == "ok" and run[1] > 0
    assert run[2:] == (5, "3 zero after rounding, 1 above the ceiling, 1 text too long")
    [(cheapest, longest, types)] = query(
        store, "SELECT min(price_per_hour), max(length(region)), list(instance_type) FROM prices"
    ).rows
    assert cheapest > 0 and longest < 100
    assert not {"gpu_8x_h100_sxm5", "gpu_4x_h100_sxm5"} & set(types)
