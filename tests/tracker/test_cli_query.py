"""`gpu-tracker sql` and `gpu-tracker latest` through the real CLI, on a real store."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner

from collectors.base import PriceRecord
from storage.fx import FxRate, GpuFact
from storage.store import Store
from tracker.cli import cli

T0 = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)


def offer(
    provider: str, itype: str, price: str, *, currency: str = "USD", **kw: object
) -> PriceRecord:
    fields: dict[str, object] = {
        "provider": provider,
        "region": "us-east-1",
        "zone": None,
        "instance_type": itype,
        "price_kind": "on_demand",
        "term_months": None,
        "payment_option": None,
        "offering_class": None,
        "currency": currency,
        "price_per_hour": Decimal(price),
        "upfront_total": None,
        "gpu_model": "H100",
        "gpu_count": 8.0,
        "gpu_memory_gib": 80.0,
    }
    fields.update(kw)
    return PriceRecord(**fields)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def offers(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The store, written once per module: each test takes a copy (some add to it)."""
    store = Store(tmp_path_factory.mktemp("query") / "prices.duckdb")
    store.write_run(
        "aws",
        [
            offer("aws", "p5.48xlarge", "55.04"),
            offer("aws", "p5.48xlarge", "13.2182", price_kind="spot", zone="use1-az1"),
            offer("aws", "g6.xlarge", "0.8048", gpu_model="L4", gpu_count=1.0, gpu_memory_gib=24.0),
        ],
        started_at=T0,
        observed_at=T0,
        regions=None,
    )
    store.write_run(
        "azure",
        [offer("azure", "Standard_ND96isr_H100_v5", "98.32", region="eastus")],
        started_at=T0,
        observed_at=T0,
        regions=None,
    )
    # A CNY price that is numerically the smallest: it must never be ranked among USD prices.
    store.write_run(
        "tencent",
        [offer("tencent", "GT4.41XLARGE948", "1.5", currency="CNY", gpu_model="A100")],
        started_at=T0,
        observed_at=T0,
        regions=None,
    )
    return store.path


@pytest.fixture
def config_path(offers: Path, tmp_path: Path) -> Path:
    shutil.copy(offers, tmp_path / "prices.duckdb")
    path = tmp_path / "config.toml"
    path.write_text('[storage]\npath = "prices.duckdb"\n')
    return path


def run(config_path: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["--config", str(config_path), *args])
    return result.exit_code, result.stdout, result.stderr


def test_sql_json_is_one_array_of_objects(config_path: Path) -> None:
    code, out, _ = run(
        config_path,
        "sql",
        "SELECT provider, instance_type, price_per_hour, valid_from FROM latest_prices "
        "WHERE price_kind = 'on_demand' AND currency = 'USD' ORDER BY price_per_hour",
        "--format",
        "json",
    )
    assert code == 0
    assert json.loads(out) == [
        {
            "provider": "aws",
            "instance_type": "g6.xlarge",
            "price_per_hour": 0.8048,
            "valid_from": "2026-11-30T06:00:00+00:00",
        },
        {
            "provider": "aws",
            "instance_type": "p5.48xlarge",
            "price_per_hour": 55.04,
            "valid_from": "2026-11-30T06:00:00+00:00",
        },
        {
            "provider": "azure",
            "instance_type": "Standard_ND96isr_H100_v5",
            "price_per_hour": 98.32,
            "valid_from": "2026-11-30T06:00:00+00:00",
        },
    ]


def test_sql_csv(config_path: Path) -> None:
    code, out, _ = run(
        config_path,
        "sql",
        "SELECT provider, status, records FROM collection_runs ORDER BY run_id",
        "--format",
        "csv",
    )
    assert code == 0
    assert out == "provider,status,records\naws,ok,3\nazure,ok,1\ntencent,ok,1\n"


def test_sql_table(config_path: Path) -> None:
    code, out, _ = run(config_path, "sql", "SELECT count(*) AS offers FROM prices")
    assert code == 0
    assert "offers" in out and "5" in out


