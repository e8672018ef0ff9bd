"""Google Cloud: the GPUs Google sells only attached to N1 machines (T4, V100, P100, P4) are
priced with the N1 host shapes Google allows for each GPU count, never alone.

Prices are worked by hand from the SKUs' own numbers (the recording's N1 host rates, on its page
2; tests/fixtures/gcp/n1.json holds the N1 SKUs that must price nothing); the shapes against
Google's limits; `latest --gpu T4 --per-gpu` through the real CLI after a real collection from
the loopback replay server."""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Callable
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from collectors import REGISTRY
from collectors.gcp.machines import ATTACHABLE
from collectors.gpus import INSTANCE_GPUS
from tests.collectors.test_gcp import (
    DEMO,
    N1,
    SMALLEST,
    by_offer,
    load_pages,
    n1_host,
    parse,
    parse_skus,
    record,
    sku,
    smallest,
)
from tracker import config as config_mod
from tracker.cli import cli
from tracker.collecting.replay import ReplayServer

# Google's "GPU machine types" page, N1 general-purpose: per GPU and count, the most vCPUs and GB
# of memory of the N1 machine it is attached to (P100 x 4: the limit every P100 zone allows).
LIMITS = {
    ("nvidia-tesla-t4", "T4", 16): {1: (48, 312), 2: (48, 312), 4: (96, 624)},
    ("nvidia-tesla-p4", "P4", 8): {1: (24, 156), 2: (48, 312), 4: (96, 624)},
    ("nvidia-tesla-v100", "V100", 16): {1: (12, 78), 2: (24, 156), 4: (48, 312), 8: (96, 624)},
    ("nvidia-tesla-p100", "P100", 16): {1: (16, 104), 2: (32, 208), 4: (64, 208)},
}
N1_STANDARD = {v: v * 3.75 for v in (1, 2, 4, 8, 16, 32, 64, 96)}  # vCPUs: GB (GiB)


def test_the_combined_prices_by_hand(observed_at: datetime) -> None:
    offers = by_offer(parse(load_pages(), observed_at))
    n1_8 = "n1-standard-8+nvidia-tesla-t4x1"

    def price(itype: str, kind: str, term: int | None = None) -> Decimal:
        return offers["us-central1", itype, kind, term].price_per_hour

    # 8 vCPUs x 0.031611 (N1 core) + 30 GiB x 0.004237 (N1 RAM) + 1 x 0.35 (T4)
    # = 0.252888 + 0.12711 + 0.35 = 0.729998; the host's size, the GPU's facts
    machine = offers["us-central1", n1_8, "on_demand", None]
    assert machine == record(n1_8, "on_demand", "0.729998")
    assert (machine.vcpus, machine.memory_gib, machine.gpu_count) == (8, 30, 1)
    # spot: 8 x 0.006655 + 30 x 0.000892 + 0.14 = 0.05324 + 0.02676 + 0.14 = 0.22
    assert price(n1_8, "spot") == Decimal("0.22")
    # 1 year: 8 x 0.019915 + 30 x 0.002669 + 0.22 = 0.15932 + 0.08007 + 0.22 = 0.45939
    assert price(n1_8, "reserved", 12) == Decimal("0.45939")
    # 3 years: 8 x 0.014225 + 30 x 0.001907 + 0.16 = 0.1138 + 0.05721 + 0.16 = 0.33101
    assert price(n1_8, "reserved", 36) == Decimal("0.33101")
    # 96 x 0.031611 + 360 x 0.004237 + 4 x 0.35 = 3.034656 + 1.52532 + 1.4 = 5.959976
    assert price("n1-standard-96+nvidia-tesla-t4x4", "on_demand") == Decimal("5.959976")
    # 0.031611 + 3.75 x 0.004237 + 1.4 = 1.44749975, rounded once to six places
    assert price("n1-standard-1+nvidia-tesla-t4x4", "on_demand") == Decimal("1.447500")


