"""The periodic review over a real DuckDB file with half a year of history (see review_support
for every price), `last_due`, and `gpu-tracker review` through the real CLI."""

from __future__ import annotations

import json
import re
import tomllib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from alerts import digest
from tests.alerts.support import Bench, offer
from tests.tracker.review_support import NOW, scenario, scenario_now
from tracker.cli import cli
from tracker.config.daemon import ReviewSettings, Since, parse_review
from tracker.review.build import build, last_due

SIX = Since(6, "mo")


def kinds(facts: dict[str, Any], model: str) -> dict[str, dict[str, Any]]:
    (found,) = [m for m in facts["models"] if m["gpu_model"] == model]
    return {k["price_kind"]: k for k in found["kinds"]} | {"discount": found["reserved_discount"]}


def where(o: dict[str, Any] | None) -> tuple[Any, ...] | None:
    return None if o is None else (o["provider"], o["instance_type"], o["currency"], o["price"])


@pytest.fixture(scope="module")
def facts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    # Built once per module: the tests only read the facts.
    store = tmp_path_factory.mktemp("review") / "prices.duckdb"
    scenario(store)
    return build(store, NOW, SIX).to_dict()


def test_the_cheapest_offer_per_gpu_hour_now_and_six_months_ago(facts: dict[str, Any]) -> None:
    assert (facts["period"], facts["since"], facts["has_then"]) == (
        "2026-05-01..2026-11-01",
        "6mo",
        True,
    )
    a100 = kinds(facts, "A100")
    # Lambda's 1x A100 under AWS's 8x at 32.7726 / 8 = 4.096575 then, 21.957642 / 8 = 2.744705
    # now; 1.10 / 1.29 - 1 = -14.73 %.
    assert where(a100["on_demand"]["now"]) == ("lambdalabs", "gpu_1x_a100", "USD", 1.10)
    assert where(a100["on_demand"]["then"]) == ("lambdalabs", "gpu_1x_a100", "USD", 1.29)
    assert a100["on_demand"]["move_pct"] == -14.73
    # Tencent's CNY spot, converted at 7.2 CNY per USD: 64.00 / 8 = 8.00 CNY = 1.111111 USD then,
    # 56.00 / 8 = 7.00 CNY = 0.972222 USD now: under AWS's 9.8328 / 8 = 1.2291 and 8.0468 / 8 =
    # 1.00585. 0.972222 / 1.111111 - 1 = -12.50 %.
    assert where(a100["spot"]["now"]) == ("tencent", "GT4.41XLARGE948", "CNY", 7.0)
    assert where(a100["spot"]["then"]) == ("tencent", "GT4.41XLARGE948", "CNY", 8.0)
    assert (a100["spot"]["now"]["price_usd"], a100["spot"]["then"]["price_usd"]) == (
        0.972222,
        1.111111,
    )
    assert a100["spot"]["move_pct"] == -12.5
    # 3y All Upfront 8.159056 / 8 = 1.019882 both times (the 1y at 13.921094 / 8 is dearer).
    reserved = a100["reserved"]
    assert (reserved["now"]["term_months"], reserved["now"]["payment_option"]) == (
        36,
        "all_upfront",
    )
    assert (reserved["now"]["price"], reserved["then"]["price"], reserved["move_pct"]) == (
        1.019882,
        1.019882,
        0.0,
    )


def test_the_best_reserved_discount_moves_in_points(facts: dict[str, Any]) -> None:
    # A100 3y All Upfront against AWS's own on-demand: 1 - 8.159056 / 21.957642 = 62.84 % now,
    # 1 - 8.159056 / 32.7726 = 75.10 % then (the on-demand cut shrank it): -12.26 points.
    a100 = kinds(facts, "A100")["discount"]
    assert round(a100["now"]["discount_pct"], 2) == 62.84
    assert round(a100["then"]["discount_pct"], 2) == 75.10
    assert a100["points"] == -12.26
    assert (a100["now"]["on_demand_price"], a100["then"]["on_demand_price"]) == (2.744705, 4.096575)
    # H100: 1 - 22.016 / 55.04 = 60.00 % now, 1 - 43.00 / 98.32 = 56.27 % then: +3.73 points.
    h100 = kinds(facts, "H100")["discount"]
    assert (round(h100["now"]["discount_pct"], 2), round(h100["then"]["discount_pct"], 2)) == (
        60.0,
        56.27,
    )
    assert h100["points"] == 3.73


