"""The review's largest like-for-like moves on the demo store (`gpu-tracker demo --keep`, whose
six-months-ago snapshot holds the documented moves: AWS p5.48xlarge on-demand 98.32 -> 55.04
USD/h, Lambda's 8x H100 35.92 -> 31.92 in three regions), through the real CLI and the digest's
renderings."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from alerts import digest, digest_render
from tracker.cli import cli
from tracker.config.daemon import ReviewSettings, Since
from tracker.review.build import build


@pytest.fixture(scope="module")
def store(demo_kept: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return Path(shutil.copy(demo_kept, tmp_path_factory.mktemp("moves") / "demo.duckdb"))


@pytest.fixture(scope="module")
def facts(store: Path) -> dict[str, Any]:
    result = CliRunner().invoke(cli, ["--db", str(store), "review", "--format", "json"])
    assert result.exit_code == 0, result.output
    found: dict[str, Any] = json.loads(result.stdout)
    return found


def moves_of(facts: dict[str, Any], model: str, kind: str) -> list[dict[str, Any]]:
    return [m for m in facts["moves"] if (m["gpu_model"], m["price_kind"]) == (model, kind)]


def test_the_documented_moves_appear_with_their_figures(facts: dict[str, Any]) -> None:
    falls = moves_of(facts, "H100", "on_demand")
    p5, lambda8 = (
        next(m for m in falls if m["instance_type"] == name)
        for name in ("p5.48xlarge", "gpu_8x_h100_sxm5")
    )
    assert p5 == {
        "gpu_model": "H100",
        "gpu_memory_gib": 80.0,
        "price_kind": "on_demand",
        "direction": "down",
        "provider": "aws",
        "region": "us-east-1",
        "zone": None,
        "instance_type": "p5.48xlarge",
        "term_months": None,
        "payment_option": None,
        "offering_class": None,
        "gpu_count": 8,
        "currency": "USD",
        "from_price": 98.32,
        "to_price": 55.04,
        "change_share": -0.440195,  # 55.04 / 98.32 - 1
        "change_pct": -44.02,
        "from_usd_per_gpu_hour": 12.29,  # 98.32 / 8
        "usd_per_gpu_hour": 6.88,  # 55.04 / 8
        "places": 1,
    }
    assert (lambda8["provider"], lambda8["from_price"], lambda8["to_price"]) == (
        "lambdalabs",
        35.92,
        31.92,
    )
    assert lambda8["change_share"] == -0.111359  # 31.92 / 35.92 - 1
    assert lambda8["usd_per_gpu_hour"] == 3.99  # 31.92 / 8
    assert lambda8["places"] == 3  # the same cut in three regions: one row stands for them


def test_at_most_three_each_way_per_model_memory_and_kind(facts: dict[str, Any]) -> None:
    groups: dict[tuple[Any, ...], list[float]] = {}
    for m in facts["moves"]:
        key = (m["gpu_model"], m["gpu_memory_gib"], m["price_kind"], m["direction"])
        groups.setdefault(key, []).append(m["change_share"])
        assert (m["direction"] == "down") == (m["change_share"] < 0)
    assert groups and all(len(shares) <= 3 for shares in groups.values())
    # Largest first: a fall's share grows towards zero, a rise's shrinks.
    assert all(sorted(s, key=abs, reverse=True) == s for s in groups.values())
    ups = moves_of(facts, "H100", "on_demand")
    assert any(m["direction"] == "up" and m["provider"] == "runpod" for m in ups)


def test_text_html_and_slack_show_the_moves(facts: dict[str, Any]) -> None:
    text = digest.plain_text(facts)
    (line,) = [row for row in text.splitlines() if "p5.48xlarge " in row and "-44.0%" in row]
    assert line.startswith("H100 80GB") and "98.32 USD" in line and "6.88" in line
    assert "gpu_8x_h100_sxm5 (and 2 more places alike)" in text
    html = digest_render.html_body(facts)
    assert "<h3>Largest moves</h3>" in html and "-11.1%" in html
    blocks = digest_render.slack_message(facts)["blocks"]
    assert any("-44.0%" in b.get("text", {}).get("text", "") for b in blocks)


def test_the_table_lists_them(store: Path) -> None:
    result = CliRunner().invoke(cli, ["--db", str(store), "review"])
    assert result.exit_code == 0
    assert "Largest moves" in result.stdout and "-44.0%" in result.stdout


def test_only_the_models_followed(store: Path) -> None:
    review = build(
        store, datetime.now(UTC), Since(6, "mo"), settings=ReviewSettings(gpus=("A100",))
    )
    assert review.moves and {m["gpu_model"] for m in review.moves} == {"A100"}
