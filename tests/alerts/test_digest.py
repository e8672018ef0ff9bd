"""The review digest in the channels: Slack's block and text limits, a review as a message of
its own beside alerts, the console, idempotent recording, the reserved rule name. Digests are
built by the real review over real DuckDB files."""

from __future__ import annotations

import copy
import io
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import responses

from alerts import digest
from alerts.console import ConsoleNotifier
from alerts.delivery import deliver
from alerts.digest_render import MAX_BLOCKS, MAX_TEXT, slack_message
from alerts.notify import AlertEvent, Unavailable
from alerts.settings import RetryPolicy
from alerts.slack import SlackNotifier
from collectors.common import ConfigError
from tests.alerts.support import T0, Bench, offer, rules
from tracker.config.daemon import Since
from tracker.review.build import build

HOOK = "https://hooks.slack.com/services/T0001/B0002/d1g3stS3cr3t"


def facts_of(bench: Bench) -> dict[str, Any]:
    return build(bench.path, T0, Since(6, "mo")).to_dict()


@pytest.fixture(scope="module")
def reviewed_many(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """60 GPU models (invented names), one on-demand offer each at 1.00 + i / 100."""
    bench = Bench(tmp_path_factory.mktemp("many") / "prices.duckdb")
    records = [
        offer(f"{1 + i / 100:.2f}", itype=f"gpu-{i:02d}", gpu=(f"GPU{i:02d}", 1, 16))
        for i in range(60)
    ]
    bench.collect(records, T0, regions=None)
    return facts_of(bench)


@pytest.fixture
def many_models(reviewed_many: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(reviewed_many)  # reviewed once per module; a test may change its own


def review_event(facts: dict[str, Any], channel: str = "slack") -> AlertEvent:
    return AlertEvent(1, digest.RULE, facts["period"], T0, None, None, channel, "d", facts)


def test_many_models_stay_within_slacks_block_limit(many_models: dict[str, Any]) -> None:
    message = slack_message(many_models)
    blocks = message["blocks"]
    assert len(blocks) == MAX_BLOCKS
    # header + intro + the market index + 44 models + what compute costs + alerts + footer;
    # the other 16 are counted in the footer
    assert blocks[-1]["elements"][0]["text"].endswith("; +16 more GPU models: `gpu-tracker review`")
    assert blocks[2]["text"]["text"].startswith("How the market moved")
    assert blocks[3]["text"]["text"].startswith("*GPU00*\n```GPU00")
    assert "\non-demand     —  1.00      —\n" in blocks[3]["text"]["text"]


def test_a_text_over_slacks_limit_is_cut_at_a_line(many_models: dict[str, Any]) -> None:
    # 40 rules with long details: the alerts section would be about 8000 characters.
    many_models["alerts"] = [
        {"rule": f"rule-{i}", "count": 1, "channels": ["slack"],
         "last_fired_at": "2026-11-30T06:00:00+00:00", "last_detail": "x" * 150}
        for i in range(40)
    ]  # fmt: skip
    section = slack_message(many_models)["blocks"][-2]["text"]["text"]
    assert len(section) <= MAX_TEXT
    assert section.startswith("Alerts fired since 2026-05-30: 40 (40 rules)\n  rule-0: 1x")
    assert section.endswith("x\n… (cut here: gpu-tracker review shows all)")
    everything = [b["text"]["text"] for b in slack_message(many_models)["blocks"] if "text" in b]
    assert all(len(t) <= MAX_TEXT for t in everything)


def test_a_review_is_a_message_of_its_own_beside_alerts(tmp_path: Path) -> None:
    bench = Bench(tmp_path / "prices.duckdb")
    bench.collect([offer("21.957642"), offer("8.0468", kind="spot", zone="use1-az1")], T0)
    fired = bench.check(
        rules({"name": "cheap-a100-spot", "kind": "spot_price_below", "threshold": 1.10,
               "currency": "USD", "gpu_model": "A100"}),
        T0,
        dry_run=True,
    ).fired  # fmt: skip
    stream = io.StringIO()
    outcomes, deliveries = deliver(
        [*fired, review_event(facts_of(bench), "console")], {"console": ConsoleNotifier(stream)}
    )
    assert [(d.channel, d.events, d.error) for d in deliveries] == [
        ("console", 1, None),
        ("console", 1, None),
    ]
    assert len(outcomes) == 2
    text = stream.getvalue()
    assert text.startswith("== GPU price review 2026-05-30..2026-11-30\n")
    assert "\n== 1 GPU price alert: cheap-a100-spot\ncheap-a100-spot: spot price 1.00585" in text


def test_recording_is_once_per_subject_and_channel(tmp_path: Path) -> None:
    bench = Bench(tmp_path / "prices.duckdb")
    bench.collect([offer("21.957642")], T0)
    facts = facts_of(bench)
    first = digest.record(bench.path, ["slack"], "2026-05-30..2026-11-30", facts, T0)
    later = T0 + timedelta(days=1)
    second = digest.record(bench.path, ["email", "slack"], "2026-05-30..2026-11-30", facts, later)
    other = digest.record(bench.path, ["slack"], "2026-06-01..2026-12-01", facts, later)
    assert [e.channel for e in first] == ["slack"]
    assert [e.channel for e in second] == ["email"]
    assert [e.subject for e in other] == ["2026-06-01..2026-12-01"]
    rows = bench.sql("SELECT channel, detail FROM alert_events WHERE rule = 'review' ORDER BY 1")
    assert [r[0] for r in rows] == ["email", "slack", "slack"]
    assert rows[0][1] == (
        "GPU price review 2026-05-30..2026-11-30 (against 6mo ago): 1 GPU models, 0 alerts fired"
    )


def test_an_alert_rule_may_not_be_named_review() -> None:
    with pytest.raises(ConfigError, match=r"alerts.rules\[0\].name: 'review' is reserved"):
        rules({"name": "review", "kind": "spot_price_below", "threshold": 1, "currency": "USD"})


def test_alerts_name_the_channels_that_accepted_them_and_the_others_apart(
    tmp_path: Path,
) -> None:
    # A100 spot at 8.0468 / 8 = 1.00585 USD (under 1.10) and 9.8328 / 8 = 1.2291 (over): the rule
    # fires three times. Slack answers the first with a 503 (one attempt allowed: failed), is
    # unavailable for the second (pending) and takes the third.
    bench = Bench(tmp_path / "prices.duckdb")
    cheap = rules({"name": "cheap-a100-spot", "kind": "spot_price_below", "threshold": 1.10,
                   "currency": "USD", "gpu_model": "A100", "channels": ["console", "slack"]},
                  slack={})  # fmt: skip
    console, off = ConsoleNotifier(io.StringIO()), Unavailable("slack", "off")
    slack = SlackNotifier(HOOK, max_retries=0)
    steps = [("8.0468", slack, 503), ("9.8328", off, None), ("8.0468", off, None),
             ("9.8328", off, None), ("8.0468", slack, 200)]  # fmt: skip
    with responses.RequestsMock() as rsps:
        for i, (price, notifier, status) in enumerate(steps):
            at = T0 + i * timedelta(minutes=1)
            bench.collect([offer(price, kind="spot", zone="use1-az1")], at)
            if status:  # what Slack answers from now on
                rsps.upsert(responses.POST, HOOK, status=status, body=f"HTTP {status}")
            once = RetryPolicy(max_attempts=1)
            bench.check(cheap, at, {"console": console, "slack": notifier}, retry=once)
    facts = build(bench.path, T0 + timedelta(minutes=10), Since(6, "mo")).to_dict()
    (alert,) = facts["alerts"]
    assert (alert["count"], alert["channels"]) == (3, ["console", "slack"])
    assert alert["undelivered"] == [
        {"channel": "slack", "status": "failed", "count": 1},
        {"channel": "slack", "status": "pending", "count": 1},
    ]
    line = digest.alert_lines(facts)[1]
    assert line.startswith(
        "  cheap-a100-spot: 3x to console, slack; not delivered: slack (1 failed, 1 pending), "
        "last 2026-11-30 06:04 UTC: "
    )
    # No channel took any: they are named as not delivered only.
    alone = {**alert, "channels": [], "undelivered": [{"channel": "slack", "status": "pending",
                                                       "count": 3}]}  # fmt: skip
    assert digest.alert_lines({**facts, "alerts": [alone]})[1].startswith(
        "  cheap-a100-spot: 3x, not delivered: slack (3 pending), last "
    )


def test_a_move_too_small_to_show_is_plus_zero(many_models: dict[str, Any]) -> None:
    # -0.04 % rounds to 0.0 at one decimal: shown as +0.0 %, never -0.0 %.
    model = many_models["models"][0]
    (on_demand,) = model["kinds"]
    moved = {**on_demand, "then": on_demand["now"], "same_offer": True, "move_pct": -0.04}
    assert digest.rows({**model, "kinds": [moved]})[0][3] == "+0.0%"
    assert digest.rows({**model, "kinds": [{**moved, "move_pct": -0.06}]})[0][3] == "-0.1%"


def test_a_review_stored_before_like_with_like_still_renders(many_models: dict[str, Any]) -> None:
    # A pending review recorded by an earlier version has no same_offer or cross offers: a retry
    # sends it as it was made.
    model = many_models["models"][0]
    (on_demand,) = model["kinds"]
    old = {k: on_demand[k] for k in ("price_kind", "now", "then", "move_pct")}
    other = {**on_demand["now"], "provider": "azure"}
    label, _, _, move, now, then = digest.rows({**model, "kinds": [
        {**old, "then": other, "move_pct": -12.5}]})[0]  # fmt: skip
    assert (label, move, now, then) == (
        "on-demand",
        "-12.5%",
        "aws us-east-1 gpu-00",
        "azure us-east-1 gpu-00",
    )
