"""`--format json` writes DECIMALs as JSON numbers with every digit stored, as the CSV does: a
float would round a 38-digit DECIMAL to 17 digits. The JSON stays strict."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner

from collectors.base import PriceRecord
from storage.store import Store
from tracker.cli import cli

T0 = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)
EXACT = (
    "SELECT 12345678901234567890.123456789012345678::DECIMAL(38,18) AS big, "
    "-0.0000001::DECIMAL(18,9) AS tiny, 100.000::DECIMAL(9,3) AS whole, "
    "'decimal-0:1' AS text, 1.5::DOUBLE AS double, NULL::DECIMAL(9,2) AS nothing"
)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("json") / "prices.duckdb"
    record = PriceRecord(
        provider="aws", region="us-east-1", zone=None, instance_type="p5.48xlarge",
        price_kind="on_demand", term_months=None, payment_option=None, offering_class=None,
        currency="USD", price_per_hour=Decimal("55.040001"), upfront_total=None,
        gpu_model="H100", gpu_count=8.0, gpu_memory_gib=80.0,
    )  # fmt: skip
    Store(path).write_run("aws", [record], started_at=T0, observed_at=T0, regions=None)
    return path


def run(store: Path, *args: str) -> str:
    result = CliRunner().invoke(cli, ["--db", str(store), *args])
    assert result.exit_code == 0, result.stderr
    return result.stdout


def test_every_digit_of_a_decimal_is_a_json_number(store: Path) -> None:
    out = run(store, "sql", EXACT, "--format", "json")
    assert '"big": 12345678901234567890.123456789012345678,' in out
    assert '"tiny": -0.0000001,' in out  # no exponent
    assert '"whole": 100,' in out  # trailing zeros dropped, as the float printed them
    (row,) = json.loads(out, parse_float=Decimal)  # strict JSON: a parser takes it
    assert row == {
        "big": Decimal("12345678901234567890.123456789012345678"),
        "tiny": Decimal("-0.0000001"),
        "whole": 100,
        "text": "decimal-0:1",
        "double": Decimal("1.5"),
        "nothing": None,
    }


def test_json_and_csv_agree_on_a_stored_price(store: Path) -> None:
    sql = "SELECT price_per_hour FROM prices"
    (row,) = json.loads(run(store, "sql", sql, "--format", "json"), parse_float=Decimal)
    csv_value = run(store, "sql", sql, "--format", "csv").splitlines()[1]
    assert row["price_per_hour"] == Decimal(csv_value) == Decimal("55.040001")
