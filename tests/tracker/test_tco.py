"""`gpu-tracker tco` through the real CLI on a store the demo built with the real pipeline from
the recorded AWS answers: the worked example of docs/decide.md, checked by hand-computed
values from the API's own numbers, and the command's options and edge cases."""

from __future__ import annotations

import io
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tracker.cli import cli

# The AWS recording (tracker/demo_data/aws, us-east-1, 2025-11-30 prices): p4d.24xlarge, 8x A100.
ON_DEMAND = 21.957642  # USD/h, Price List OnDemand pricePerUnit
RI_1Y_ALL = 113819 / 8760  # Upfront Fee of the 1yr standard All Upfront term over its hours
RI_3Y_ALL = 214420 / 26280  # the same for 3yr
# Spot in us-east-1: use1-az6 in DescribeSpotPriceHistory (with credentials), the region's
# price in the public spot feed (without); per zone there are others, this one is asserted.
SPOT_AZ6 = 8.0468
HOURS = 730 * 36  # 26280


@pytest.fixture(scope="module")
def store(demo_kept: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return Path(shutil.copy(demo_kept, tmp_path_factory.mktemp("tco") / "demo.duckdb"))


def run(store: Path, *args: str) -> Any:
    result = CliRunner().invoke(cli, ["--db", str(store), "tco", *args])
    return result


def candidates(store: Path, *args: str) -> list[dict[str, Any]]:
    result = run(store, "--format", "json", *args)
    assert result.exit_code == 0, result.output
    rows: list[dict[str, Any]] = json.loads(result.stdout)
    return rows


def p4d(rows: list[dict[str, Any]], kind: str, **key: Any) -> dict[str, Any]:
    found = [
        r for r in rows
        if r["instance_type"] == "p4d.24xlarge" and r["region"] == "us-east-1"
        and r["price_kind"] == kind and all(r[k] == v for k, v in key.items())
    ]  # fmt: skip
    assert len(found) == 1, found
    return found[0]


def test_the_worked_example_of_the_docs(store: Path) -> None:
    rows = candidates(store, "--gpu", "A100", "--provider", "aws")
    # 8 GPUs on an 8-GPU instance: 1 instance; 36 months = 26280 h.
    on_demand = p4d(rows, "on_demand")
    assert on_demand["instances"] == 1 and on_demand["hours"] == 26280
    assert on_demand["total_usd"] == 577046.83  # 21.957642 x 26280 = 577,046.83176
    assert on_demand["total_usd"] == round(ON_DEMAND * HOURS, 2)
    assert on_demand["usd_per_gpu_hour"] == 2.744705  # 577,046.83176 / (8 x 26280)
    spot = p4d(rows, "spot", price_per_hour_usd=SPOT_AZ6)
    assert spot["total_usd"] == 232616.89  # 8.0468 x 26280 x 1.10 = 232,616.8944
    assert spot["total_usd"] == round(SPOT_AZ6 * HOURS * 1.1, 2)
    one_year = p4d(rows, "reserved", term_months=12, payment_option="all_upfront")
    # Three 1-year terms: 3 x 12.993037 (the stored effective rate) x 8760 = 341,457.01236.
    assert one_year["terms"] == 3 and one_year["total_usd"] == 341457.01
    assert abs(one_year["total_usd"] - 3 * RI_1Y_ALL * 8760) < 0.02  # the upfront fee, 3 times
    three_year = p4d(rows, "reserved", term_months=36, payment_option="all_upfront")
    assert three_year["terms"] == 1 and three_year["total_usd"] == 214419.99  # 8.159056 x 26280
    assert abs(three_year["total_usd"] - RI_3Y_ALL * HOURS) < 0.02
    # PFLOP per USD: 312 dense FP16 TFLOPS per A100 (the GPU table) x 8 GPUs x 26280 h x 3.6
    # (TFLOP/s over an hour in PFLOP) / 214,419.99168 USD = 1,101.303876.
    assert three_year["pflop_per_usd"] == 1101.303876
    assert on_demand["pflop_per_usd"] == round(312 * 8 * HOURS * 3.6 / (ON_DEMAND * HOURS), 6)
    # The docs' other rows: 236,141,568 PFLOP over each total, each total over 210,240 GPU-hours.
    assert (spot["usd_per_gpu_hour"], spot["pflop_per_usd"]) == (1.106435, 1015.152268)
    assert (one_year["usd_per_gpu_hour"], one_year["pflop_per_usd"]) == (1.62413, 691.570416)
    assert three_year["usd_per_gpu_hour"] == 1.019882  # 214,419.99168 / 210,240
    assert on_demand["pflop_per_usd"] == 409.224269
    # Cheapest first: at AWS the 3-year term (214,419.99) beats spot with its overhead.
    totals = [r["total_usd"] for r in rows]
    assert totals == sorted(totals)


def test_utilization_scales_hours_used_but_not_reserved_terms(store: Path) -> None:
    rows = candidates(store, "--gpu", "A100", "--provider", "aws", "--utilization", "0.5")
    assert p4d(rows, "on_demand")["total_usd"] == 288523.42  # 577,046.83176 / 2
    west = [r for r in rows if r["region"] == "us-west-2" and r["price_kind"] == "on_demand"
            and r["instance_type"] == "p4d.24xlarge"]  # fmt: skip
    assert [r["total_usd"] for r in west] == [288523.39]  # 21.95764 x 26280 / 2 = 288,523.3896
    assert (
        p4d(rows, "spot", price_per_hour_usd=SPOT_AZ6)["total_usd"] == 116308.45
    )  # 232,616.8944 / 2
    three_year = p4d(rows, "reserved", term_months=36, payment_option="all_upfront")
    assert three_year["total_usd"] == 214419.99  # paid whatever the utilization
    # per GPU-hour of work: 214,419.99168 / (8 x 26280 x 0.5) = 2.039764
    assert three_year["usd_per_gpu_hour"] == 2.039764


def test_a_term_longer_than_the_horizon_is_paid_whole(store: Path) -> None:
    rows = candidates(store, "--gpu", "A100", "--provider", "aws", "--months", "6")
    three_year = p4d(rows, "reserved", term_months=36, payment_option="all_upfront")
    assert three_year["terms"] == 1 and three_year["total_usd"] == 214419.99
    one_year = p4d(rows, "reserved", term_months=12, payment_option="all_upfront")
    assert one_year["total_usd"] == 113819.0  # 12.993037 x 8760 = 113,819.00412
    assert p4d(rows, "on_demand")["total_usd"] == round(ON_DEMAND * 730 * 6, 2)
    table = run(store, "--gpu", "A100", "--provider", "aws", "--months", "6")
    assert "whole 3y, 30 mo unused" in table.stdout
    from rich.console import Console

    from storage.reads.tco import Need, read
    from tracker.cli.screen.tco_table import strategies

    console = Console(width=250, record=True, file=io.StringIO())  # wide: no cell wraps
    console.print(strategies(read(store, Need("A100", months=6, providers=("aws",))), 9))
    assert "│ whole 1y, 6 mo unused, all-upfront " in console.export_text()


def test_eighteen_months_take_two_one_year_terms(store: Path) -> None:
    rows = candidates(store, "--gpu", "A100", "--provider", "aws", "--months", "18")
    one_year = p4d(rows, "reserved", term_months=12, payment_option="all_upfront")
    assert one_year["terms"] == 2 and one_year["total_usd"] == 227638.01  # 2 x 113,819.00412


def test_spot_overhead_and_migration_cost(store: Path) -> None:
    args = ["--gpu", "A100", "--spot-overhead", "25", "--current", "gcp"]
    rows = candidates(store, *args, "--migration-cost", "5000")
    # 8.0468 x 26280 x 1.25 = 264,337.38 plus 5,000 for leaving gcp
    assert p4d(rows, "spot", price_per_hour_usd=SPOT_AZ6)["total_usd"] == 269337.38
    assert p4d(rows, "spot", price_per_hour_usd=SPOT_AZ6)["migration_usd"] == 5000
    gcp = [r for r in rows if r["provider"] == "gcp"]
    assert gcp and all(r["migration_usd"] == 0 for r in gcp)
    table = run(store, *args, "--migration-cost", "5000", "--spot-basis", "p95")
    assert "spot: p95 price over 30d + 25% interruption overhead" in table.stdout
    assert "migration: 5,000.00 USD added once to every option away from gcp" in table.stdout


def test_the_advisor_overhead_is_each_offers_own_in_the_json_and_the_table(store: Path) -> None:
    args = ["--gpu", "A100", "--provider", "aws", "--spot-overhead", "advisor"]
    rows = candidates(store, *args)
    # The demo's Spot Advisor: p4d in us-east-1 ">20%" (100 % redone), us-west-2 "10-15%" (15 %).
    east = p4d(rows, "spot", price_per_hour_usd=SPOT_AZ6)
    assert east["spot_overhead_pct"] == 100 and east["total_usd"] == 422939.81  # 8.0468 x 26280 x 2
    (west,) = [r for r in rows if r["price_kind"] == "spot" and r["region"] == "us-west-2"]
    assert west["spot_overhead_pct"] == 15
    assert west["total_usd"] == round(west["price_per_hour_usd"] * HOURS * 1.15, 2)
    assert all(r["spot_overhead_pct"] is None for r in rows if r["price_kind"] != "spot")
    table = run(store, *args, "--limit", "9").stdout.replace("\n", " ")
    assert "per hour used +100%" in table and "per hour used +15%" in table
    assert "per hour used +10%" not in table
    assert "its Spot Advisor band as interruption overhead" in table


def test_fractional_gpus_take_whole_instances(store: Path) -> None:
    # Azure NV6ads A10 v5 is a sixth of an A10 (gpu_count 1/6): 8 GPUs need 48 instances.
    rows = candidates(store, "--gpu", "A10", "--provider", "azure", "--months", "1")
    share = [r for r in rows if r["instance_type"] == "Standard_NV6ads_A10_v5"
             and r["price_kind"] == "on_demand"]  # fmt: skip
    assert share[0]["instances"] == 48
    assert share[0]["total_usd"] == 15908.16  # 48 x 0.454 x 730
    table = run(store, "--gpu", "A10", "--provider", "azure", "--months", "1", "--limit", "9")
    assert "Standard_NV6ads_A10_v5 is a 0.17 share of one A10: 48 instances make 8" in (
        table.stdout.replace("\n", " ")
    )
    one = run(store, "--gpu", "A10", "--provider", "azure", "--gpus", "1", "--limit", "9").stdout
    words = " ".join(one.split())  # the caption as words, however the table wrapped it
    assert "Standard_NV6ads_A10_v5 is a 0.17 share of one A10: 6 instances make 1 GPU " in words
    assert "make 1 GPUs" not in words


def test_the_table_shows_the_best_per_strategy_and_the_distance(store: Path) -> None:
    result = run(store, "--gpu", "A100", "--provider", "aws")
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stdout.splitlines() if "p4d.24xlarge" in line]
    strategies = [line.split("│")[1].strip() for line in lines]
    assert strategies == ["reserved 3y", "spot", "reserved 1y", "on-demand"]
    # the best: 3y at 214,419.99; spot 232,616.89 is 18,196.90 (8 %) above it.
    assert "best" in lines[0] and "+18,197 (+8%)" in lines[1]
    # the best on-demand offer is us-west-2's, listed at 21.95764: 21.95764 x 26280 = 577,046.78
    assert "us-west-2" in lines[3] and "577,046.78" in lines[3]
    assert "214,419.99" in lines[0] and "232,616.89" in lines[1] and "341,457.01" in lines[2]
    assert "other candidates not shown" in result.stdout