def test_stale_and_sold_out_offers_are_no_offer_and_one_sided_models_still_show(
    facts: dict[str, Any],
) -> None:
    h100 = kinds(facts, "H100")
    # Paperspace's 1.50 is stale and Lambda's SXM5 at 1.99 sold out: the PCIe at 2.49 is the
    # cheapest now, AWS's 98.32 / 8 = 12.29 then. Two offers: 2.49 against 12.29 (-79.74 %) is
    # no price move. The PCIe had no price then; AWS's p5 is 55.04 / 8 = 6.88 now: 6.88 / 12.29
    # - 1 = -44.02 %.
    on_demand = h100["on_demand"]
    assert where(on_demand["now"]) == ("lambdalabs", "gpu_1x_h100_pcie", "USD", 2.49)
    assert where(on_demand["then"]) == ("aws", "p5.48xlarge", "USD", 12.29)
    assert (on_demand["same_offer"], on_demand["move_pct"]) == (False, None)
    assert (on_demand["now_offer_then"], on_demand["now_offer_move_pct"]) == (None, None)
    assert where(on_demand["then_offer_now"]) == ("aws", "p5.48xlarge", "USD", 6.88)
    assert on_demand["then_offer_move_pct"] == -44.02
    # 22.016 / 8 = 2.752 against 43.00 / 8 = 5.375: -48.8 %.
    assert (h100["reserved"]["now"]["price"], h100["reserved"]["then"]["price"]) == (2.752, 5.375)
    assert h100["reserved"]["move_pct"] == -48.8
    assert "spot" not in h100
    l4, v100 = kinds(facts, "L4")["on_demand"], kinds(facts, "V100")["on_demand"]
    assert (where(l4["now"]), l4["then"], l4["move_pct"]) == (
        ("aws", "g6.xlarge", "USD", 0.8048),
        None,
        None,
    )
    assert (v100["now"], where(v100["then"]), v100["move_pct"]) == (
        None,
        ("aws", "p3.2xlarge", "USD", 3.06),
        None,
    )
    assert [m["gpu_model"] for m in facts["models"]] == ["A100", "H100", "L4", "V100"]


def test_alerts_of_the_period_one_per_alert_not_per_channel(facts: dict[str, Any]) -> None:
    # spot-under-2 fired 50 minutes before the period began; cheap-a100-spot twice within it
    # (aws, then tencent), each to console and slack: four rows, two alerts. Slack was off:
    # both its rows are pending, so it is not among the channels they went to.
    (alert,) = facts["alerts"]
    assert (alert["rule"], alert["count"], alert["channels"]) == ("cheap-a100-spot", 2, ["console"])
    assert alert["undelivered"] == [{"channel": "slack", "status": "pending", "count": 2}]
    assert alert["last_fired_at"] == "2026-11-01T08:50:00+00:00"
    assert alert["last_detail"].startswith("spot price 0.972222 USD/GPU-h is at or under 1.10")
    assert facts["unrated"] == {"now": {}, "then": {}}


def test_without_a_rate_the_cny_offers_are_left_out_and_counted(tmp_path: Path) -> None:
    scenario(tmp_path / "prices.duckdb", fx=False)
    facts = build(tmp_path / "prices.duckdb", NOW, SIX).to_dict()
    spot = kinds(facts, "A100")["spot"]
    # AWS alone: 8.0468 / 8 = 1.00585 against 9.8328 / 8 = 1.2291, -18.16 %.
    assert where(spot["now"]) == ("aws", "p4d.24xlarge", "USD", 1.00585)
    assert where(spot["then"]) == ("aws", "p4d.24xlarge", "USD", 1.2291)
    assert spot["move_pct"] == -18.16
    assert facts["unrated"] == {"now": {"CNY": 1}, "then": {"CNY": 1}}
    text = digest.plain_text(facts)
    assert "Left out now (no [fx] rate for their currency): 1 in CNY." in text
    assert "Left out then (no [fx] rate for their currency): 1 in CNY." in text
    # Without a rate the tencent spot price never crossed 1.10 USD: one alert.
    assert [(a["rule"], a["count"]) for a in facts["alerts"]] == [("cheap-a100-spot", 1)]


