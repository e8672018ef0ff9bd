"""Apache Spark (local mode) reads the export as docs/export.md says and answers real questions
exactly like `gpu-tracker sql` on the store; DuckDB reading the export does too.

Marked `spark` (a JVM starts: tens of seconds): left out of the default run, run by CI with
`python -m pytest -q -m spark`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
from click.testing import CliRunner

from storage.export import export, open_target
from tracker.cli import cli

pytestmark = pytest.mark.spark

# The cheapest current H100 per provider, in USD per GPU-hour.
CHEAPEST_H100 = """
SELECT provider, min(price_per_gpu_hour_usd) AS usd_per_gpu_hour
FROM {prices} WHERE gpu_model = 'H100' AND valid_to IS NULL
GROUP BY provider ORDER BY provider
"""
# The monthly mean spot price of one instance type (per month of valid_from, per region).
MONTHLY_SPOT = """
SELECT {month} AS month, region, round(avg(price_per_hour), 6) AS mean_price, count(*) AS n
FROM {prices} WHERE instance_type = 'g4dn.xlarge' AND price_kind = 'spot'
GROUP BY 1, 2 ORDER BY 1, 2
"""
STORE_MONTH = "strftime(valid_from, '%Y-%m')"


@pytest.fixture(scope="module")
def exported(demo_store: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("spark") / "export"
    export(demo_store, open_target(str(root)))
    return demo_store, root


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    pyspark_sql = pytest.importorskip("pyspark.sql")
    session = (
        pyspark_sql.SparkSession.builder.master("local[1]")
        .appName("gpu-tracker-export-test")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    yield session
    session.stop()


def answers_of_the_store(store: Path, sql: str) -> list[list[Any]]:
    """What `gpu-tracker sql` answers (with the built-in defaults, not the checkout's config)."""
    config = store.parent / "empty-config.toml"
    config.touch()
    argv = ["--config", str(config), "--db", str(store), "sql", sql, "--format", "json"]
    result = CliRunner().invoke(cli, argv)
    assert result.exit_code == 0, result.output
    return [list(row.values()) for row in json.loads(result.stdout)]


def test_spark_answers_like_the_store(exported: tuple[Path, Path], spark: Any) -> None:
    store, root = exported
    # The read docs/export.md gives: the partition folders only, so runs/ is not taken for one.
    prices = spark.read.option("basePath", str(root)).parquet(f"{root}/provider=*/month=*")
    prices.createOrReplaceTempView("exported")
    for question, month in ((CHEAPEST_H100, "month"), (MONTHLY_SPOT, "month")):
        expected = answers_of_the_store(store, question.format(prices="prices", month=STORE_MONTH))
        rows = spark.sql(question.format(prices="exported", month=month)).collect()
        assert expected and [list(row) for row in rows] == expected, question
    assert dict(prices.dtypes)["valid_from"] == "timestamp"
    assert dict(prices.dtypes)["month"] == "string"
    assert prices.count() == len(answers_of_the_store(store, "SELECT 1 FROM prices"))
    runs = spark.read.parquet(f"{root}/runs")
    assert runs.count() == len(answers_of_the_store(store, "SELECT 1 FROM collection_runs"))


def test_duckdb_answers_like_the_store(exported: tuple[Path, Path]) -> None:
    store, root = exported
    read = f"read_parquet('{root}/**/*.parquet', hive_partitioning = true)"
    with duckdb.connect() as con:
        for question in (CHEAPEST_H100, MONTHLY_SPOT):
            expected = answers_of_the_store(
                store, question.format(prices="prices", month=STORE_MONTH)
            )
            rows = con.execute(question.format(prices=read, month="month")).fetchall()
            assert [list(row) for row in rows] == expected, question