def test_no_gpu_is_priced_alone(observed_at: datetime) -> None:
    result = parse(load_pages(), observed_at)
    n1 = [r for r in result.records if r.instance_type.startswith("n1-")]
    assert not [r for r in result.records if r.instance_type in ATTACHABLE]
    assert {r.gpu_model for r in n1} == {"T4"}  # the V100 SKUs are on page 3
    assert all(r.vcpus and r.memory_gib for r in n1)
    assert {result.facts[r.instance_type] for r in n1} == {"table"}
    # a Montreal commitment prices nothing in the regions asked, and custom or sole-tenant
    # N1 rates price no predefined host
    assert {r.region for r in n1} == {"us-central1"}
    assert Decimal("0.033174") not in {r.price_per_hour for r in n1}


def test_the_shapes_are_those_google_allows() -> None:
    expected = {
        f"n1-standard-{vcpus}+{accelerator}x{count}": (model, count, memory, vcpus, gib)
        for (accelerator, model, memory), limits in LIMITS.items()
        for count, (most_vcpus, most_gib) in limits.items()
        for vcpus, gib in N1_STANDARD.items()
        if vcpus <= most_vcpus and gib <= most_gib
    }
    table = {
        name: (g.gpu_model, g.gpu_count, g.gpu_memory_gib, g.vcpus, g.memory_gib)
        for name, g in INSTANCE_GPUS["gcp"].items()
        if name.startswith("n1-")
    }
    assert table == expected
    assert len(table) == 79
    assert "n1-standard-16+nvidia-tesla-v100x1" not in table  # 16 vCPUs > 12
    assert "n1-standard-64+nvidia-tesla-p100x4" not in table  # 240 GB > 208


def test_a_kind_with_a_part_missing_gives_no_record(
    observed_at: datetime, caplog: pytest.LogCaptureFixture
) -> None:
    spot_gpu = sku("Spot Preemptible Nvidia Tesla T4 GPU running in Americas", usage="Preemptible")
    spot_core_only = n1_host("Preemptible")[:1]
    with caplog.at_level(logging.INFO, logger="collectors.gcp"):
        result = parse_skus(observed_at, sku(), spot_gpu, *n1_host(), *spot_core_only)
    assert {r.price_kind for r in result.records} == {"on_demand"}
    assert (
        "gcp: no spot price in us-central1 for n1-standard-1+nvidia-tesla-t4x1, "
        "n1-standard-1+nvidia-tesla-t4x2, n1-standard-1+nvidia-tesla-t4x4 and 17 more: "
        "no rate for n1-ram"
    ) in caplog.messages
    # the host without the GPU is no T4 machine either
    assert parse_skus(observed_at, *n1_host(), *n1_host("Commit1Yr")).records == []


GPU_SKUS = {
    "OnDemand": "Nvidia Tesla T4 GPU running in Americas",
    "Commit1Yr": "Commitment v1: Nvidia Tesla T4 GPU running in Americas for 1 Year",
    "Commit3Yr": "Commitment v1: Nvidia Tesla T4 GPU running in Americas for 3 Years",
}


@pytest.mark.parametrize(
    ("usage", "part", "group"),
    [
        # the hourly N1 rates are filed under N1Standard, the commitments under CPU and RAM
        ("OnDemand", 0, "CPU"),
        ("OnDemand", 1, "RAM"),
        ("Commit1Yr", 0, "N1Standard"),
        ("Commit3Yr", 1, "N1Standard"),
    ],
)
def test_an_n1_rate_in_another_category_prices_nothing(
    observed_at: datetime, usage: str, part: int, group: str
) -> None:
    gpu = sku(GPU_SKUS[usage], usage=usage)
    assert parse_skus(observed_at, gpu, *n1_host(usage)).records  # as filed: priced
    host = n1_host(usage)
    host[part]["category"]["resourceGroup"] = group
    result = parse_skus(observed_at, gpu, *host)
    assert (result.records, result.skipped_rows) == ([], 1)


def overrides(types: dict[str, Any]) -> Any:
    return config_mod.from_dict({"gpus": {"instance_types": types}}, source=None).gpus


