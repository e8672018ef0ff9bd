"""A newcomer's command line: global options before or after the command, --db and
GPU_TRACKER_DB, --version, forgiving filters that refuse what nothing matches, cut tables that
say so, escaped titles, one readable line for an unreachable provider, and a light start-up.

Through click's CliRunner (or a subprocess where the process is the point) on real DuckDB files.
"""

from __future__ import annotations

import importlib.metadata
import json
import logging
import shlex
import socket
import subprocess
import sys
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path

import pytest
import requests
from click.testing import CliRunner

from collectors import provider_names
from collectors.common import FetchError
from collectors.http import get_json, make_session
from storage.fx import FxRate
from storage.query import query
from storage.store import Store
from tests.tracker.test_cli_query import T0, offer
from tracker.cli import cli
from tracker.cli.collect import next_steps
from tracker.collecting.failure import one_line


def _store(path: Path) -> Path:
    """Five USD offers from aws, azure and lambdalabs (two H100, ...) and one in CNY."""
    rate = FxRate.per_usd("CNY", date(2026, 1, 8), Decimal("7.0197"), None)
    store = Store(path, fx_rates=(rate,))
    runs = {
        "aws": [
            offer("aws", "p5.48xlarge", "55.04"),
            offer("aws", "p5.48xlarge", "13.2182", price_kind="spot", zone="use1-az1"),
            offer("aws", "g6.xlarge", "0.8048", gpu_model="L4", gpu_count=1.0),
        ],
        "azure": [offer("azure", "Standard_ND96isr_H100_v5", "98.32", region="eastus")],
        "lambdalabs": [offer("lambdalabs", "gpu_8x_h100_sxm5", "23.92")],
        "tencent": [offer("tencent", "GN10X.2XLARGE40", "19.8", currency="CNY", gpu_model="V100")],
    }
    for provider, records in runs.items():
        store.write_run(provider, records, started_at=T0, observed_at=T0, regions=None)
    return path


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One store for the module: the commands under test only read it."""
    return _store(tmp_path_factory.mktemp("store") / "prices.duckdb")


def invoke(*args: str, env: dict[str, str | None] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr


def _count(*args: str) -> str:
    """What `sql` says the store at hand holds (as CSV: header, then the count)."""
    code, out, err = invoke(*args)
    assert code == 0, err
    return out.splitlines()[1]


# --- global options --------------------------------------------------------------------------


def test_db_goes_before_or_after_the_command(store: Path, tmp_path: Path) -> None:
    sql = ("sql", "SELECT count(*) FROM latest_prices", "--format", "csv")
    assert _count("--db", str(store), *sql) == "6"
    assert _count(*sql, "--db", str(store)) == "6"
    # Given twice, the one after the command wins.
    empty = tmp_path / "none.duckdb"
    code, _, err = invoke("--db", str(empty), *sql, "--db", str(store))
    assert code == 0, err
    code, _, err = invoke("--db", str(store), *sql, "--db", str(empty))
    assert code == 1 and "gpu-tracker collect" in err


def test_config_goes_after_the_command_too(store: Path, tmp_path: Path) -> None:
    config = tmp_path / "elsewhere" / "config.toml"
    config.parent.mkdir()
    config.write_text(f'[storage]\npath = "{store}"\n')
    sql = ("sql", "SELECT count(*) FROM prices", "--format", "csv")
    assert _count(*sql, "--config", str(config)) == "6"
    assert _count("--config", str(config), *sql) == "6"
    # A bad config is refused wherever --config stands.
    code, _, err = invoke(*sql, "--config", str(tmp_path / "missing.toml"))
    assert code == 2 and "missing.toml: no such file" in err


def test_the_store_is_db_then_the_variable_then_the_config(store: Path, tmp_path: Path) -> None:
    other = _store(tmp_path / "other.duckdb")
    Store(other).write_run("azure", [], started_at=T0, observed_at=T0, regions=["eastus"])
    config = tmp_path / "config.toml"
    config.write_text(f'[storage]\npath = "{tmp_path / "from-config.duckdb"}"\n')
    sql = ("sql", "SELECT count(*) FROM latest_prices", "--format", "csv")
    env = {"GPU_TRACKER_DB": str(other)}
    # The variable beats the file: `other` lost its one azure offer.
    code, out, _ = invoke("--config", str(config), *sql, env=env)
    assert (code, out.splitlines()[1]) == (0, "5")
    # --db beats the variable.
    code, out, _ = invoke("--config", str(config), *sql, "--db", str(store), env=env)
    assert (code, out.splitlines()[1]) == (0, "6")
    # Neither: the file's [storage] path, which has no store yet.
    code, _, err = invoke("--config", str(config), *sql, env={"GPU_TRACKER_DB": ""})
    assert code == 1 and "from-config.duckdb" in err


def test_verbose_goes_after_the_command(store: Path) -> None:
    code, _, err = invoke("latest", "--db", str(store), "-v")
    assert code == 0, err
    assert logging.getLogger().getEffectiveLevel() == logging.INFO
    code, _, err = invoke("latest", "--db", str(store))
    assert code == 0, err
    assert logging.getLogger().getEffectiveLevel() == logging.WARNING


def test_version() -> None:
    code, out, _ = invoke("--version")
    assert code == 0
    assert out.strip() == f"gpu-tracker {importlib.metadata.version('gpu-price-tracker')}"


# --- filters ---------------------------------------------------------------------------------


def _instance_types(store: Path, *args: str) -> list[str]:
    code, out, err = invoke("latest", "--db", str(store), *args, "--format", "json")
    assert code == 0, err
    return [row["instance_type"] for row in json.loads(out)]


def test_provider_names_in_any_case_and_their_aliases(store: Path) -> None:
    assert _instance_types(store, "--provider", "AWS") == [
        "g6.xlarge",
        "p5.48xlarge",
        "p5.48xlarge",
    ]
    assert _instance_types(store, "--provider", "lambda") == ["gpu_8x_h100_sxm5"]
    assert _instance_types(store, "--provider", "LambdaLabs") == ["gpu_8x_h100_sxm5"]


def test_price_kinds_as_people_write_them(store: Path) -> None:
    on_demand = _instance_types(store, "--kind", "on-demand", "--gpu", "H100")
    assert on_demand == ["gpu_8x_h100_sxm5", "p5.48xlarge", "Standard_ND96isr_H100_v5"]
    assert _instance_types(store, "--kind", "on_demand", "--gpu", "H100") == on_demand
    assert _instance_types(store, "--kind", "Spot") == ["p5.48xlarge"]


@pytest.mark.parametrize(
    ("args", "named"),
    [
        # Every registered provider, aliases in brackets (the list grows with the registry).
        (("--provider", "hetzner"), f"unknown provider 'hetzner' (accepted: {provider_names()})"),
        (("--kind", "preemptible"), "unknown price kind 'preemptible' (accepted: on-demand (or "
         "on_demand), spot, reserved)"),
        (("--gpu", "H1000"), "--gpu H1000: no current offer has it (accepted: A10, A100, "
         "A10G,"),
        (("--region", "us-east-9"), "--region us-east-9: no current offer has it (accepted: "
         "eastus, us-east-1)"),
        (("--instance-type", "p9"), "--instance-type p9: no current offer has it (accepted: "
         "GN10X.2XLARGE40, Standard_ND96isr_H100_v5, g6.xlarge, gpu_8x_h100_sxm5, p5.48xlarge)"),
    ],
)  # fmt: skip
def test_a_value_nothing_matches_is_a_usage_error(
    store: Path, args: tuple[str, ...], named: str
) -> None:
    code, out, err = invoke("latest", "--db", str(store), *args)
    assert code == 2
    assert named in " ".join(err.split())
    assert out == ""


def test_a_known_model_with_no_offer_is_an_empty_answer(store: Path) -> None:
    code, out, err = invoke("latest", "--db", str(store), "--gpu", "b200")
    assert code == 0
    assert "no offers for B200 (" in err and "offers of other GPUs)" in err and out == ""


def test_collect_takes_aliases_and_refuses_unknown_providers(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[storage]\npath = "prices.duckdb"\n')
    code, _, err = invoke("--config", str(config), "collect", "--provider", "lambda", env={
        "LAMBDA_API_KEY": ""})  # fmt: skip
    assert code == 0, err
    assert "lambdalabs skipped: lambdalabs: no credentials; set LAMBDA_API_KEY" in err
    code, _, err = invoke("--config", str(config), "collect", "--provider", "Hetzner")
    assert code == 2 and "unknown provider 'Hetzner'" in err


# --- cut tables ------------------------------------------------------------------------------


def test_a_table_cut_at_the_limit_says_how_many_it_left_out(store: Path) -> None:
    code, out, err = invoke("latest", "--db", str(store), "--limit", "2")
    assert code == 0, err
    assert "USD: showing 2 of 5 offers, 3 left out (--limit 2; raise it to see more)" in out
    assert "CNY: showing" not in out  # one CNY offer: nothing was cut
    code, out, _ = invoke("latest", "--db", str(store), "--limit", "5")
    assert "left out" not in out


def test_a_document_cut_at_the_limit_says_so_on_stderr(store: Path) -> None:
    code, out, err = invoke("latest", "--db", str(store), "--limit", "1", "--format", "json")
    assert code == 0
    assert [(r["currency"], r["instance_type"]) for r in json.loads(out)] == [
        ("USD", "g6.xlarge"),
        ("CNY", "GN10X.2XLARGE40"),
    ]
    assert "USD: showing 1 of 5 offers, 4 left out (--limit 1" in err


_SPOT_RULE = """
[[alerts.rules]]
name = "cheap-spot"
kind = "spot_price_below"
threshold = 100
currency = "USD"
"""


def test_alerts_list_says_how_many_it_left_out(tmp_path: Path) -> None:
    now = datetime.now(UTC)
    records = [offer("aws", f"p{i}.48xlarge", "10", price_kind="spot") for i in range(3)]
    Store(tmp_path / "prices.duckdb").write_run(
        "aws", records, started_at=now, observed_at=now, regions=None
    )
    config = tmp_path / "config.toml"
    config.write_text(f'[storage]\npath = "prices.duckdb"\n{_SPOT_RULE}')
    code, _, err = invoke("alerts", "check", "--config", str(config))
    assert code == 0, err  # one alert per spot offer, to the console
    code, out, err = invoke("alerts", "list", "--config", str(config), "--limit", "1")
    assert code == 0, err
    assert "Recent alerts (last 1 of 3)" in out
    assert "2 older alerts left out (--limit 1)" in out
    code, out, _ = invoke("alerts", "list", "--config", str(config))
    assert "Recent alerts (last 3 of 3)" in out and "left out" not in out


def test_usd_title_keeps_its_brackets(store: Path) -> None:
    code, out, err = invoke("latest", "--db", str(store), "--usd")
    assert code == 0, err
    assert "Cheapest current offers (USD; other currencies converted with [fx])" in out


def test_sql_headers_are_not_markup(store: Path) -> None:
    code, out, _ = invoke("sql", "--db", str(store), 'SELECT 1 AS "[bold]x"')
    assert code == 0 and "[bold]x" in out


@pytest.mark.parametrize("fmt", ["table", "csv", "json"])
def test_data_is_printed_as_it_is(store: Path, fmt: str) -> None:
    """Text that looks like rich's emoji codes or markup is data: printed unchanged."""
    code, out, _ = invoke("sql", "--db", str(store), "SELECT ':thumbs_up: [b]x[/b]' AS t",
                          "--format", fmt)  # fmt: skip
    assert code == 0 and ":thumbs_up: [b]x[/b]" in out