def test_the_digest_as_text(facts: dict[str, Any]) -> None:
    text = digest.plain_text(facts)
    a100 = next(b for b in text.split("\n\n") if b.startswith("A100 ")).splitlines()
    assert a100[:5] == [
        "A100                    then        now      move",
        "on-demand              1.29       1.10     -14.7%",
        "spot               1.111111*  0.972222*    -12.5%",
        "reserved           1.019882   1.019882      +0.0%",
        "reserved discount      75.1%      62.8%  -12.3 pp",
    ]
    assert a100[7] == (
        "  spot               now:  tencent ap-guangzhou (ap-guangzhou-6) GT4.41XLARGE948 "
        "(7.00 CNY/GPU-h, converted)"
    )
    assert a100[8] == "                     then: the same offer"
    assert a100[12] == (
        "                     then: aws us-east-1 p4d.24xlarge, 3y all-upfront standard: 1.019882 "
        "vs on-demand 4.096575 USD/GPU-h"
    )
    assert "V100        then  now  move\non-demand  3.06     —     —\n" in text
    assert (
        "Alerts fired since 2026-05-01: 2 (1 rule)\n  cheap-a100-spot: 2x to console; not "
        "delivered: slack (2 pending), last 2026-11-01 08:50 UTC: spot price 0.972222" in (text)
    )


def test_a_store_without_prices_at_then_says_so(tmp_path: Path) -> None:
    Bench(tmp_path / "prices.duckdb").collect([offer("21.957642")], NOW, regions=None)
    facts = build(tmp_path / "prices.duckdb", NOW, SIX).to_dict()
    assert facts["has_then"] is False
    on_demand = kinds(facts, "A100")["on_demand"]
    assert (on_demand["now"]["price"], on_demand["then"]) == (2.744705, None)
    assert (
        "The store has no prices from 2026-05-01: its history starts 2026-11-01. Nothing to "
        "compare with; the 'then' column stays empty."
    ) in digest.plain_text(facts)
    assert "No alerts fired since 2026-05-01." in digest.plain_text(facts)


def test_calendar_months_weeks_days_and_years(tmp_path: Path) -> None:
    Bench(tmp_path / "prices.duckdb").collect([offer("21.957642")], NOW, regions=None)
    end_of_august = datetime(2026, 8, 31, 12, 0, tzinfo=UTC)
    for since, then in (
        (Since(6, "mo"), "2026-02-28T12:00:00+00:00"),  # no 31 February: its last day
        (Since(2, "w"), "2026-08-17T12:00:00+00:00"),
        (Since(180, "d"), "2026-03-04T12:00:00+00:00"),
        (Since(1, "y"), "2025-08-31T12:00:00+00:00"),
    ):
        assert build(tmp_path / "prices.duckdb", end_of_august, since).to_dict()["then"] == then


@pytest.mark.parametrize(
    ("cron", "zone", "now", "due"),
    [
        # the default, 09:00 on 1 January and 1 July
        ("0 9 1 1,7 *", "UTC", "2026-11-30T23:00+00:00", "2026-07-01T09:00+00:00"),
        ("0 9 1 1,7 *", "UTC", "2027-01-01T09:00+00:00", "2027-01-01T09:00+00:00"),
        ("0 9 1 1,7 *", "UTC", "2027-01-01T08:59+00:00", "2026-07-01T09:00+00:00"),
        ("0 9 1 1,7 *", "Europe/Berlin", "2026-11-30T23:00+00:00", "2026-07-01T09:00+02:00"),
        ("* * * * *", "UTC", "2026-11-30T10:30:30+00:00", "2026-11-30T10:30+00:00"),
        ("0 0 29 2 *", "UTC", "2026-11-30T23:00+00:00", None),  # 29 February 2024: too long ago
    ],
)
def test_last_due_is_the_latest_fire_time_at_or_before_now(
    cron: str, zone: str, now: str, due: str | None
) -> None:
    found = last_due(ReviewSettings(cron=cron, timezone=zone), datetime.fromisoformat(now))
    expected = None if due is None else datetime.fromisoformat(due)
    assert found == expected
    if found is not None and expected is not None:  # in the review's time zone
        assert found.utcoffset() == expected.utcoffset()


