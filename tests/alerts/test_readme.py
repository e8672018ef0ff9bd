"""The alert examples in docs/alerts.md are real: its rules parse, and its Slack message and
email are what the code sends for the scenario it describes."""

from __future__ import annotations

import json
import re
import tomllib
from decimal import Decimal
from pathlib import Path

from alerts.email import message as email_message
from alerts.slack import message as slack_message
from storage.fx import FxRate
from tests.alerts.support import T0, Bench, offer, rules
from tracker import config as config_mod

SECTION = (Path(__file__).parents[2] / "docs" / "alerts.md").read_text()


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)\n```\n", SECTION, flags=re.S)


def test_every_rule_kind_has_a_worked_example_that_parses() -> None:
    examples = tomllib.loads(blocks("toml")[0])["alerts"]
    parsed = rules(*examples["rules"], slack=examples["slack"], email=_email())
    assert sorted({r.kind for r in parsed}) == sorted(
        ["spot_price_below", "spot_discount_above", "reserved_discount_above",
         "reserved_discount_below", "price_change", "new_low", "stale_data", "index"]
    )  # fmt: skip
    channels = tomllib.loads(blocks("toml")[1])["alerts"]
    assert rules(**channels) == ()


def _email() -> dict[str, object]:
    return {"smtp_host": "h", "from": "a@example.com", "to": "b@example.com"}


def test_the_messages_shown_are_what_the_code_sends(tmp_path: Path) -> None:
    # AWS's real p4d.24xlarge prices; the use1-az4, use1-az2 and us-west-2 spot prices are the
    # page's invented alternatives, and so are Tencent's spot price and the CNY rate.
    rate = FxRate.per_usd("CNY", T0.date(), Decimal("7.2"), "example")
    bench = Bench(tmp_path / "prices.duckdb", fx=[rate])
    tencent = offer("64.00", kind="spot", zone="ap-guangzhou-6", region="ap-guangzhou",
                    provider="tencent", currency="CNY", itype="GT4.41XLARGE948",
                    gpu=("A100", 8, 40))  # fmt: skip
    bench.collect([tencent], T0, provider="tencent", regions=None)
    bench.collect(
        [
            offer("21.957642"),
            offer("8.0468", kind="spot", zone="use1-az1"),
            offer("9.1506", kind="spot", zone="use1-az2"),
            offer("8.85", kind="spot", zone="use1-az4"),
            offer("21.957642", region="us-west-2"),
            offer("9.02", kind="spot", zone="usw2-az2", region="us-west-2"),
            offer("13.921094", kind="reserved", term=12, payment="no_upfront"),
        ],
        T0,
        regions=None,
    )
    examples = tomllib.loads(blocks("toml")[0])["alerts"]["rules"]
    wanted = [r for r in examples if r["name"] in ("cheap-a100-spot", "1y-reserved-not-worth-it")]
    events = bench.check(rules(*wanted, email=_email()), T0, dry_run=True).fired
    spot = [e for e in events if e.rule == "cheap-a100-spot" and e.channel == "email"]
    assert json.loads(blocks("json")[0]) == slack_message(spot)
    mail = email_message(
        [e for e in events if e.channel == "email"], sender="a@example.com", recipients=["b"]
    )
    shown = blocks("text")[0]
    assert shown == f"Subject: {mail['Subject']}\n\n" + mail.get_body(
        ("plain",)
    ).get_content().rstrip("\n")


def test_the_commented_alerts_in_config_toml_are_valid() -> None:
    """Uncommented, the shipped examples load (through the real config loader)."""
    shipped = (Path(__file__).parents[2] / "config.toml").read_text()
    block = shipped[shipped.index("# [alerts]\n") :]
    text = "\n".join(line.removeprefix("#").removeprefix(" ") for line in block.splitlines())
    settings = config_mod.from_dict(tomllib.loads(text), source=None).alerts
    assert [r.name for r in settings.rules] == [
        "cheap-h100-spot", "deep-spot", "3y-deal", "1y-reserved-not-worth-it",
        "list-price-cut", "h100-spot-low", "collection-stale", "h100-market",
    ]  # fmt: skip
    assert settings.slack is not None and settings.email is not None
