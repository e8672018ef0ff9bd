"""`history --per-gpu` and `--usd` through the real CLI and the API on the series store of
`series_support` plus a 1-GPU Lambda offer: per-GPU figures checked by hand, the ranking they
change, and the warning said before statistics that may outrun the time limit."""

from __future__ import annotations

import json
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from storage.store import Store
from tests.storage.reads import series_support
from tracker.cli import cli
from tracker.questions.history import slow_words
from tracker.web import api

WINDOW = ["--since", "2026-11-01", "--until", "2026-11-11T00:00:00Z"]
# One A100 at 1.50 USD/h: the cheapest instance-hour, but dearer per GPU than the p4d's spot
# (8 GPUs at a mean of 10.666667 USD/h: 1.333333 per GPU-hour).
ONE_GPU = replace(
    series_support.SPOT,
    provider="lambdalabs",
    region="us-east-1",
    zone=None,
    instance_type="gpu_1x_a100",
    price_kind="on_demand",
    price_per_hour=Decimal("1.50"),
    gpu_count=1,
    effective_at=None,
)


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = series_support.build(tmp_path_factory.mktemp("rankings") / "prices.duckdb")
    at = series_support.day(1)
    Store(path, fx_rates=series_support.RATES).write_run(
        "lambdalabs", [ONE_GPU], started_at=at, observed_at=at, regions=None
    )
    return path


def as_json(db: Path, *args: str) -> list[dict[str, Any]]:
    result = CliRunner().invoke(
        cli, ["--db", str(db), "history", *WINDOW, "--format", "json", *args]
    )
    assert result.exit_code == 0, result.stderr
    found: list[dict[str, Any]] = json.loads(result.stdout)
    return found


def test_instance_hours_rank_the_one_gpu_offer_first(db: Path) -> None:
    found = as_json(db)
    assert [s["instance_type"] for s in found] == ["gpu_1x_a100", "p4d.24xlarge", "GT4.41XLARGE948"]


def test_per_gpu_ranks_and_shows_per_gpu_hour(db: Path) -> None:
    spot, one, tencent = as_json(db, "--per-gpu", "--below", "1.6")
    assert (spot["instance_type"], one["instance_type"]) == ("p4d.24xlarge", "gpu_1x_a100")
    # The spot's intervals over 8 GPUs: 10/8 for 24 h, 14/8 for 24 h, 12/8 for 96 h, 8/8 for 72 h.
    assert (spot["min"], spot["max"], spot["current"]) == (1.0, 1.75, 1.0)
    assert spot["mean"] == 1.333333  # (1.25*24 + 1.75*24 + 1.5*96 + 1*72) / 216 = 288 / 216
    assert (spot["p50"], spot["p95"]) == (1.5, 1.75)
    assert spot["below_share"] == 0.888889  # (24 + 96 + 72) / 216 below 1.6 per GPU-hour
    assert one["mean"] == 1.5 and one["currency"] == "USD"
    # Tencent stays in CNY: 100/8 then 120/8 per GPU-hour, 120 h each.
    assert (tencent["currency"], tencent["mean"], tencent["mean_usd"]) == ("CNY", 13.75, 2.0)


def test_usd_shows_every_series_in_usd(db: Path) -> None:
    found = {s["provider"]: s for s in as_json(db, "--usd", "--per-gpu")}
    tencent = found["tencent"]
    # 100 CNY at 0.14 over 8 GPUs = 1.75; 120 CNY at 0.15 over 8 = 2.25; 120 h each.
    assert (tencent["currency"], tencent["min"], tencent["max"]) == ("USD", 1.75, 2.25)
    assert tencent["mean"] == tencent["mean_usd"] == 2.0
    assert as_json(db, "--usd")[-1]["mean"] == 16.0  # (14 + 18) / 2 per instance-hour


def test_the_table_names_its_unit(db: Path) -> None:
    result = CliRunner().invoke(cli, ["--db", str(db), "history", *WINDOW, "--per-gpu", "--usd"])
    assert result.exit_code == 0
    assert "Price history (USD per GPU-hour)" in result.stdout
    assert "CNY" not in result.stdout


def test_the_api_takes_the_same_switches(db: Path) -> None:
    query = {"since": ["2026-11-01"], "until": ["2026-11-11"], "per_gpu": ["1"], "usd": ["1"]}
    found = api.history(db, query, timeout_s=30)
    assert [s["instance_type"] for s in found][:2] == ["p4d.24xlarge", "gpu_1x_a100"]
    assert found[0]["mean"] == 1.333333
    with pytest.raises(api.BadRequest, match="per_gpu"):
        api.history(db, {"per_gpu": ["maybe"]}, timeout_s=30)


def test_a_long_read_is_announced_with_how_to_allow_it() -> None:
    assert slow_words(1_000, 60, 120) is None
    words = slow_words(25_000_000, 60, 120)
    assert words is not None and words.startswith("25,000,000 price intervals lie in the window")
    assert "about 25 s on an idle machine and up to 3 min on a busy one" in words
    assert "past the 60 s time limit ([storage] query_timeout)" in words
    assert "--timeout (below [storage] write_wait, 120 s)" in words


def test_a_timeout_past_the_write_wait_is_refused(db: Path) -> None:
    result = CliRunner().invoke(cli, ["--db", str(db), "history", "--timeout", "5m"])
    assert result.exit_code == 2
    assert "--timeout: 300 s is not shorter than [storage] write_wait (120 s)" in result.stderr
    result = CliRunner().invoke(cli, ["--db", str(db), "history", *WINDOW, "--timeout", "90s"])
    assert result.exit_code == 0 and result.stderr == ""


def test_the_warning_comes_before_the_answer(db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tracker.questions import history as history_q

    # As if every interval cost a minute: the count in the window foretells a long wait.
    monkeypatch.setattr(history_q, "SECONDS_PER_MILLION", (6e7, 6e7))
    result = CliRunner().invoke(cli, ["--db", str(db), "history", *WINDOW, "--format", "json"])
    assert result.exit_code == 0
    # The spot series 4 intervals, Tencent 2, Lambda 1.
    assert result.stderr.startswith("7 price intervals lie in the window")
    assert len(json.loads(result.stdout)) == 3


def test_the_chart_draws_the_prices_the_table_shows(db: Path, tmp_path: Path) -> None:
    from storage.reads.series import SeriesFilters, Window, intervals

    window = Window(series_support.SINCE, series_support.UNTIL)
    steps = intervals(db, SeriesFilters(provider="tencent"), window, price="price_per_gpu_hour_usd")
    (((_, currency), found),) = steps.items()
    assert currency == "USD" and [i.price for i in found] == [1.75, 2.25]  # 100*0.14/8, 120*0.15/8
    # In USD, the CNY series shares the axis: no refusal for two currencies.
    target = tmp_path / "usd.png"
    result = CliRunner().invoke(
        cli, ["--db", str(db), "history", *WINDOW, "--per-gpu", "--usd", "--chart", str(target)]
    )
    assert result.exit_code == 0, result.stderr
    assert target.exists() and "chart written" in result.stderr