def test_blend_prices_the_baseline_reserved_and_the_rest_burst(store: Path) -> None:
    rows = candidates(store, "--gpu", "A100", "--provider", "aws", "--baseline", "4")
    spot, on_demand = rows  # one plan per burst kind, cheapest first
    # 4 reserved GPUs still take one whole p4d (8 GPUs): its 3-year term, 214,419.99168;
    # the other 4 on one p4d at spot: 232,616.8944. Sum 447,036.88608.
    assert spot["burst_kind"] == "spot" and spot["reserved_instances"] == 1
    assert spot["reserved_usd"] == 214419.99 and spot["burst_usd"] == 232616.89
    assert spot["total_usd"] == 447036.89
    # on-demand: us-west-2's p4d is cheaper in the 7th decimal (21.95764 x 26280 = 577,046.7792)
    assert on_demand["burst_region"] == "us-west-2"
    assert on_demand["total_usd"] == 791466.77  # 214,419.99168 + 577,046.7792
    table = run(store, "--gpu", "A100", "--provider", "aws", "--baseline", "4")
    assert "no blend beats reserved 3y alone" in table.stdout
    cut = run(store, "--gpu", "A100", "--provider", "aws", "--baseline", "4", "--format", "json",
              "--limit", "1")  # fmt: skip
    assert [p["burst_kind"] for p in json.loads(cut.stdout)] == ["spot"]
    assert "showing 1 of 2 plans, 1 left out (--limit 1" in cut.stderr


