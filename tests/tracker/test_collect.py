"""`gpu-tracker collect` and `gpu-tracker demo` end to end: real collectors, loopback servers,
a real DuckDB file, the real CLI."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from collectors import REGISTRY
from collectors.base import effective_hourly
from storage.query import query
from tracker.cli import cli
from tracker.collecting.demo import recordings
from tracker.collecting.replay import ReplayServer

FIXTURES = Path(__file__).parents[1] / "fixtures"
# The providers' one recordings (the demo's too); tests/fixtures keeps the rows that warn.
RECORDINGS = Path(__file__).parents[2] / "tracker" / "demo_data"
AZURE = RECORDINGS / "azure"
AWS_FIXTURE_TYPES = ["p4d.24xlarge", "p5.48xlarge", "g4dn.xlarge", "p3.2xlarge"]


pytestmark = pytest.mark.usefixtures("aws_test_keys")


def write_config(tmp_path: Path, aws: str | None, azure: str | None) -> Path:
    lines = ['[storage]\npath = "prices.duckdb"']
    for name, url, regions in (
        ("aws", aws, '["us-east-1", "us-west-2", "eu-west-1"]'),
        ("azure", azure, None),  # every region the answer has
    ):
        if url is None:
            lines.append(f"[providers.{name}]\nenabled = false")
        else:
            lines.append(f'[providers.{name}]\nendpoint = "{url}"\ntimeout = 2')
            if regions is not None:
                lines.append(f"regions = {regions}")
            if name == "aws":  # the instance types the AWS recording prices
                lines.append(f"instance_types = {json.dumps(AWS_FIXTURE_TYPES)}")
    # The other providers are out of these tests' scope (each has its own).
    lines += [f"[providers.{n}]\nenabled = false" for n in REGISTRY if n not in ("aws", "azure")]
    path = tmp_path / "config.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def collect(config: Path, *args: str) -> Any:
    return CliRunner().invoke(cli, ["--config", str(config), "collect", *args])


def runs(store: Path) -> list[tuple[Any, ...]]:
    # Providers are collected in parallel: order by provider, then time.
    sql = "SELECT provider, status, records, error FROM collection_runs ORDER BY provider, run_id"
    return query(store, sql).rows


def broken_recording(tmp_path: Path, folder: str, fail_body_file: str, status: int = 500) -> Path:
    """A copy of a recording whose page `fail_body_file` always answers `status`."""
    copy = tmp_path / f"broken-{folder}"
    shutil.copytree(RECORDINGS / folder, copy)
    spec = json.loads((copy / "exchanges.json").read_text())
    for exchange in spec["exchanges"]:
        if exchange.get("body_file") == fail_body_file:
            exchange.update(status=status, body='{"error": "boom"}', times=None)
            exchange.pop("body_file")
    (copy / "exchanges.json").write_text(json.dumps(spec))
    return copy


def test_collect_stores_both_providers(replay: Any, tmp_path: Path) -> None:
    aws: ReplayServer = replay(RECORDINGS / "aws")
    azure: ReplayServer = replay(AZURE)
    config = write_config(tmp_path, aws.url, azure.url + "/api/retail/prices")
    result = collect(config)
    assert result.exit_code == 0, result.output
    store = tmp_path / "prices.duckdb"
    assert [(p, s) for p, s, _, _ in runs(store)] == [("aws", "ok"), ("azure", "ok")]
    # Checked by hand from the API's own numbers: Azure's Reservation row carries the term's
    # total (551221.0 for one year of ND96isr H100 v5); AWS's p4d on-demand is 21.9576420000.
    got = query(
        store,
        "SELECT provider, price_per_hour, upfront_total FROM latest_prices WHERE "
        "(instance_type = 'Standard_ND96isr_H100_v5' AND price_kind = 'reserved' "
        " AND term_months = 12 AND region = 'eastus' AND offering_class IS NULL) OR "
        "(instance_type = 'p4d.24xlarge' AND price_kind = 'on_demand' AND region = 'us-east-1') "
        "ORDER BY provider",
    ).rows
    assert got == [("aws", 21.957642, None), ("azure", 62.924772, 551221.0)]
    assert effective_hourly(Decimal(0), Decimal("551221.0"), 12) == Decimal("62.924772")
    assert aws.unmatched == [] and azure.unmatched == []


def test_one_failing_provider_does_not_stop_the_other(replay: Any, tmp_path: Path) -> None:
    # AWS's second pricing page of p4d.24xlarge keeps answering 500: the whole AWS run is lost,
    # Azure lands, and the exit code says something failed.
    aws = replay(broken_recording(tmp_path, "aws", "pricing-p4d.24xlarge-page2.json"))
    azure = replay(AZURE)
    config = write_config(tmp_path, aws.url, azure.url + "/api/retail/prices")
    result = collect(config)
    assert result.exit_code == 1
    store = tmp_path / "prices.duckdb"
    (aws_run, azure_run) = runs(store)
    assert aws_run[:3] == ("aws", "failed", 0)
    assert "p4d.24xlarge" in aws_run[3] and "page 2" in aws_run[3]
    assert azure_run[:2] == ("azure", "ok")
    providers = query(store, "SELECT DISTINCT provider FROM prices").rows
    assert providers == [("azure",)]


def test_a_failed_run_keeps_the_history_it_had(replay: Any, tmp_path: Path) -> None:
    azure = replay(AZURE)
    config = write_config(tmp_path, None, azure.url + "/api/retail/prices")
    assert collect(config).exit_code == 0
    store = tmp_path / "prices.duckdb"
    before = query(store, "SELECT * FROM prices ORDER BY ALL").rows

    # A 400 fails at once (a 5xx would be retried with backoff first: seconds, same outcome).
    broken = replay(broken_recording(tmp_path, "azure", "page2.json", status=400))
    config = write_config(tmp_path, None, broken.url + "/api/retail/prices")
    result = collect(config)
    assert result.exit_code == 1
    assert query(store, "SELECT * FROM prices ORDER BY ALL").rows == before
    assert runs(store)[-1][:2] == ("azure", "failed")
    assert "page 2" in runs(store)[-1][3]


def test_collecting_again_changes_nothing(replay: Any, tmp_path: Path) -> None:
    azure = replay(AZURE)
    config = write_config(tmp_path, None, azure.url + "/api/retail/prices")
    assert collect(config).exit_code == 0
    assert collect(config).exit_code == 0
    store = tmp_path / "prices.duckdb"
    changed = query(store, "SELECT changed FROM collection_runs ORDER BY run_id").rows
    assert changed[0][0] > 0 and changed[1] == (0,)
    assert query(store, "SELECT count(*) FROM prices WHERE valid_to IS NOT NULL").rows == [(0,)]


def test_missing_credentials_skip_with_the_variable_to_set(
    replay: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    azure = replay(AZURE)
    config = write_config(tmp_path, "http://127.0.0.1:9", azure.url + "/api/retail/prices")
    result = collect(config)
    assert result.exit_code == 0
    assert "aws skipped" in result.output and "AWS_ACCESS_KEY_ID" in result.output
    assert [(p, s) for p, s, _, _ in runs(tmp_path / "prices.duckdb")] == [
        ("aws", "skipped"),
        ("azure", "ok"),
    ]


def test_an_answer_without_gpu_prices_fails_rather_than_withdrawing_everything(
    replay: Any, tmp_path: Path
) -> None:
    azure = replay(AZURE)
    config = write_config(tmp_path, None, azure.url + "/api/retail/prices")
    assert collect(config).exit_code == 0
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "page.json").write_text(
        '{"BillingCurrency": "USD", "Items": [], "NextPageLink": null, "Count": 0}'
    )
    (empty / "exchanges.json").write_text(
        '{"exchanges": [{"match": {"method": "GET"}, "body_file": "page.json"}]}'
    )
    server = replay(empty)
    config = write_config(tmp_path, None, server.url + "/api/retail/prices")
    result = collect(config)
    assert result.exit_code == 1
    store = tmp_path / "prices.duckdb"
    assert "no GPU price" in runs(store)[-1][3]
    assert query(store, "SELECT count(*) FROM latest_prices").rows[0][0] > 0


def test_unknown_instance_types_are_named_in_the_summary(replay: Any, tmp_path: Path) -> None:
    # The recording's second page with the trap row of an SKU the GPU table does not know.
    page2 = json.loads((AZURE / "page2.json").read_text())
    page2["Items"] += json.loads((FIXTURES / "azure" / "traps.json").read_text())["page-2"]
    trap = tmp_path / "trap"
    trap.mkdir()
    (trap / "page2.json").write_text(json.dumps(page2))
    ask = {"method": "GET", "path": "/api/retail/prices", "query": {"$skip": "1000"}}
    (trap / "exchanges.json").write_text(
        json.dumps({"exchanges": [{"match": ask, "body_file": "page2.json"}]})
    )
    azure = replay(trap, AZURE)
    config = write_config(tmp_path, None, azure.url + "/api/retail/prices")
    result = collect(config)
    assert "unknown GPU instance types, not stored" in result.output


def test_collect_rejects_an_unknown_provider(tmp_path: Path) -> None:
    config = write_config(tmp_path, None, None)
    result = collect(config, "--provider", "hetzner")
    assert result.exit_code == 2
    assert "unknown provider 'hetzner' (accepted: alibaba, aws," in result.output
    assert not (tmp_path / "prices.duckdb").exists()


def test_demo_runs_offline_end_to_end(tmp_path: Path) -> None:
    """The installed command, as a user runs it: a fresh process, no credentials, no network."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "AWS_EC2_METADATA_DISABLED": "true"}
    if "PYTHONPATH" in os.environ:  # a checkout run beside another's install: this one's code
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    store = tmp_path / "demo.duckdb"
    done = subprocess.run(
        [sys.executable, "-m", "tracker", "demo", "--keep", str(store)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "Cheapest current offers (USD)" in done.stdout
    assert "p5.48xlarge" in done.stdout and "Standard_ND96isr_H200_v5" in done.stdout
    # Its cheapest per model is what can be rented: Lambda's RTX 6000 type, the cheapest but
    # sold out in the recording, is not named.
    assert "gpu_1x_rtx6000" not in done.stdout
    # Its own recordings warn about nothing; invented prices are said to be.
    output = done.stderr + done.stdout
    assert not [line for line in output.splitlines() if " WARNING " in line or " ERROR " in line]
    assert "unknown GPU" not in output
    # It says what to run next on the store it kept (test_cli_options runs those commands).
    assert f"gpu-tracker --db {store} latest" in done.stderr
    assert (
        f"illustrative prices: {', '.join(_illustrative())} (their APIs' real formats, "
        "invented" in " ".join(done.stdout.split())
    )
    runs = query(
        store,
        "SELECT provider, status, records, started_at FROM collection_runs "
        "ORDER BY provider, started_at",
    )
    # Every registered provider is in the demo, twice (six months apart), and succeeds each time.
    by_provider: dict[str, list[Any]] = {}
    for provider, status, records, started_at in runs.rows:
        assert status == "ok", provider
        by_provider.setdefault(provider, []).append((records, started_at))
    assert sorted(by_provider) == sorted(REGISTRY)
    for provider, (earlier, now) in by_provider.items():
        assert 180 <= (now[1] - earlier[1]).days <= 185, provider
    # AWS from its public files: 35 on-demand and reserved prices, 11 spot (one per region and
    # type: 3 in us-east-1, 2 in us-west-2, 6 in eu-west-1) and the Savings Plans prices.
    # Azure: 55 offers and 12 savings plans (tracker/demo_data/azure/README.md).
    plans = query(
        store,
        "SELECT count(*) FROM latest_prices WHERE offering_class IN"
        " ('compute_savings_plan', 'ec2_instance_savings_plan')",
    )
    assert plans.rows == [(20,)]  # tracker/demo_data/aws/README.md
    assert (by_provider["aws"][1][0], by_provider["azure"][1][0]) == (46 + 20, 67)
    kinds = query(store, "SELECT DISTINCT provider, price_kind FROM latest_prices ORDER BY ALL")
    for provider in ("aws", "azure"):
        assert {k for p, k in kinds.rows if p == provider} == {"on_demand", "reserved", "spot"}
    # Prices moved between the snapshots: an on-demand cut, a spot drop, a sold-out flip.
    p5 = query(
        store,
        "SELECT price_per_hour, valid_to IS NULL FROM prices WHERE provider = 'aws' "
        "AND region = 'us-east-1' AND instance_type = 'p5.48xlarge' AND price_kind = 'on_demand' "
        "ORDER BY valid_from",
    )
    assert p5.rows == [(98.32, False), (55.04, True)]
    spot = query(
        store,
        "SELECT price_per_hour FROM prices WHERE provider = 'azure' AND region = 'eastus' "
        "AND instance_type = 'Standard_NC24ads_A100_v4' AND price_kind = 'spot' "
        "ORDER BY valid_from",
    )
    assert spot.rows == [(0.61,), (0.444433,)]
    flip = query(
        store,
        "SELECT available FROM prices WHERE provider = 'paperspace' "
        "AND instance_type = 'gpu-h200x8-1128gb' ORDER BY valid_from",
    )
    assert flip.rows == [(True,), (False,)]


_COLLECT_THEN_LIST_MODULES = """
import sys
from tracker.cli import main
sys.argv = ["gpu-tracker", "--config", sys.argv[1], "collect", "--provider", "azure"]
try:
    main()
except SystemExit as exit:
    print("exit", exit.code, "boto3" in sys.modules, "botocore" in sys.modules)
"""


def test_collecting_azure_never_imports_boto3(replay: Any, tmp_path: Path) -> None:
    azure = replay(AZURE)
    config = write_config(tmp_path, None, azure.url + "/api/retail/prices")
    done = subprocess.run(
        [sys.executable, "-c", _COLLECT_THEN_LIST_MODULES, str(config)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout.split()[-4:] == ["exit", "0", "False", "False"], done.stderr


def test_progress_display_on_a_terminal(replay: Any, tmp_path: Path) -> None:
    import io

    from rich.console import Console

    from tracker import config as config_mod
    from tracker.cli.screen.collecting import run_collection

    azure = replay(AZURE)
    config = config_mod.load(write_config(tmp_path, None, azure.url + "/api/retail/prices"))
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=120)
    outcomes = run_collection(console, config, (), {})
    assert [o.status for o in outcomes] == ["ok"]
    text = screen.getvalue()
    assert "azure ok" in text and "2 pages, 66 items" in text
    assert "Collection summary" in text


def _illustrative() -> list[str]:
    """The providers whose demo recording says its prices are invented, as the demo names them."""
    meta = {name: json.loads((f / "demo.json").read_text()) for name, f in recordings().items()}
    return [name for name, m in meta.items() if m.get("illustrative")]
