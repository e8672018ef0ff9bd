"""What every channel shows of the alternatives: which of them were converted to the alert's
currency, in Slack, email (both parts) and on the console alike.

AWS's real p4d.24xlarge us-east-1 prices (on-demand 21.957642, spot 8.0468 in use1-az1); the
Tencent GT4.41XLARGE948 (8 A100) spot price of 64.00 CNY/h and the rate of 7.2 CNY per USD are
invented: 8.00 CNY per GPU-hour, 1.111111 USD.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

from alerts.email import message as email_message
from alerts.slack import message as slack_message
from storage.fx import FxRate
from tests.alerts.support import T0, Bench, offer, rules

SPOTS = [
    offer("21.957642"),
    offer("8.0468", kind="spot", zone="use1-az1"),
    offer("9.1506", kind="spot", zone="use1-az2"),
]
TABLE = [
    "provider  region                         instance         USD/GPU-h  converted from",
    "tencent   ap-guangzhou (ap-guangzhou-6)  GT4.41XLARGE948   1.111111  CNY",
    "aws       us-east-1 (use1-az2)           p4d.24xlarge      1.143825",
]


def test_converted_alternatives_are_marked_on_every_channel(tmp_path: Path) -> None:
    rate = FxRate.per_usd("CNY", T0.date(), Decimal("7.2"), "example")
    bench = Bench(tmp_path / "prices.duckdb", fx=[rate])
    tencent = offer("64.00", kind="spot", zone="ap-guangzhou-6", region="ap-guangzhou",
                    provider="tencent", currency="CNY", itype="GT4.41XLARGE948",
                    gpu=("A100", 8, 40))  # fmt: skip
    bench.collect([tencent], T0, provider="tencent", regions=None)
    bench.collect(SPOTS, T0)
    rule = rules({"name": "cheap-a100-spot", "kind": "spot_price_below", "threshold": 1.10,
                  "currency": "USD", "gpu_model": "A100"})  # fmt: skip
    report = bench.check(rule, T0)
    (event,) = report.fired
    assert [a["converted_from"] for a in event.facts["alternatives"]] == ["CNY", None]
    console = bench.console.getvalue()
    assert "\n".join(f"    {line}" for line in TABLE) in console
    slack = slack_message([event])["blocks"][2]["text"]["text"]
    assert slack == "Best alternatives:\n```" + "\n".join(TABLE) + "```"
    mail = email_message([event], sender="a@example.com", recipients=["b@example.com"])
    text = mail.get_body(("plain",)).get_content().replace("\r\n", "\n")
    assert "\n".join(f"    {line}" for line in TABLE) in text
    assert "\n".join(TABLE) in mail.get_body(("html",)).get_content()


def test_alternatives_all_in_the_alerts_currency_have_no_such_column(tmp_path: Path) -> None:
    bench = Bench(tmp_path / "prices.duckdb")
    bench.collect(SPOTS, T0)
    rule = rules({"name": "cheap", "kind": "spot_price_below", "threshold": 1.10,
                  "currency": "USD"})  # fmt: skip
    bench.check(rule, T0)
    assert "converted from" not in bench.console.getvalue()
    assert "  aws       us-east-1 (use1-az2)  p4d.24xlarge   1.143825\n" in bench.console.getvalue()