def test_the_docs_blend_at_half_utilization(store: Path) -> None:
    args = ["--gpu", "A100", "--provider", "aws", "--utilization", "0.5", "--baseline", "4"]
    spot = candidates(store, *args)[0]
    # a whole p4d's 3-year term for 4 GPUs (214,419.99168) + a p4d at spot for the other 4 at
    # half the hours (8.0468 x 26280 x 0.5 x 1.1 = 116,308.4472): 330,728.43888
    assert (spot["reserved_usd"], spot["burst_usd"]) == (214419.99, 116308.45)
    assert spot["total_usd"] == 330728.44
    assert "no blend beats spot alone" in run(store, *args).stdout


def test_the_whole_need_as_baseline_is_the_reserved_plan(store: Path) -> None:
    rows = candidates(store, "--gpu", "A100", "--provider", "aws", "--baseline", "8")
    assert len(rows) == 1 and rows[0]["burst_kind"] is None
    assert rows[0]["total_usd"] == 214419.99


def test_a_baseline_without_a_reserved_offer_says_so(store: Path) -> None:
    # Lambda sells the B200 on demand only: nothing can hold a reserved baseline.
    result = run(store, "--gpu", "B200", "--baseline", "4")
    assert result.exit_code == 0
    assert "no blend: no reserved offer of B200 can hold the baseline" in result.output
    assert candidates(store, "--gpu", "B200", "--baseline", "4") == []


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--utilization", "0"], "--utilization"),
        (["--utilization", "1.5"], "--utilization"),
        (["--gpus", "0"], "--gpus"),
        (["--months", "0"], "--months"),
        (["--spot-window", "soon"], "--spot-window"),
        (["--baseline", "9"], "--baseline"),
        (["--provider", "nimbus"], "--provider"),
        (["--spot-basis", "median"], "--spot-basis"),
    ],
)
def test_bad_values_are_usage_errors_naming_the_option(
    store: Path, args: list[str], named: str
) -> None:
    result = run(store, "--gpu", "A100", *args)
    assert result.exit_code == 2
    assert named in result.output


