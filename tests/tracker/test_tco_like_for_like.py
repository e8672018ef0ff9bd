"""`gpu-tracker tco` on like-for-like machines, through the real CLI on a small store written
through the store: `--per-node K` keeps machines of at least K GPUs, and each memory size of a
GPU is ranked apart (a table per size, `vs best` within it, blends never across sizes). The
totals are worked out by hand from the prices below."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from collectors.base import PriceRecord
from storage.store import Store
from tracker.cli import cli

# 16 A100s for a year: 8,760 hours.
HOURS = 730 * 12

P4D = PriceRecord(
    provider="aws", region="us-east-1", zone=None, instance_type="p4d.24xlarge",
    price_kind="on_demand", term_months=None, payment_option=None, offering_class=None,
    currency="USD", price_per_hour=Decimal("21.957642"), upfront_total=None,
    gpu_model="A100", gpu_count=8, gpu_memory_gib=40,
)  # fmt: skip
P4D_SPOT = replace(P4D, price_kind="spot", zone="use1-az6", price_per_hour=Decimal("10"))
P4D_1Y = replace(
    P4D, price_kind="reserved", term_months=12, payment_option="all_upfront",
    offering_class="standard", price_per_hour=Decimal("12.993037"),
)  # fmt: skip
P4DE = replace(P4D, instance_type="p4de.24xlarge", price_per_hour=Decimal("27.447"),
               gpu_memory_gib=80)  # fmt: skip
# An 80 GB spot machine cheaper than the 40 GB one: a blend must still not pair it with 40 GB.
P4DE_SPOT = replace(P4DE, price_kind="spot", zone="use1-az6", price_per_hour=Decimal("9"))
# Machines of fewer than 8 GPUs: cheaper per GPU, but no NVLink across 8.
ONE = replace(P4D, instance_type="a100.1x", price_per_hour=Decimal("1.29"), gpu_count=1)
FOUR = replace(P4D, instance_type="a100.4x", price_per_hour=Decimal("9.2"), gpu_count=4)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    store = Store(tmp_path_factory.mktemp("like") / "p.duckdb")
    at = datetime.now(UTC)
    records = [P4D, P4D_SPOT, P4D_1Y, P4DE, P4DE_SPOT, ONE, FOUR]
    store.write_run("aws", records, started_at=at, observed_at=at, regions=["us-east-1"],
                    interval_seconds=86_400)  # fmt: skip
    return store.path


def run(store: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--db", str(store), "tco", "--gpus", "16", "--months", "12",
                                    *args])  # fmt: skip


def options(store: Path, *args: str) -> list[dict[str, Any]]:
    result = run(store, "--format", "json", *args)
    assert result.exit_code == 0, result.output
    rows: list[dict[str, Any]] = json.loads(result.stdout)
    return rows


def totals(rows: list[dict[str, Any]]) -> dict[tuple[str, str, float], float]:
    return {
        (r["instance_type"], r["price_kind"], r["gpu_memory_gib"]): r["total_usd"] for r in rows
    }


def test_per_node_8_keeps_the_8_gpu_machines_worked_by_hand(store: Path) -> None:
    rows = options(store, "--gpu", "A100", "--per-node", "8")
    assert {r["gpu_count"] for r in rows} == {8}
    assert {r["instances"] for r in rows} == {2}  # ceil(16 / 8)
    assert totals(rows) == {
        ("p4de.24xlarge", "spot", 80): 173448.0,  # 2 x 9 x 8,760 x 1.10
        ("p4d.24xlarge", "spot", 40): 192720.0,  # 2 x 10 x 8,760 x 1.10
        ("p4d.24xlarge", "reserved", 40): 227638.01,  # 2 x 1 term x 12.993037 x 8,760
        ("p4d.24xlarge", "on_demand", 40): 384697.89,  # 2 x 21.957642 x 8,760 = 384,697.88784
        ("p4de.24xlarge", "on_demand", 80): 480871.44,  # 2 x 27.447 x 8,760
    }
    assert [r["total_usd"] for r in rows] == sorted(r["total_usd"] for r in rows)
    on_demand = next(r for r in rows if r["instance_type"] == "p4d.24xlarge"
                     and r["price_kind"] == "on_demand")  # fmt: skip
    assert on_demand["usd_per_gpu_hour"] == 2.744705  # 384,697.88784 / (16 x 8,760)
    # Without it, sixteen 1-GPU machines (16 x 1.29 x 8,760 = 180,806.40) and four 4-GPU ones
    # (4 x 9.2 x 8,760 = 322,368) are candidates too.
    loose = totals(options(store, "--gpu", "A100"))
    assert loose[("a100.1x", "on_demand", 40)] == 180806.4
    assert loose[("a100.4x", "on_demand", 40)] == 322368.0
    said = run(store, "--gpu", "A100", "--per-node", "8", "--format", "json").stderr
    assert "left out: 2 offers of A100 have fewer than 8 GPUs per machine" in said
    # Above every machine's size: nothing can serve, and the answer says why.
    none = run(store, "--gpu", "A100", "--per-node", "16")
    assert none.exit_code == 0
    assert "no candidate: 7 offers of A100 have fewer than 16 GPUs per machine" in none.stderr


def test_each_memory_size_is_ranked_apart_in_the_table(store: Path) -> None:
    result = run(store, "--gpu", "A100", "--per-node", "8")
    assert result.exit_code == 0, result.output
    out = result.stdout
    first = out.index("TCO of 16x A100 80GB (machines of 8+ GPUs) for 12 months")
    second = out.index("TCO of 16x A100 40GB (machines of 8+ GPUs) for 12 months")
    assert first < second  # the size with the cheapest option first
    sizes = {"80GB": out[first:second], "40GB": out[second:]}
    lines = {size: [ln for ln in text.splitlines() if "aws us-east-1" in ln]
             for size, text in sizes.items()}  # fmt: skip
    assert all(size in ln for size, found in lines.items() for ln in found)
    # 40 GB: its own best is its spot (192,720), not the 80 GB spot; on-demand is 191,977.89
    # (+100 %) above it.
    (spot, reserved, on_demand) = lines["40GB"]
    assert "192,720.00" in spot and spot.rstrip(" │").endswith("best")
    assert "+34,918 (+18%)" in reserved  # 227,638.01 - 192,720
    assert "+191,978 (+100%)" in on_demand
    # 80 GB: on-demand against the 80 GB spot, 480,871.44 - 173,448 = 307,423.44 (+177 %).
    assert "+307,423 (+177%)" in lines["80GB"][1]
    assert "per node: only machines of at least 8 GPUs each" in " ".join(out.split())


def test_a_variant_picks_one_size(store: Path) -> None:
    rows = options(store, "--gpu", "A100 80GB", "--per-node", "8")
    assert totals(rows) == {
        ("p4de.24xlarge", "spot", 80): 173448.0,
        ("p4de.24xlarge", "on_demand", 80): 480871.44,
    }
    table = run(store, "--gpu", "A100 80GB", "--per-node", "8").stdout
    assert table.count("TCO of 16x A100 80GB") == 1 and "40GB" not in table


def test_a_blend_never_pairs_two_memory_sizes(store: Path) -> None:
    plans = options(store, "--gpu", "A100", "--per-node", "8", "--baseline", "8")
    # Only the 40 GB p4d is reserved: its plans burst on 40 GB, although the 80 GB spot is
    # cheaper. 8 reserved: 1 x 12.993037 x 8,760 = 113,819.00; 8 spot: 1 x 10 x 8,760 x 1.1.
    assert {p["gpu_memory_gib"] for p in plans} == {40}
    assert {p["burst_instance_type"] for p in plans} == {"p4d.24xlarge"}
    spot = next(p for p in plans if p["burst_kind"] == "spot")
    assert (spot["reserved_usd"], spot["burst_usd"], spot["total_usd"]) == (
        113819.0, 96360.0, 210179.0,
    )  # fmt: skip


def test_per_node_is_checked_like_the_other_counts(store: Path) -> None:
    result = run(store, "--gpu", "A100", "--per-node", "0")
    assert result.exit_code == 2 and "--per-node" in result.output
