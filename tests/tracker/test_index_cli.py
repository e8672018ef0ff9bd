"""`gpu-tracker index` through the real CLI on `index_support`'s store: the JSON a user gets
(its fields, the kind words, a past day counted at its end), CSV, the chart, and the usage
errors naming the accepted values."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from PIL import Image

from tests.storage.reads import index_support
from tracker.cli import cli


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return index_support.build(tmp_path_factory.mktemp("index_cli") / "prices.duckdb")


def run(db: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["--db", str(db), "index", *args])
    return result.exit_code, result.stdout, result.stderr


def as_json(db: Path, *args: str) -> list[dict[str, Any]]:
    code, out, err = run(db, *args, "--format", "json")
    assert code == 0, err
    found: list[dict[str, Any]] = json.loads(out)
    return found


def test_json_one_object_per_day_gpu_kind_and_segment(db: Path) -> None:
    found = as_json(
        db, "--gpu", "H100", "--kind", "on-demand", "--since", "2026-11-01", "--until", "2026-11-04"
    )
    assert [row["date"] for row in found] == ["2026-11-01", "2026-11-02", "2026-11-03"]
    assert found[0] == {
        "date": "2026-11-01",
        "gpu_model": "H100",
        "gpu_memory_gib": 80.0,
        "kind": "on_demand",
        "segment": "all",
        "index_usd_per_gpu_hour": 2.5,
        "providers": 4,
        "ci_low": None,
        "ci_high": None,
        "low_confidence": False,
    }
    # 2026-11-03 is a past day now: counted at its end, lambdalabs at 1.0 (from 18:00), so the
    # lower middle of 1.0 1.6 2.8 4.0 is 1.6.
    assert found[2]["index_usd_per_gpu_hour"] == 1.6


def test_segment_and_csv(db: Path) -> None:
    found = as_json(db, "--gpu", "h100", "--segment", "Hyperscaler", "--since", "2026-11-02",
                    "--until", "2026-11-03")  # fmt: skip
    assert [(r["segment"], r["index_usd_per_gpu_hour"], r["low_confidence"]) for r in found] == [
        ("hyperscaler", 2.8, True)
    ]
    code, out, _ = run(db, "--gpu", "L4", "--since", "2026-11-02", "--until", "2026-11-03",
                       "--format", "csv")  # fmt: skip
    assert code == 0
    assert out.splitlines()[1] == "2026-11-02,L4,24.0,on_demand,all,3.0,6,1.0,6.0,False"


def test_no_day_before_the_first_offer(db: Path) -> None:
    assert as_json(db, "--since", "2026-10-01", "--until", "2026-11-01") == []


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--kind", "reserved"), "accepted: on-demand (or on_demand), spot"),
        (("--segment", "cloud"), "accepted: all, hyperscaler, neocloud, marketplace"),
        (("--gpu", "H1000"), "--gpu H1000"),
        (("--since", "2026-11-05", "--until", "2026-11-01"), "must come before"),
    ],
)
def test_usage_errors_name_the_accepted_values(db: Path, args: tuple[str, ...], words: str) -> None:
    code, _, err = run(db, *args)
    assert code == 2
    assert words in err


def test_chart_one_line_per_segment(db: Path, tmp_path: Path) -> None:
    chart = tmp_path / "index.png"
    code, _, err = run(db, "--gpu", "H100", "--kind", "spot", "--since", "2026-11-01",
                       "--chart", str(chart))  # fmt: skip
    assert code == 0, err  # no spot offers: nothing drawn, said so
    assert "no chart written" in err
    code, _, err = run(db, "--gpu", "H100", "--kind", "on-demand", "--since", "2026-11-01",
                       "--chart", str(chart))  # fmt: skip
    assert code == 0, err
    with Image.open(chart) as image:
        assert image.size[0] > 600
    code, _, err = run(db, "--since", "2026-11-01", "--chart", str(chart))
    assert code == 2
    assert "give --gpu" in err