def test_an_unknown_gpu_is_a_usage_error(store: Path) -> None:
    result = run(store, "--gpu", "A1000")
    assert result.exit_code == 2 and "--gpu A1000" in result.output


def test_the_title_spells_the_model_as_the_store_does(store: Path) -> None:
    result = run(store, "--gpu", "rtx4000ada")
    assert result.exit_code == 0, result.output
    assert "TCO of 8x RTX4000Ada for 36 months" in result.stdout


def test_offers_left_out_are_counted_under_the_table_and_on_stderr(store: Path) -> None:
    import duckdb

    with duckdb.connect(str(store), read_only=True) as con:
        sold_out = con.execute(
            "SELECT provider, region, instance_type FROM latest_prices"
            " WHERE gpu_model = 'A100' AND NOT stale AND available = false"
        ).fetchall()
    assert sold_out  # the demo's Vultr lists A100 plans deployable nowhere
    said = f"left out: {len(sold_out)} offer{'s' if len(sold_out) > 1 else ''} of A100 "
    table = run(store, "--gpu", "A100")
    assert said in " ".join(table.stdout.split())
    document = run(store, "--gpu", "A100", "--format", "json")
    assert said in document.stderr
    priced = {(r["provider"], r["region"], r["instance_type"]) for r in json.loads(document.stdout)}
    assert priced.isdisjoint(sold_out)