def test_sql_refuses_writes_with_exit_2(config_path: Path) -> None:
    code, _, err = run(config_path, "sql", "DELETE FROM price_intervals")
    assert code == 2
    assert "read-only" in err
    code, out, _ = run(config_path, "sql", "SELECT count(*) FROM prices", "--format", "csv")
    assert out.splitlines()[1] == "5"


def test_sql_bad_query_is_a_clear_error(config_path: Path) -> None:
    code, _, err = run(config_path, "sql", "SELECT nope FROM prices")
    assert code == 2  # the user's query to fix: a usage error, as the contract gives it
    assert "query failed" in err and "nope" in err


def test_latest_never_ranks_currencies_together(config_path: Path) -> None:
    code, out, _ = run(config_path, "latest", "--format", "csv")
    assert code == 0
    header, *lines = out.strip().splitlines()
    assert header.startswith("provider,region,zone,instance_type,price_kind")
    columns = header.split(",")
    rows = [dict(zip(columns, line.split(","), strict=True)) for line in lines]
    # Grouped by currency, USD first, each group ranked on its own: the CNY price is the
    # smallest number but comes after every USD one.
    assert [r["currency"] for r in rows] == ["USD"] * 4 + ["CNY"]
    usd_rows = rows[:4]
    assert [r["instance_type"] for r in usd_rows] == [
        "g6.xlarge",
        "p5.48xlarge",
        "p5.48xlarge",
        "Standard_ND96isr_H100_v5",
    ]
    # 13.2182 / 8, with every digit (a table rounds it to 1.6523)
    assert usd_rows[1]["price_kind"] == "spot" and usd_rows[1]["per_gpu_hour"] == "1.652275"


def test_latest_filters(config_path: Path) -> None:
    code, out, _ = run(
        config_path, "latest", "--gpu", "h100", "--kind", "on_demand", "--format", "json"
    )
    assert code == 0
    rows = json.loads(out)
    assert [(r["provider"], r["per_hour"], r["gpus"]) for r in rows] == [
        ("aws", 55.04, "8x H100 80GB"),
        ("azure", 98.32, "8x H100 80GB"),
    ]
    code, out, _ = run(config_path, "latest", "--provider", "azure", "--format", "json")
    assert code == 0
    assert [r["instance_type"] for r in json.loads(out)] == ["Standard_ND96isr_H100_v5"]


def test_latest_table_titles_each_currency(config_path: Path) -> None:
    code, out, _ = run(config_path, "latest")
    assert code == 0
    assert "Cheapest current offers (USD)" in out and "Cheapest current offers (CNY)" in out


