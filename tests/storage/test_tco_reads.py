"""storage.reads.tco on real store files written through the store: the offers left out and
why, the prices at a past moment, spot planned at its series' mean or p95, blended plans."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

from click.testing import CliRunner

from collectors.base import PriceRecord
from storage.reads.tco import Need, read
from storage.store import Store
from tracker.cli import cli

T0 = datetime(2026, 6, 1, tzinfo=UTC)
H, D = timedelta(hours=1), timedelta(days=1)

ON_DEMAND = PriceRecord(
    provider="aws", region="us-east-1", zone=None, instance_type="p4d.24xlarge",
    price_kind="on_demand", term_months=None, payment_option=None, offering_class=None,
    currency="USD", price_per_hour=Decimal("21.957642"), upfront_total=None,
    gpu_model="A100", gpu_count=8, gpu_memory_gib=40,
)  # fmt: skip
SPOT = replace(ON_DEMAND, price_kind="spot", zone="use1-az6", price_per_hour=Decimal("10"))
TENCENT = replace(
    ON_DEMAND, provider="tencent", region="ap-guangzhou", instance_type="GT4.41XLARGE948",
    currency="CNY", price_per_hour=Decimal("227.54"),
)  # fmt: skip


def write(store: Store, records: list[PriceRecord], at: datetime, regions: list[str]) -> None:
    store.write_run(
        records[0].provider, records, started_at=at, observed_at=at, regions=regions,
        interval_seconds=3600,
    )  # fmt: skip


def test_offers_left_out_are_counted_by_reason(tmp_path: Path) -> None:
    store = Store(tmp_path / "p.duckdb")  # no [fx] rates: CNY cannot be priced in USD
    west = replace(ON_DEMAND, region="us-west-2")
    sold_out = replace(ON_DEMAND, region="eu-west-1", available=False)
    write(store, [west], T0, ["us-west-2"])
    # A later run that did not look at us-west-2: its offer is no longer confirmed (stale).
    write(store, [sold_out], T0 + H, ["eu-west-1"])
    write(store, [TENCENT], T0 + H, ["ap-guangzhou"])
    answer = read(store.path, Need("a100"))
    assert answer.rows == []
    assert answer.offers == 3
    assert answer.excluded == {"no USD rate for CNY": 1, "sold out": 1, "stale": 1}


def test_no_candidate_is_said_plainly_through_the_cli(tmp_path: Path) -> None:
    store = Store(tmp_path / "p.duckdb")
    write(store, [replace(ON_DEMAND, available=False)], T0, ["us-east-1"])
    write(store, [TENCENT, replace(TENCENT, region="ap-shanghai")], T0, ["ap-guangzhou"])
    result = CliRunner().invoke(cli, ["--db", str(store.path), "tco", "--gpu", "A100"])
    assert result.exit_code == 0, result.output
    assert (
        "no candidate: 2 offers of A100 have no USD rate for CNY (add it to [fx]), "
        "1 offer of A100 is sold out"
    ) in result.output
    result = CliRunner().invoke(cli, ["--db", str(store.path), "tco", "--gpu", "H100"])
    # The filter that left none is named: the store has offers, of other GPUs.
    assert "no candidate: no offers for H100 (3 offers of other GPUs)" in result.output


def test_as_of_prices_the_intervals_in_force_then(tmp_path: Path) -> None:
    store = Store(tmp_path / "p.duckdb")
    write(store, [replace(ON_DEMAND, price_per_hour=Decimal("30"))], T0, ["us-east-1"])
    write(store, [replace(ON_DEMAND, price_per_hour=Decimal("20"))], T0 + 2 * H, ["us-east-1"])
    need = Need("A100", months=1)
    # 1 instance x 30 USD/h x 730 h; now 20 x 730.
    assert [r["total_usd"] for r in read(store.path, need, as_of=T0 + H).rows] == [21900.0]
    assert [r["total_usd"] for r in read(store.path, need).rows] == [14600.0]
    # Before the first price: nothing in force. Long after a confirmation: stale then.
    assert read(store.path, need, as_of=T0 - H).offers == 0
    later = read(store.path, need, as_of=T0 + 2 * H + 3 * H)
    assert later.rows == [] and later.excluded == {"stale": 1}


def test_spot_planned_at_its_series_mean_or_p95(tmp_path: Path) -> None:
    store = Store(tmp_path / "p.duckdb")
    write(store, [SPOT], T0, ["us-east-1"])  # 10 USD/h for one day
    write(store, [replace(SPOT, price_per_hour=Decimal("20"))], T0 + D, ["us-east-1"])
    write(store, [replace(SPOT, price_per_hour=Decimal("20"))], T0 + 4 * D, ["us-east-1"])
    at = T0 + 4 * D  # window [T0, T0 + 4 d): 10 for 1 day, 20 for 3 days

    def total(basis: str) -> float:
        need = Need("A100", months=1, spot_basis=basis, spot_window_s=4 * 86400)
        return float(read(store.path, need, as_of=at).rows[0]["total_usd"])

    assert total("mean") == 14052.5  # (10 x 1 + 20 x 3) / 4 = 17.5; x 730 h x 1.10
    assert total("p95") == 16060.0  # 20 holds 75 % of the time: p95 = 20; x 730 x 1.10
    assert total("current") == 16060.0


def test_a_blend_counts_migration_once_per_provider_away(tmp_path: Path) -> None:
    store = Store(tmp_path / "p.duckdb")
    reserved = replace(
        ON_DEMAND, price_kind="reserved", term_months=12, payment_option="all_upfront",
        offering_class="standard", price_per_hour=Decimal("12.993037"),
        upfront_total=Decimal("113819"),
    )  # fmt: skip
    write(store, [ON_DEMAND, reserved, SPOT], T0, ["us-east-1"])
    need = Need("A100", gpus=16, months=12, migration_usd=1000.0, current_provider="gcp")
    spot, on_demand = read(store.path, need, baseline=8).blends
    # 8 reserved: 1 p4d x 1 term x 12.993037 x 8760 = 113,819.00; 8 spot: 1 x 10 x 8760 x 1.1
    # = 96,360; both at aws, away from gcp: one migration of 1,000.
    assert (spot["reserved_usd"], spot["burst_usd"], spot["migration_usd"]) == (
        113819.0, 96360.0, 1000.0,
    )  # fmt: skip
    assert spot["total_usd"] == 211179.0
    assert on_demand["total_usd"] == round(113819.00412 + 21.957642 * 8760 + 1000, 2)


def test_a_blend_without_burst_offers_says_what_is_missing(tmp_path: Path) -> None:
    store = Store(tmp_path / "p.duckdb")
    reserved = replace(
        ON_DEMAND, price_kind="reserved", term_months=12, payment_option="all_upfront",
        offering_class="standard", price_per_hour=Decimal("12.993037"),
        upfront_total=Decimal("113819"),
    )  # fmt: skip
    write(store, [reserved], T0, ["us-east-1"])  # a reserved term, nothing by the hour
    args = ["--db", str(store.path), "tco", "--gpu", "A100", "--gpus", "16", "--baseline", "8"]
    said = "no blend: no on-demand or spot offer of A100 for the other 8 GPUs"
    for fmt in ("table", "json"):
        result = CliRunner().invoke(cli, [*args, "--format", fmt])
        assert result.exit_code == 0, result.output
        assert said in result.stderr
    # With only on-demand offers, the reserved part is what is missing.
    store = Store(tmp_path / "o.duckdb")
    write(store, [ON_DEMAND], T0, ["us-east-1"])
    result = CliRunner().invoke(cli, ["--db", str(store.path), *args[2:], "--format", "json"])
    assert "no blend: no reserved offer of A100 can hold the baseline" in result.stderr
