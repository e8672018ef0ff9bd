"""`gpu-tracker sql` reads the store and nothing else: every hostile statement is refused with
one line and exit 2 and leaves no file behind; every read-only form keeps working; a query past
its time limit is stopped with a message that says how to raise it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from collectors.base import PriceRecord
from storage.store import Store
from tracker.cli import cli

T0 = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)
SECRET = "s3cr3t-line-only-this-file-holds"
# {out}: a directory nothing may be written into; {secret}: a file nothing may read;
# {parquet}: a Parquet file outside the store.
HOSTILE = [
    "COPY prices TO '{out}/a.csv'",
    "COPY (SELECT 1 AS x) TO '{out}/a.parquet' (FORMAT parquet)",
    "EXPLAIN ANALYZE COPY (SELECT 1 AS x) TO '{out}/b.csv'",
    "EXPLAIN COPY (SELECT 1 AS x) TO '{out}/c.csv'",
    "WITH c AS (SELECT 1 AS x) COPY c TO '{out}/cte.csv'",
    "SELECT 1; COPY prices TO '{out}/two.csv'",
    "EXPORT DATABASE '{out}/export'",
    "ATTACH '{out}/other.duckdb' AS other",
    "ATTACH ':memory:' AS scratch",
    "INSTALL httpfs",
    "LOAD httpfs",
    "LOAD '{out}/evil.duckdb_extension'",
    "SET enable_external_access = true",
    "SET lock_configuration = false",
    "SET threads = 1",
    "PRAGMA threads = 1",
    "RESET TimeZone",
    "SET profiling_output = '{out}/profile.json'",
    "PRAGMA enable_profiling = 'json'",
    "USE memory",
    "SELECT * FROM read_text('{secret}')",
    "SELECT * FROM read_blob('{secret}')",
    "SELECT * FROM read_csv('{secret}')",
    "SELECT * FROM read_json('{secret}')",
    "SELECT * FROM '{secret}'",
    "SELECT * FROM sniff_csv('{secret}')",
    "SELECT * FROM read_parquet('{parquet}')",
    "SELECT * FROM parquet_schema('{parquet}')",
    "SELECT * FROM glob('/*')",
    "SELECT * FROM glob('{out}/*')",
    "FROM 'http://127.0.0.1:9/prices.csv'",
    "SELECT * FROM read_csv('s3://bucket/prices.csv')",
    "WITH x AS (SELECT * FROM read_text('{secret}')) SELECT * FROM x",
    "SELECT (SELECT content FROM read_text('{secret}')) AS c",
    "PIVOT (SELECT * FROM read_csv('{secret}')) ON column0",
    "DESCRIBE SELECT * FROM read_csv('{secret}')",
    "SUMMARIZE SELECT * FROM read_text('{secret}')",
    "EXPLAIN SELECT * FROM read_text('{secret}')",
    "CREATE TEMP TABLE t AS SELECT 1",
    "CREATE TABLE t AS SELECT 1",
    "DELETE FROM price_intervals",
]
_KINDS = "(SELECT provider, price_kind FROM prices)"
_PIVOTED = [{"provider": "aws", "on_demand": 1}]
READS = [
    ("SELECT count(*) AS n FROM prices", [{"n": 1}]),
    ("WITH p AS (SELECT provider FROM prices) SELECT provider FROM p", [{"provider": "aws"}]),
    ("FROM latest_prices SELECT instance_type", [{"instance_type": "p5.48xlarge"}]),
    ("FROM collection_runs SELECT count(*) AS runs", [{"runs": 1}]),
    ("VALUES (1, 'a')", [{"col0": 1, "col1": "a"}]),
    ("TABLE collection_runs", None),
    (f"PIVOT {_KINDS} ON price_kind", _PIVOTED),
    (f"PIVOT {_KINDS} ON price_kind IN ('on_demand')", _PIVOTED),
    (f"SELECT * FROM (PIVOT {_KINDS} ON price_kind)", _PIVOTED),
    (
        "UNPIVOT (SELECT provider, instance_type FROM prices) ON instance_type INTO NAME k VALUE v",
        [{"provider": "aws", "k": "instance_type", "v": "p5.48xlarge"}],
    ),
    ("DESCRIBE prices", None),
    ("DESCRIBE SELECT 1 AS x", None),
    ("SUMMARIZE prices", None),
    ("SUMMARIZE SELECT price_per_hour FROM prices", None),
    ("SHOW TABLES", None),
    ("SHOW prices", None),
    ("EXPLAIN SELECT * FROM prices", None),
    ("EXPLAIN ANALYZE SELECT * FROM prices", None),
    ("PRAGMA table_info('prices')", None),
    ("SELECT current_setting('TimeZone') AS tz", [{"tz": "UTC"}]),
    ("SELECT price_per_hour FROM prices WHERE price_per_hour > ?", None),
]  # fmt: skip


@pytest.fixture(scope="module")
def one_offer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The store, written once per module: each test takes a copy (some try to write to it)."""
    store = tmp_path_factory.mktemp("sandbox") / "prices.duckdb"
    record = PriceRecord(
        provider="aws", region="us-east-1", zone=None, instance_type="p5.48xlarge",
        price_kind="on_demand", term_months=None, payment_option=None, offering_class=None,
        currency="USD", price_per_hour=Decimal("55.04"), upfront_total=None, gpu_model="H100",
        gpu_count=8.0, gpu_memory_gib=80.0,
    )  # fmt: skip
    Store(store).write_run("aws", [record], started_at=T0, observed_at=T0, regions=None)
    return store


