"""The review of the GPU models a user follows, priced for the user's need: `[review] gpus`,
`tco_gpus`, `tco_months` and `tco_utilization`, on the review scenario's store (review_support),
through the real config, the real build and the real CLI. Figures worked out by hand.

The need below: 4 GPUs for 24 months (730 x 24 = 17520 hours) at 50 % use: 8760 hours used.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from alerts import digest, digest_render
from alerts.review import compute as compute_words
from collectors.common import ConfigError
from tests.tracker.review_support import MIN, NOW, scenario, scenario_now
from tracker import config as config_mod
from tracker.cli import cli
from tracker.config.daemon import ReviewSettings, Since
from tracker.review import chart
from tracker.review.build import build, send

SIX = Since(6, "mo")
FOLLOW = ReviewSettings(gpus=("A100", "H100"), tco_gpus=4, tco_months=24, tco_utilization=0.5)


def model(facts: dict[str, Any], name: str) -> dict[str, Any]:
    (found,) = [m for m in facts["models"] if m["gpu_model"] == name]
    return found


def where(o: dict[str, Any] | None) -> tuple[Any, ...] | None:
    return None if o is None else (o["provider"], o["instance_type"], o["price_kind"])


@pytest.fixture(scope="module")
def facts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    # Built once per module: the tests only read the facts.
    store = tmp_path_factory.mktemp("review") / "prices.duckdb"
    scenario(store)
    return build(store, NOW, SIX, settings=FOLLOW).to_dict()


def test_only_the_followed_models_priced_for_the_stated_need(facts: dict[str, Any]) -> None:
    # L4 (now only) and V100 (then only) are in the store but not followed.
    assert [m["gpu_model"] for m in facts["models"]] == ["A100", "H100"]
    assert facts["gpus"] == ["A100", "H100"]
    assert facts["need"] == {"gpus": 4, "months": 24, "utilization": 0.5, "spot_overhead_pct": 10.0}
    a100 = model(facts, "A100")["tco"]
    # Lambda's 1x A100 on demand, 4 instances x 8760 h: now 4 x 1.10 x 8760 = 38,544.00, then
    # 4 x 1.29 x 8760 = 45,201.60 (-14.73 %). Beaten: Tencent spot 56 / 7.2 x 8760 x 1.1 =
    # 74,946.67, AWS spot 8.0468 x 8760 x 1.1 = 77,538.96, p4d on demand 21.957642 x 8760 =
    # 192,348.94, the 3-year RI whole (longer than the horizon) 8.159056 x 26280 = 214,419.99,
    # the 1-year RI 2 terms x 13.921094 x 8760 = 243,897.57.
    assert where(a100["now"]) == where(a100["then"]) == ("lambdalabs", "gpu_1x_a100", "on_demand")
    assert (a100["now"]["instances"], a100["now"]["total_usd"]) == (4, 38544.0)
    assert (a100["then"]["total_usd"], a100["change_pct"]) == (45201.6, -14.73)
    now = {(s["provider"], s["price_kind"], s["term_months"]): s["total_usd"]
           for s in a100["strategies"]["now"]}  # fmt: skip
    assert now[("tencent", "spot", None)] == 74946.67
    assert now[("aws", "reserved", 36)] == 214419.99
    assert now[("aws", "reserved", 12)] == 243897.57
    h100 = model(facts, "H100")["tco"]
    # Now Lambda's 1x H100 PCIe: 4 x 2.49 x 8760 = 87,249.60; then the p5 on demand, 98.32 x
    # 8760 = 861,283.20 (its 3-year RI: 43.00 x 26280 = 1,130,040), which now costs 55.04 x 8760
    # = 482,150.40 (-44.02 %).
    assert where(h100["now"]) == ("lambdalabs", "gpu_1x_h100_pcie", "on_demand")
    assert h100["now"]["total_usd"] == 87249.6
    assert where(h100["then"]) == ("aws", "p5.48xlarge", "on_demand")
    assert h100["then"]["total_usd"] == 861283.2
    assert (h100["same_offer"], h100["then_offer_now"]["total_usd"]) == (False, 482150.4)
    assert h100["then_offer_change_pct"] == -44.02


def test_the_text_names_the_models_followed_and_the_need(facts: dict[str, Any]) -> None:
    text = digest.plain_text(facts)
    assert "Only the GPU models followed ([review] gpus): A100, H100.\n" in text
    assert "per GPU model (2-year cost: 4 GPUs for 24 months at 50% use); change:" in text
    assert "2-year cost: the cheapest way to run 4 GPUs for 24 months at 50% use, in USD" in text
    assert "L4" not in text and "V100" not in text
    (a100,) = [line.split() for line in text.splitlines() if line.startswith("A100 2-year cost")]
    assert a100[3:6] == ["45,202", "38,544", "-14.7%"]
    html = digest_render.html_body(facts)
    assert "2-year cost: 4 GPUs for 24 months at 50% use" in html and "V100" not in html
    slack = json.dumps(digest_render.slack_message(facts))
    assert "4 GPUs for 24 months at 50% use" in slack and "V100" not in slack


def test_the_chart_holds_the_followed_models_and_names_the_need(facts: dict[str, Any]) -> None:
    bars = chart.bars_of(facts)
    assert sorted({b.gpu_model for b in bars}) == ["A100", "H100"]
    assert [b.total_usd for b in bars if b.gpu_model == "A100"] == [45201.6, 38544.0]
    (image,) = chart.images(facts)
    assert image.alt.startswith("Cheapest 2-year strategy per GPU model, then and now (4 GPUs for")


def test_a_followed_model_without_offers_is_named(tmp_path: Path) -> None:
    scenario(tmp_path / "prices.duckdb", fx=False)
    settings = ReviewSettings(gpus=("H100", "B200"))
    facts = build(tmp_path / "prices.duckdb", NOW, SIX, settings=settings).to_dict()
    assert [m["gpu_model"] for m in facts["models"]] == ["H100"]
    # Without a CNY rate Tencent's A100 offers are left out: not followed, not counted.
    assert facts["unrated"] == {"now": {}, "then": {}}
    text = digest.plain_text(facts)
    assert "([review] gpus): H100, B200; no offer of B200 now or then.\n" in text
    every = build(tmp_path / "prices.duckdb", NOW, SIX).to_dict()
    assert every["gpus"] is None and every["unrated"]["now"] == {"CNY": 1}
    assert "Only the GPU models followed" not in digest.plain_text(every)


def test_the_review_command_follows_the_config(tmp_path: Path) -> None:
    scenario_now(tmp_path / "prices.duckdb")
    config = tmp_path / "config.toml"
    config.write_text('[storage]\npath = "prices.duckdb"\n[review]\ngpus = ["h100"]\n'
                      "tco_gpus = 4\ntco_months = 24\ntco_utilization = 0.5\n")  # fmt: skip
    result = CliRunner().invoke(cli, ["--config", str(config), "review", "--format", "json"])
    assert result.exit_code == 0, result.output
    facts = json.loads(result.output)
    assert [m["gpu_model"] for m in facts["models"]] == ["H100"]
    assert model(facts, "H100")["tco"]["now"]["total_usd"] == 87249.6
    table = CliRunner().invoke(cli, ["--config", str(config), "review"])
    assert table.exit_code == 0, table.output
    assert "H100 2-year cost" in table.output and "A100 2-year cost" not in table.output
    assert "87,250" in table.output


def load(review: str) -> ReviewSettings:
    return config_mod.from_dict(tomllib_loads(f"[review]\n{review}\n"), source=None).review


def tomllib_loads(text: str) -> dict[str, Any]:
    import tomllib

    return tomllib.loads(text)


def test_good_review_settings() -> None:
    assert load("") == ReviewSettings()
    got = load('gpus = ["h100", "A100", "H100"]\ntco_gpus = 1\ntco_months = 120\n'
               "tco_utilization = 0.25")  # fmt: skip
    assert (got.gpus, got.tco_gpus, got.tco_months, got.tco_utilization) == (
        ("H100", "A100"), 1, 120, 0.25)  # fmt: skip
    assert load("tco_utilization = 1").tco_utilization == 1.0


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('gpus = ["H1000"]', "review.gpus: 'H1000' is not a GPU model of the GPU table (A10,"),
        ('gpus = "H100"', "review.gpus: expected a list of GPU model names"),
        ("gpus = [1]", "review.gpus: expected a list"),
        ("tco_gpus = 0", "review.tco_gpus: expected a whole number from 1 to 100000, got 0"),
        ("tco_gpus = 100001", "review.tco_gpus: expected a whole number"),
        ("tco_gpus = 2.5", "review.tco_gpus: expected a whole number"),
        ("tco_gpus = true", "review.tco_gpus: expected a whole number"),
        ("tco_months = 121", "review.tco_months: expected a whole number from 1 to 120"),
        ('tco_months = "36"', "review.tco_months: expected a whole number"),
        ("tco_utilization = 0", "review.tco_utilization: expected a share of the hours"),
        ("tco_utilization = 1.01", "review.tco_utilization: expected a share"),
        ("tco_utilization = nan", "review.tco_utilization: expected a share"),
        ('tco_utilization = "60%"', "review.tco_utilization: expected a share"),
        ("tco = 8", "review.tco"),
    ],
)
def test_bad_review_settings_name_the_key(line: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load(line)
    assert message in str(caught.value)


def test_the_scheduled_send_records_and_delivers_the_followed_review(tmp_path: Path) -> None:
    # The daemon's path: `send` with the loaded config, to the console; what is recorded (and
    # retried from) is the followed review, priced for the stated need.
    scenario(tmp_path / "prices.duckdb")
    path = tmp_path / "config.toml"
    path.write_text('[storage]\npath = "prices.duckdb"\n[review]\ngpus = ["A100"]\n'
                    "tco_gpus = 4\ntco_months = 18\ntco_utilization = 0.5\n")  # fmt: skip
    out = io.StringIO()
    report = send(config_mod.load(path), {}, out, now=NOW + MIN, period_subject=NOW)
    (event,) = report.fired
    facts = event.facts
    assert [m["gpu_model"] for m in facts["models"]] == ["A100"]
    # 18 months at 50 %: 730 x 18 x 0.5 = 6570 hours; Lambda 4 x 1.10 x 6570 = 28,908.00.
    assert model(facts, "A100")["tco"]["now"]["total_usd"] == 28908.0
    assert "A100 18-month cost" in out.getvalue()
    assert "(18-month cost: 4 GPUs for 18 months at 50% use)" in out.getvalue()


@pytest.mark.parametrize(
    ("months", "label"), [(36, "3-year cost"), (24, "2-year cost"), (18, "18-month cost")]
)
def test_the_cost_label_names_the_horizon(months: int, label: str) -> None:
    assert compute_words.cost_label({"months": months}) == label
    assert compute_words.cost_label(None) == "3-year cost"  # a review from before the need