def test_a_users_entry_prices_another_n1_shape(
    observed_at: datetime, caplog: pytest.LogCaptureFixture
) -> None:
    t4 = {"provider": "gcp", "gpu_model": "T4", "gpu_memory_gib": 16}
    entries = overrides(
        {
            "n1-highmem-8+nvidia-tesla-t4x1": {**t4, "gpu_count": 1, "vcpus": 8, "memory_gib": 52},
            "n1-highmem-2+nvidia-tesla-t4x2": {**t4, "gpu_count": 1, "vcpus": 2, "memory_gib": 13},
            "n1-highcpu-4+nvidia-tesla-t4x1": {**t4, "gpu_count": 1},
        }
    )
    with caplog.at_level(logging.WARNING, logger="collectors.gcp"):
        result = parse_skus(observed_at, sku(), *n1_host(), gpus=entries)
    highmem = by_offer(result)["us-central1", "n1-highmem-8+nvidia-tesla-t4x1", "on_demand", None]
    # 8 x 0.01 + 52 x 0.004 + 0.35 = 0.08 + 0.208 + 0.35 = 0.638
    assert (highmem.price_per_hour, highmem.vcpus, highmem.memory_gib) == (Decimal("0.638"), 8, 52)
    assert result.facts["n1-highmem-8+nvidia-tesla-t4x1"] == "config"
    assert result.facts[SMALLEST] == "table"
    assert smallest(result).price_per_hour == Decimal("0.375")
    assert sorted(caplog.messages) == [
        "gcp: n1-highcpu-4+nvidia-tesla-t4x1 is not priced: its GPU facts give no vCPUs or "
        "memory_gib of the host",
        "gcp: n1-highmem-2+nvidia-tesla-t4x2 is not priced: its name says 2 GPUs, its GPU facts 1",
    ]


# ---------------------------------------------------------------------------------------------
# the real CLI


@pytest.fixture
def recording(tmp_path: Path) -> Path:
    """The demo's recording with the N1 SKUs that must price nothing added to its last page."""
    folder = tmp_path / "gcp-recording"
    shutil.copytree(DEMO, folder)
    last = folder / "page3.json"
    page = json.loads(last.read_text())
    page["skus"] += json.loads(N1.read_text())["skus"]
    last.write_text(json.dumps(page))
    return folder


def test_latest_per_gpu_ranks_machines_not_gpus(
    replay: Callable[..., ReplayServer],
    recording: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = replay(recording)
    monkeypatch.setenv("GOOGLE_API_KEY", "test-key")
    lines = [
        '[storage]\npath = "prices.duckdb"',
        f'[providers.gcp]\nendpoint = "{server.url}"\nregions = ["us-central1"]\ntimeout = 2',
        *(f"[providers.{name}]\nenabled = false" for name in REGISTRY if name != "gcp"),
    ]
    config = tmp_path / "config.toml"
    config.write_text("\n".join(lines) + "\n")
    runner = CliRunner()
    collected = runner.invoke(cli, ["--config", str(config), "collect", "--provider", "gcp"])
    assert collected.exit_code == 0, collected.output
    args = ["--config", str(config), "latest", "--gpu", "T4", "--per-gpu", "--format", "json"]
    shown = runner.invoke(cli, args)
    assert shown.exit_code == 0, shown.output
    rows = json.loads(shown.output)
    assert not [r for r in rows if r["instance_type"] in ATTACHABLE]
    cheapest = {
        (r["price_kind"], r["term_months"]): (
            r["instance_type"],
            round(r["per_hour"], 4),
            round(r["per_gpu_hour"], 4),
        )
        for r in rows
    }
    # Per GPU, the smallest host shared by the most GPUs wins each kind (shown to 4 places):
    # on-demand 0.031611 + 3.75 x 0.004237 + 4 x 0.35 = 1.4475, / 4 = 0.361875;
    # spot 0.006655 + 3.75 x 0.000892 + 4 x 0.14 = 0.57, / 4 = 0.1425;
    # 3 years 0.014225 + 3.75 x 0.001907 + 4 x 0.16 = 0.661376, / 4 = 0.165344 (the 1-year
    # term, 0.909924 / 4, is dearer). The T4 alone at 0.35 a GPU-hour is no longer there.
    four = "n1-standard-1+nvidia-tesla-t4x4"
    assert cheapest == {
        ("on_demand", None): (four, 1.4475, 0.3619),
        ("spot", None): (four, 0.57, 0.1425),
        ("reserved", 36): (four, 0.6614, 0.1653),
    }
    assert {r["gpus"] for r in rows} == {"4x T4 16GB"}
