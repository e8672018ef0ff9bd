"""`gpu-tracker tco --data-tb X --current P [--current-region R]` through the real CLI on the
demo's store: the cost of moving the data out of P, its tiers applied, added to every option
elsewhere as `transfer_usd` (docs/decide.md), checked by hand from the recordings' tiers."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from storage.connection import connect
from tracker.cli import cli

# 60 TiB = 61,440 GiB out of AWS us-east-1 (tracker/demo_data/aws, its Data Transfer rows):
# 10,240 x 0.09 + 40,960 x 0.085 + 10,240 x 0.07 = 921.60 + 3,481.60 + 716.80.
AWS_60_TIB = 5120.00
# The same out of Azure eastus (its Bandwidth rows): the first 100 GiB free, then
# 10,240 x 0.087 + 40,960 x 0.083 + 10,140 x 0.07 = 890.88 + 3,399.68 + 709.80.
AZURE_60_TIB = 5000.36


@pytest.fixture(scope="module")
def store(demo_kept: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return Path(shutil.copy(demo_kept, tmp_path_factory.mktemp("tco-transfer") / "demo.duckdb"))


def run(store: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--db", str(store), "tco", "--gpu", "A100", *args])


def options(store: Path, *args: str) -> list[dict[str, Any]]:
    result = run(store, "--format", "json", *args)
    assert result.exit_code == 0, result.output
    found: list[dict[str, Any]] = json.loads(result.stdout)
    return found


def test_moving_out_of_aws_is_added_to_every_option_elsewhere(store: Path) -> None:
    plain = {_key(r): r for r in options(store)}
    moved = options(store, "--data-tb", "60", "--current", "aws", "--current-region", "us-east-1")
    assert moved and {r["provider"] for r in moved} > {"aws"}
    for row in moved:
        before = plain[_key(row)]
        if row["provider"] == "aws":  # staying: nothing moves
            assert row["transfer_usd"] == 0 and row["total_usd"] == before["total_usd"]
        else:
            assert row["transfer_usd"] == AWS_60_TIB
            assert row["total_usd"] == pytest.approx(before["total_usd"] + AWS_60_TIB, abs=0.011)
    totals = [r["total_usd"] for r in moved]
    assert totals == sorted(totals)


def test_the_dearest_region_without_one_asked_and_the_line_that_says_so(store: Path) -> None:
    result = run(store, "--format", "json", "--data-tb", "60", "--current", "azure")
    assert result.exit_code == 0, result.output
    away = [r for r in json.loads(result.stdout) if r["provider"] != "azure"]
    # Every demo region of Azure has the same tiers: the dearest is any of them.
    assert {r["transfer_usd"] for r in away} == {AZURE_60_TIB}
    assert "moving 61,440 GiB out of azure" in result.stderr
    assert "(its dearest region)" in result.stderr and "5,000.36 USD" in result.stderr


def test_a_free_flat_rate_and_a_cny_one(store: Path) -> None:
    free = options(store, "--data-tb", "60", "--current", "lambdalabs")
    assert {r["transfer_usd"] for r in free} == {0}
    cny = options(store, "--data-tb", "1", "--current", "tencent")
    with connect(store, read_only=True) as con:  # the demo's newest CNY rate (an open tier's)
        found = con.execute(
            "SELECT arg_max(usd_per_unit, as_of) FROM exchange_rates WHERE currency = 'CNY'"
        ).fetchone()
    assert found is not None
    # The bundled flat rate, 0.8 CNY/GiB, for 1 TiB = 1,024 GiB, in USD at that rate.
    usd_per_gib = round(0.8 * found[0], 6)
    expected = round(1024 * usd_per_gib, 2)
    assert {r["transfer_usd"] for r in cny if r["provider"] != "tencent"} == {expected}


def test_the_table_shows_the_transfer_and_the_document_only_when_asked(store: Path) -> None:
    table = run(store, "--data-tb", "60", "--current", "aws", "--current-region", "us-east-1")
    assert table.exit_code == 0, table.output
    assert "transfer USD" in table.stdout and "5,120.00" in table.stdout
    assert all("transfer_usd" not in r for r in options(store))
    blends = options(store, "--baseline", "4", "--data-tb", "60", "--current", "aws",
                     "--current-region", "us-east-1")  # fmt: skip
    assert blends and all(r["transfer_usd"] in (0, AWS_60_TIB) for r in blends)


def test_a_provider_with_no_transfer_price_says_so(store: Path) -> None:
    result = run(store, "--format", "json", "--data-tb", "5", "--current", "vastai")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert {r["transfer_usd"] for r in rows if r["provider"] != "vastai"} == {None}
    assert "no transfer price of vastai is stored" in result.stderr


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--data-tb", "5"], "--data-tb: name the provider the data leaves with --current"),
        (["--current", "aws", "--current-region", "us-east-1"], "--current-region"),
        (["--data-tb", "-1", "--current", "aws"], "--data-tb"),
    ],
)
def test_usage_errors(store: Path, args: list[str], said: str) -> None:
    result = run(store, *args)
    assert result.exit_code == 2 and said in result.output


def _key(row: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(row[k] for k in ("provider", "region", "zone", "instance_type", "price_kind",
                                  "term_months", "payment_option", "offering_class"))  # fmt: skip