@pytest.fixture
def setup(one_offer: Path, tmp_path: Path) -> tuple[Path, Path, Path, Path]:
    """(config, store, out directory, secret file)."""
    store = Path(shutil.copy(one_offer, tmp_path / "prices.duckdb"))
    out = tmp_path / "out"
    out.mkdir()
    secret = tmp_path / "secret.csv"
    secret.write_text(f"column0\n{SECRET}\n")
    with duckdb.connect() as con:
        con.execute(f"COPY (SELECT '{SECRET}' AS s) TO '{tmp_path / 'outside.parquet'}'")
    config = tmp_path / "config.toml"
    config.write_text(f'[storage]\npath = "{store}"\n')
    return config, store, out, secret


def run(config: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["--config", str(config), *args])
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("statement", HOSTILE)
def test_hostile_statements_are_refused_in_one_line_and_write_nothing(
    setup: tuple[Path, Path, Path, Path], statement: str
) -> None:
    config, store, out, secret = setup
    sql = statement.format(out=out, secret=secret, parquet=secret.parent / "outside.parquet")
    store_before = store.read_bytes()
    code, stdout, stderr = run(config, "sql", sql, "--format", "json")
    assert code == 2, (stdout, stderr)
    errors = stderr.strip().splitlines()
    assert len(errors) == 1 and errors[0].startswith("error: "), stderr
    assert SECRET not in stdout + stderr
    assert list(out.iterdir()) == []  # nothing written where it pointed
    assert sorted(p.name for p in store.parent.iterdir()) == [
        "config.toml", "out", "outside.parquet", "prices.duckdb", "secret.csv",
    ]  # fmt: skip
    assert store.read_bytes() == store_before


@pytest.mark.parametrize(("statement", "expected"), READS)
def test_read_only_forms_keep_working(
    setup: tuple[Path, Path, Path, Path], statement: str, expected: list[dict[str, object]] | None
) -> None:
    config = setup[0]
    if "?" in statement:  # a parameter the command line cannot give: through the library
        from storage.query import query

        assert query(setup[1], statement, [Decimal("1")]).rows == [(55.04,)]
        return
    code, stdout, stderr = run(config, "sql", statement, "--format", "json")
    assert code == 0, stderr
    rows = json.loads(stdout)
    assert rows, statement
    if expected is not None:
        assert rows == expected


def test_the_refusals_say_why(setup: tuple[Path, Path, Path, Path]) -> None:
    config, _, out, secret = setup
    _, _, err = run(config, "sql", f"SELECT * FROM read_text('{secret}')")
    assert "reads the store and nothing else" in err and str(secret) in err
    _, _, err = run(config, "sql", f"EXPLAIN ANALYZE COPY (SELECT 1) TO '{out}/x.csv'")
    assert "reads the store and nothing else" in err
    _, _, err = run(config, "sql", "INSTALL httpfs")
    assert "read-only" in err and "LOAD" in err
    _, _, err = run(config, "sql", "PRAGMA threads = 1")
    assert "read-only" in err or "cannot change settings" in err


def test_a_query_past_its_time_limit_is_stopped(setup: tuple[Path, Path, Path, Path]) -> None:
    config = setup[0]
    endless = "SELECT sum(hash(i)) FROM range(1000000000000000) t(i)"
    code, out, err = run(config, "sql", endless, "--timeout", "1s")
    assert code == 1 and out == ""
    assert err.strip() == (
        "error: query stopped after 1 s (sql timeout; raise it with --timeout or "
        "[storage] query_timeout)"
    )


def test_the_time_limit_comes_from_the_config(setup: tuple[Path, Path, Path, Path]) -> None:
    config = setup[0]
    config.write_text(config.read_text() + 'query_timeout = "1s"\nwrite_wait = "2s"\n')
    code, _, err = run(config, "sql", "SELECT sum(hash(i)) FROM range(1000000000000000) t(i)")
    assert code == 1 and "query stopped after 1 s" in err
    code, out, _ = run(config, "sql", "SELECT 42 AS answer", "--format", "csv")
    assert code == 0 and out == "answer\n42\n"  # a query within the limit is untouched


