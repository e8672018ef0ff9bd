"""`gpu-tracker history` through the real CLI on a real store: the statistics as JSON checked
by hand (the intervals are drawn in `series_support`), usage errors, empty answers, the chart."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from PIL import Image

from tests.storage.reads.series_support import build
from tracker.cli import cli

WINDOW = ["--since", "2026-11-01", "--until", "2026-11-11T00:00:00Z"]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("history") / "prices.duckdb")


def run(db: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["--db", str(db), "history", *args])
    return result.exit_code, result.stdout, result.stderr


def as_json(db: Path, *args: str) -> list[dict[str, Any]]:
    code, out, err = run(db, *WINDOW, "--format", "json", *args)
    assert code == 0, err
    found: list[dict[str, Any]] = json.loads(out)
    return found


def test_json_statistics_of_the_spot_and_the_cny_series(db: Path) -> None:
    spot, tencent = as_json(db, "--below", "11")
    assert spot == {
        "provider": "aws",
        "region": "us-east-1",
        "zone": "us-east-1a",
        "instance_type": "p4d.24xlarge",
        "price_kind": "spot",
        "term_months": None,
        "payment_option": None,
        "offering_class": None,
        "currency": "USD",
        "covered_hours": 216.0,  # 24 + 24 + 96 + 72: the 24 h gap and the time before 11-01 out
        "min": 8.0,
        "max": 14.0,
        "mean": 10.666667,  # (10*24 + 14*24 + 12*96 + 8*72) / 216 = 2304 / 216
        "p50": 12.0,  # at or below 10: 96 h < 108 h (half); at or below 12: 192 h
        "p95": 14.0,  # 95 % = 205.2 h > 192 h
        "changes": 3,  # 11-02, 11-04, 11-08
        "current": 8.0,
        "below_share": 0.444444,  # (72 + 24) / 216
        "mean_usd": 10.666667,
    }
    assert tencent["currency"] == "CNY"
    assert (tencent["mean"], tencent["p50"], tencent["p95"]) == (110.0, 100.0, 120.0)
    # 100 CNY at 0.14 for 120 h, 120 CNY at 0.15 for 120 h: (14 + 18) / 2 = 16 USD
    assert tencent["mean_usd"] == 16.0
    assert tencent["below_share"] == 0.0  # no time below 11 CNY


def test_filters_take_aliases_and_any_case(db: Path) -> None:
    found = as_json(db, "--provider", "AWS", "--kind", "Spot", "--zone", "US-EAST-1A")
    assert [s["instance_type"] for s in found] == ["p4d.24xlarge"]
    assert as_json(db, "--gpu", "a100", "--kind", "on-demand")[0]["provider"] == "tencent"


def test_a_duration_window_counts_back_from_the_same_now(db: Path) -> None:
    # Nothing was priced in the last hour before now? The open intervals were: both series.
    found = as_json(db, "--since", "2h", "--until", "1h")
    assert [s["covered_hours"] for s in found] == [1.0, 1.0]
    assert [s["changes"] for s in found] == [0, 0]


def test_a_window_reaching_past_now_ends_now(db: Path) -> None:
    code, out, err = run(db, "--since", "1h", "--until", "2999-01-01", "--format", "json")
    assert code == 0
    assert "--until is later than now: the window ends now" in err
    # Both series are open: each covers the last hour, never hours to come.
    assert [s["covered_hours"] for s in json.loads(out)] == [1.0, 1.0]


def test_table_names_each_series_and_says_what_the_limit_left_out(db: Path) -> None:
    code, out, _ = run(db, *WINDOW, "--limit", "1", "--below", "11")
    assert code == 0
    assert "aws/us-east-1/us-east-1a/p4d.24xlarge spot" in out
    assert "10.6667" in out and "44.4%" in out
    assert "tencent" not in out
    assert "showing 1 of 2 series, 1 left out (--limit 1" in out


def test_csv_has_one_row_per_series(db: Path) -> None:
    code, out, _ = run(db, *WINDOW, "--format", "csv")
    lines = out.splitlines()
    assert code == 0 and len(lines) == 3
    assert lines[0].startswith("provider,region,zone,instance_type,price_kind,term_months")
    assert lines[2].startswith("tencent,ap-guangzhou,,GT4.41XLARGE948,on_demand,,,,CNY,240.0")


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--since", "2026-11-05", "--until", "2026-11-01"], "--since (2026-11-05 00:00 UTC)"),
        (["--since", "last tuesday"], "'--since'"),
        (["--until", "2026-13-01"], "'--until'"),
        (["--kind", "cheap"], "'--kind'"),
        (["--provider", "nosuch"], "'--provider'"),
        (["--term", "0"], "'--term'"),
        (["--below", "-1"], "'--below'"),
        (["--format", "xml"], "'--format'"),
    ],
)
def test_usage_errors_exit_2_naming_the_option(db: Path, args: list[str], words: str) -> None:
    code, out, err = run(db, *args)
    assert code == 2 and out == ""
    assert words in err


def test_empty_answers_say_why(db: Path) -> None:
    code, out, err = run(db, *WINDOW, "--gpu", "H100", "--format", "json")
    assert (code, json.loads(out)) == (0, [])
    assert "no series for H100 (" in err and "series of other GPUs)" in err
    code, out, err = run(db, "--since", "2026-11-03", "--until", "2026-11-04", "--provider", "aws")
    assert code == 0
    assert "1 series matched, but none has a price covering any time between" in err
    code, _, err = run(db, *WINDOW, "--gpu", "H100", "--chart", "none.png")
    assert code == 0 and "no chart written to none.png: no series to draw" in err


def test_chart_draws_the_series_as_a_png(db: Path, tmp_path: Path) -> None:
    target = tmp_path / "spot.png"
    code, _, err = run(db, *WINDOW, "--kind", "spot", "--chart", str(target))
    assert code == 0, err
    assert f"chart written to {target} (1 series)" in err
    with Image.open(target) as image:
        assert image.format == "PNG" and image.size[0] > 600


def test_chart_refuses_two_currencies_on_one_axis(db: Path, tmp_path: Path) -> None:
    target = tmp_path / "both.png"
    code, out, err = run(db, *WINDOW, "--chart", str(target))
    assert code == 2 and out == ""
    assert "priced in CNY, USD" in err
    assert not target.exists()