@pytest.fixture
def live_store(tmp_path: Path) -> Path:
    """The scenario ending at the real now (the CLI reviews at the wall clock)."""
    scenario_now(tmp_path / "prices.duckdb")
    config = tmp_path / "config.toml"
    config.write_text('[storage]\npath = "prices.duckdb"\n')
    return config


def invoke(config: Path, *args: str) -> Any:
    return CliRunner().invoke(cli, ["--config", str(config), "review", *args])


def test_review_prints_a_table(live_store: Path) -> None:
    result = invoke(live_store)
    assert result.exit_code == 0, result.output
    for text in ("GPU price review", "A100", "reserved discount", "-14.7%", "-12.3 pp",
                 "lambdalabs us-east-1 gpu_1x_a100", "the same offer", "cheap-a100-spot",
                 "converted from its own currency at the [fx] rate"):  # fmt: skip
        assert text in result.output, text


def test_review_as_json_and_text(live_store: Path) -> None:
    result = invoke(live_store, "--format", "json")
    assert result.exit_code == 0, result.output
    facts = json.loads(result.output)
    assert (facts["kind"], facts["since"]) == ("review", "6mo")
    assert kinds(facts, "A100")["on_demand"]["move_pct"] == -14.73
    text = invoke(live_store, "--format", "text")
    assert text.exit_code == 0 and text.output == digest.plain_text(facts)


def test_review_since_four_months(live_store: Path) -> None:
    # Four months back, the collection that confirmed Lambda's A100 at 1.19: 1.10 / 1.19 - 1 =
    # -7.56 %. (Three months back nothing had confirmed a price for a month: no 'then'.)
    result = invoke(live_store, "--since", "4mo", "--format", "json")
    assert result.exit_code == 0, result.output
    facts = json.loads(result.output)
    on_demand = kinds(facts, "A100")["on_demand"]
    assert (facts["since"], on_demand["then"]["price"], on_demand["move_pct"]) == (
        "4mo",
        1.19,
        -7.56,
    )


def test_a_bad_since_is_a_usage_error_naming_the_option(live_store: Path) -> None:
    result = invoke(live_store, "--since", "6 months")
    assert result.exit_code == 2
    assert "--since: '6 months' is not a look-back" in result.output


def test_no_store_yet_fails_clearly(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[storage]\npath = "none.duckdb"\n')
    result = invoke(config)
    assert result.exit_code == 1 and "no price store at" in result.output


SECTION = (Path(__file__).parents[2] / "docs" / "review.md").read_text()
CONFIG_TOML = (Path(__file__).parents[2] / "config.toml").read_text()


def test_the_readme_example_is_what_the_code_prints(tmp_path: Path) -> None:
    # The default schedule's January review over the same store (review_support).
    january = datetime(2027, 1, 1, 9, 0, tzinfo=UTC)
    scenario(tmp_path / "prices.duckdb", january)
    facts = build(tmp_path / "prices.duckdb", january, SIX).to_dict()
    (example,) = re.findall(r"```text\n(.*?)```\n", SECTION, flags=re.S)
    assert example == digest.plain_text(facts)


def test_the_documented_review_table_parses_to_the_defaults() -> None:
    (block,) = re.findall(r"```toml\n(.*?)```\n", SECTION, flags=re.S)
    documented = tomllib.loads(block)["review"]
    commented = CONFIG_TOML[CONFIG_TOML.index("# [review]\n") :].split("\n\n")[0]
    in_config = tomllib.loads("\n".join(line[2:] for line in commented.splitlines()))["review"]
    for raw in (documented, in_config):
        parsed = parse_review(raw, {"slack", "email", "console"})
        assert parsed == ReviewSettings(channels=("slack", "email"))