def test_commands_without_a_store_say_what_to_do(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("")
    code, _, err = run(path, "latest")
    assert code == 1 and "gpu-tracker collect" in err


def test_bad_config_exits_2_naming_the_key(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("[providers.aws]\nintervall = '1h'\n")
    code, _, err = run(path, "sql", "SELECT 1")
    assert code == 2
    assert "providers.aws.intervall" in err


def test_text_that_looks_like_markup_is_printed_as_is(config_path: Path) -> None:
    code, out, _ = run(config_path, "sql", "SELECT '[providers.aws] [bold]x' AS note")
    assert code == 0 and "[providers.aws] [bold]x" in out


def test_config_error_messages_keep_their_brackets(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("providers = 3\n")
    code, _, err = run(path, "latest")
    assert code == 2 and "([providers])" in err


def test_latest_per_gpu_keeps_the_cheapest_offer_per_model_and_kind(config_path: Path) -> None:
    code, out, _ = run(config_path, "latest", "--per-gpu", "--format", "json")
    assert code == 0
    got = [(r["gpus"], r["price_kind"], r["instance_type"], r["currency"]) for r in json.loads(out)]
    assert got == [
        ("8x H100 80GB", "spot", "p5.48xlarge", "USD"),
        ("8x H100 80GB", "on_demand", "p5.48xlarge", "USD"),
        ("1x L4 24GB", "on_demand", "g6.xlarge", "USD"),
        ("8x A100 80GB", "on_demand", "GT4.41XLARGE948", "CNY"),
    ]


def test_latest_usd_ranks_converted_offers_with_the_dollar_ones(config_path: Path) -> None:
    store = Store(
        config_path.parent / "prices.duckdb",
        fx_rates=[FxRate("CNY", date(2026, 1, 8), Decimal("0.14"))],
    )
    store.write_run(  # the same Tencent price again, now with a rate in the store
        "tencent",
        [offer("tencent", "GT4.41XLARGE948", "1.5", currency="CNY", gpu_model="A100")],
        started_at=T0,
        observed_at=T0,
        regions=None,
    )
    code, out, _ = run(config_path, "latest", "--usd", "--format", "json")
    assert code == 0
    rows = json.loads(out)
    assert {r["currency"] for r in rows} == {"USD"}
    # 1.5 CNY/h x 0.14 = 0.21 USD/h: the cheapest of all once converted.
    first = rows[0]
    assert (first["instance_type"], first["priced_in"], first["per_hour"]) == (
        "GT4.41XLARGE948",
        "CNY",
        0.21,
    )
    assert [r["priced_in"] for r in rows[1:]] == ["USD"] * 4


def test_latest_usd_leaves_out_and_counts_offers_without_a_rate(config_path: Path) -> None:
    code, out, err = run(config_path, "latest", "--usd", "--format", "csv")
    assert code == 0
    assert "GT4.41XLARGE948" not in out and out.count("\n") == 5  # header + 4 USD offers
    assert "left out 1 offers priced in CNY: no rate for it in [fx]" in err


def test_latest_usd_per_gpu_picks_one_offer_per_model_in_dollars(config_path: Path) -> None:
    # 105 CNY/h at 7 CNY per USD = 15 USD/h: cheaper than an H100 at 20 USD/h once converted,
    # though 105 > 20 as numbers. One H100 on-demand row, the Tencent one.
    store = Store(
        config_path.parent / "prices.duckdb",
        fx_rates=[FxRate.per_usd("CNY", date(2026, 1, 8), Decimal("7"), None)],
    )
    for provider, price, currency in (("lambdalabs", "20", "USD"), ("tencent", "105", "CNY")):
        store.write_run(
            provider,
            [offer(provider, f"{provider}-h100x8", price, currency=currency)],
            started_at=T0,
            observed_at=T0,
            regions=None,
        )
    code, out, _ = run(
        config_path, "latest", "--usd", "--per-gpu", "--gpu", "H100", "--format", "json"
    )
    assert code == 0
    rows = [(r["provider"], r["price_kind"], r["per_hour"]) for r in json.loads(out)]
    assert rows == [("aws", "spot", 13.2182), ("tencent", "on_demand", 15.0)]  # by GPU-hour


def test_latest_sorts_by_pflop_per_dollar(config_path: Path) -> None:
    """PFLOP per dollar = TFLOPS of one GPU x GPUs x 3.6 / USD per hour, most first."""
    facts = [GpuFact("H100", 989.4), GpuFact("L4", 121.0), GpuFact("A100", 312.0)]
    store = Store(config_path.parent / "prices.duckdb", gpu_facts=facts)
    store.write_run(  # the same azure price again: the store now knows the GPUs' TFLOPS
        "azure",
        [offer("azure", "Standard_ND96isr_H100_v5", "98.32", region="eastus")],
        started_at=T0,
        observed_at=T0,
        regions=None,
    )
    code, out, _ = run(config_path, "latest", "--sort", "pflop", "--format", "json")
    assert code == 0
    got = [(r["instance_type"], r["price_kind"], r["pflop_per_usd"]) for r in json.loads(out)]
    assert got == [
        ("p5.48xlarge", "spot", 2155.7),  # 8 x 989.4 x 3.6 / 13.2182
        ("g6.xlarge", "on_demand", 541.3),  # 1 x 121 x 3.6 / 0.8048
        ("p5.48xlarge", "on_demand", 517.7),  # 8 x 989.4 x 3.6 / 55.04
        ("Standard_ND96isr_H100_v5", "on_demand", 289.8),  # 8 x 989.4 x 3.6 / 98.32
        ("GT4.41XLARGE948", "on_demand", None),  # CNY without a rate: no USD price
    ]
    code, out, _ = run(config_path, "latest", "--sort", "pflop")
    assert code == 0 and "PFLOP/$" in out and "2155.7" in out