def test_a_bad_timeout_is_a_usage_error(setup: tuple[Path, Path, Path, Path]) -> None:
    code, _, err = run(setup[0], "sql", "SELECT 1", "--timeout", "soon")
    assert code == 2 and "--timeout" in err


@pytest.mark.parametrize(
    ("statement", "message"),
    [
        ("SELECT nosuch FROM prices", 'Binder Error: Referenced column "nosuch" not found'),
        ("SELECT * FROM nosuch", "Catalog Error: Table with name nosuch does not exist!"),
        ("SELECT 1e308::DECIMAL(38, 6)", "Conversion Error: Could not cast value"),
        ("SELECT 'x'::INTEGER", "Conversion Error: Could not convert string 'x' to INT32"),
        ("SELECT 9223372036854775807::BIGINT + 1", "Out of Range Error: Overflow in addition"),
    ],
)
def test_a_query_wrong_as_written_is_a_usage_error(
    setup: tuple[Path, Path, Path, Path], statement: str, message: str
) -> None:
    """The user's to fix, like a statement that does not parse: exit 2, one line, DuckDB's
    reason in it, the store untouched."""
    config, store, _, _ = setup
    before = store.read_bytes()
    code, out, err = run(config, "sql", statement)
    assert (code, out) == (2, ""), err
    assert len(err.strip().splitlines()) == 1
    assert err.startswith(f"error: query failed: {message}"), err
    assert store.read_bytes() == before


def test_a_timeout_a_collection_would_not_outlast_is_a_usage_error(
    setup: tuple[Path, Path, Path, Path],
) -> None:
    """A writer waits [storage] write_wait for readers: a query allowed to run longer could make
    a collection give up and lose its prices."""
    config, store, _, _ = setup
    before = store.read_bytes()
    code, out, err = run(config, "sql", "SELECT 1", "--timeout", "120s")  # write_wait: 120s
    assert (code, out) == (2, "")
    assert err.strip() == (
        "error: --timeout: 120 s is not shorter than [storage] write_wait (120 s), the longest "
        "a collection waits for a reader; give a shorter --timeout or raise write_wait"
    )
    assert store.read_bytes() == before
    config.write_text(config.read_text() + 'write_wait = "10m"\n')
    code, out, _ = run(config, "sql", "SELECT 1 AS one", "--timeout", "5m", "--format", "csv")
    assert (code, out) == (0, "one\n1\n")


def test_json_is_strict_json(setup: tuple[Path, Path, Path, Path]) -> None:
    """JSON has no NaN or Infinity (a browser's JSON.parse and jq refuse them): null."""
    sql = "SELECT 'nan'::DOUBLE AS n, 'inf'::DOUBLE AS i, '-inf'::FLOAT AS m, 1.5::DOUBLE AS x"
    code, out, _ = run(setup[0], "sql", sql, "--format", "json")
    assert code == 0
    assert json.loads(out, parse_constant=pytest.fail) == [
        {"n": None, "i": None, "m": None, "x": 1.5}
    ]


def test_csv_prints_decimals_exactly(setup: tuple[Path, Path, Path, Path]) -> None:
    sql = (
        "SELECT 123456789012345678.123456::DECIMAL(38, 6) AS big, "
        "0.0000001::DECIMAL(18, 7) AS tiny, 100::DECIMAL(18, 0) AS whole, "
        "price_per_hour::DECIMAL(18, 6) AS stored FROM prices"
    )
    code, out, _ = run(setup[0], "sql", sql, "--format", "csv")
    assert code == 0
    assert out == "big,tiny,whole,stored\n123456789012345678.123456,0.0000001,100,55.040000\n"


def test_a_store_with_a_write_ahead_log_is_read_whole(
    setup: tuple[Path, Path, Path, Path],
) -> None:
    """The sandbox closes files only after the store and its WAL are open: the changes a killed
    writer left in the WAL are read."""
    config, store, _, _ = setup
    killed_writer = (
        "import duckdb, os, sys\n"
        "con = duckdb.connect(sys.argv[1])\n"
        "con.execute(\"SET wal_autocheckpoint = '1GB'\")\n"
        "con.execute('UPDATE price_intervals SET price_per_hour = 60.5')\n"
        "os._exit(0)\n"
    )
    subprocess.run([sys.executable, "-c", killed_writer, str(store)], check=True, timeout=60)
    assert Path(f"{store}.wal").exists()
    code, out, err = run(config, "sql", "SELECT price_per_hour FROM prices", "--format", "csv")
    assert (code, out) == (0, "price_per_hour\n60.5\n"), err