def test_no_candidate_says_why(store: Path) -> None:
    result = run(store, "--gpu", "A100", "--provider", "paperspace")
    assert result.exit_code == 0
    # The filter that emptied it is named, with what the others have (a count that grows with
    # the demo's providers).
    said = r"no candidate: no offers for A100 from paperspace \((\d+) A100 offers from other "
    said += r"providers\)"
    found = re.search(said, result.output)
    assert found and int(found[1]) > 0, result.output
    # A CSV of no candidates still has its header: the fields of the JSON objects.
    empty = run(store, "--gpu", "A100", "--provider", "paperspace", "--format", "csv")
    fields = list(candidates(store, "--gpu", "A100", "--provider", "aws")[0])
    assert empty.stdout.splitlines() == [",".join(fields)]


def test_the_chart_is_written(store: Path, tmp_path: Path) -> None:
    chart = tmp_path / "tco.png"
    result = run(store, "--gpu", "A100", "--chart", str(chart))
    assert result.exit_code == 0, result.output
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_chart_that_cannot_be_written_is_said_plainly(store: Path, tmp_path: Path) -> None:
    result = run(store, "--gpu", "A100", "--chart", str(tmp_path / "tco.jpg"))
    assert result.exit_code == 2 and "the chart is a PNG file" in result.stderr
    assert not (tmp_path / "tco.jpg").exists()
    missing = tmp_path / "no-such-folder" / "tco.png"
    result = run(store, "--gpu", "A100", "--chart", str(missing))
    assert result.exit_code == 1 and f"--chart {missing}: cannot write it" in result.stderr
    result = run(store, "--gpu", "A100", "--provider", "paperspace", "--chart", str(missing))
    assert result.exit_code == 0
    assert f"no chart written to {missing}: no candidate to draw" in result.stderr


def test_the_demo_a100_ranks_40gb_and_80gb_apart(store: Path) -> None:
    rows = candidates(store, "--gpu", "A100")
    assert {r["gpu_memory_gib"] for r in rows} == {40, 80}  # every option says its size
    out = run(store, "--gpu", "A100", "--limit", "9").stdout
    tables = {size: out.index(f"TCO of 8x A100 {size} for 36 months") for size in ("40GB", "80GB")}
    first, second = sorted(tables, key=tables.__getitem__)
    parts = {first: out[tables[first] : tables[second]], second: out[tables[second] :]}
    for size, text in parts.items():
        offers = [ln for ln in text.splitlines() if " A100 " in ln and "│" in ln]
        assert offers and all(f"A100 {size}" in ln for ln in offers)
        # each size has its own best: the cheapest option of that size
        best = min(r["total_usd"] for r in rows if f"{r['gpu_memory_gib']:g}GB" == size)
        said_best = [ln for ln in offers if ln.rstrip(" │").endswith("best")]
        assert said_best and all(f"{best:,.2f}" in ln for ln in said_best)