# --- unreachable providers -------------------------------------------------------------------


@pytest.fixture
def refused_url() -> str:
    """A loopback port nothing listens on: bound, then closed, so connecting is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def test_a_refused_connection_is_one_line_with_its_tries(refused_url: str) -> None:
    with make_session(max_retries=1) as session, pytest.raises(FetchError) as caught:
        get_json(session, "lambdalabs", refused_url + "/api/v1/instance-types", timeout=5,
                 what="instance types")  # fmt: skip
    assert "NewConnectionError" in str(caught.value)  # the full text, kept for -v
    assert one_line("lambdalabs", caught.value) == (
        "lambdalabs: cannot reach 127.0.0.1 (connection refused) after 2 tries"
    )


def test_a_cause_an_sdk_keeps_in_an_attribute_is_found(refused_url: str) -> None:
    """The Alibaba SDK (Tea) wraps the requests error it got in `inner_exception`."""
    from Tea.exceptions import UnretryableException

    with pytest.raises(requests.ConnectionError) as refused:
        requests.get(refused_url, timeout=5)
    with pytest.raises(FetchError) as caught:
        try:
            raise UnretryableException(None, refused.value)
        except UnretryableException as exc:
            raise FetchError("alibaba", f"DescribeInstanceTypes page 1: {exc}") from exc
    assert one_line("alibaba", caught.value) == (
        "alibaba: cannot reach 127.0.0.1 (connection refused)"
    )


def test_an_error_that_is_not_about_reaching_keeps_its_own_words() -> None:
    assert one_line("azure", FetchError("azure", "page 2: HTTP 400: bad filter")) is None


def test_collect_offline_prints_one_line_per_provider(
    refused_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        f'[storage]\npath = "prices.duckdb"\n[providers.aws]\npricing_endpoint = "{refused_url}"\n'
        f'ec2_endpoint = "{refused_url}"\nregions = ["us-east-1"]\n'
    )
    env = {
        "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
        "AWS_SECRET_ACCESS_KEY": "x",
        "AWS_PROFILE": None,  # whatever profile the machine has: not this test's
        "AWS_CONFIG_FILE": str(tmp_path / "no-aws-config"),
        "AWS_EC2_METADATA_DISABLED": "true",
    }
    args = ("--config", str(config), "collect", "--provider", "aws")
    code, _, err = invoke(*args, env=env)
    assert code == 1
    summary = " ".join(err.split())
    assert "aws: cannot reach 127.0.0.1 (connection refused)" in summary
    assert "Could not connect" not in summary and "Error(" not in summary
    # The store keeps the whole error for later.
    runs = query(tmp_path / "prices.duckdb", "SELECT status, error FROM collection_runs")
    assert runs.rows[0][0] == "failed" and "Could not connect to the endpoint" in runs.rows[0][1]
    # -v: the full error in the log too.
    caplog.clear()
    code, _, _ = invoke(*args, "-v", env=env)
    assert code == 1
    assert any("Could not connect to the endpoint" in r.getMessage() for r in caplog.records)


def test_urllib3_retry_warnings_are_left_to_verbose(
    store: Path, refused_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    def retry_warnings() -> list[str]:
        caplog.clear()
        with make_session(max_retries=1) as session, pytest.raises(FetchError):
            get_json(session, "azure", refused_url, timeout=5, what="page 1")
        return [r.getMessage() for r in caplog.records if r.name.startswith("urllib3")]

    invoke("sql", "--db", str(store), "SELECT 1")  # the CLI sets up its logging
    assert retry_warnings() == []
    invoke("sql", "--db", str(store), "SELECT 1", "-v")
    assert any("Retrying" in line for line in retry_warnings())
    invoke("sql", "--db", str(store), "SELECT 1")


# --- start-up --------------------------------------------------------------------------------

_HEAVY = ("alerts.delivery", "apscheduler", "requests", "urllib3", "boto3", "botocore", "pyarrow",
          "tracker.daemon.service", "tracker.collecting.pipeline", "storage.store", "rich.progress",
          "prometheus_client", "pythonjsonlogger", "starlette", "uvicorn", "jinja2")  # fmt: skip
_AFTER_SQL = """
import sys
from tracker.cli import main
imported_by_import = [m for m in {heavy!r} if m in sys.modules]
sys.argv = ["gpu-tracker", "--db", sys.argv[1], "sql", "SELECT 1 AS one", "--format", "csv"]
try:
    main()
except SystemExit as exit:
    print("exit", exit.code)
print("by import:", *imported_by_import)
print("by sql:", *[m for m in {heavy!r} if m in sys.modules])
"""


def test_the_command_and_sql_import_nothing_heavy(store: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _AFTER_SQL.format(heavy=_HEAVY), str(store)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    lines = done.stdout.splitlines()
    assert lines[:3] == ["one", "1", "exit 0"], done.stderr
    assert lines[3:] == ["by import:", "by sql:"]


def test_demo_keep_prints_commands_that_work_as_printed(store: Path) -> None:
    lines = next_steps(store)
    commands = [shlex.split(line) for line in lines if line.strip().startswith("gpu-tracker ")]
    assert [argv[:3] for argv in commands] == [["gpu-tracker", "--db", str(store)]] * 2
    outputs = []
    for argv in commands:
        code, out, err = invoke(*argv[1:])
        assert code == 0, err
        outputs.append(" ".join(out.split()))
    assert "gpu_8x_h100_sxm5" in outputs[0] and "g6.xlarge" not in outputs[0]  # --gpu H100
    assert "lambdalabs │ 1" in outputs[1]
    assert "demo --keep" in next_steps(None)[0]
