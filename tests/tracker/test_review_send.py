"""`review.send` end to end: the review scenario's store (review_support), the digest recorded
in the real alert event log and delivered to a real SMTP server on loopback and to Slack behind
`responses`; retries, restarts and repeated sends."""

from __future__ import annotations

import io
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import responses

from alerts import digest
from storage.query import query
from tests.alerts.smtp_server import Inbox, smtp_server
from tests.alerts.support import DAY, Bench, offer, rules
from tests.tracker.review_support import NOW, scenario
from tracker import alerting
from tracker import config as config_mod
from tracker.config.daemon import Since
from tracker.review.build import build, channels, send

URL = "https://hooks.slack.com/services/T0001/B0002/r3vi3wS3cr3t"
ENV = {"SLACK_WEBHOOK_URL": URL}
PERIOD = "2026-05-01..2026-11-01"
MIN = timedelta(minutes=1)
EMAIL = """
[alerts.email]
smtp_host = "127.0.0.1"
smtp_port = {port}
security = "none"
from = "gpu-tracker@example.com"
to = ["ops@example.com"]
"""


def configure(tmp_path: Path, extra: str = "") -> config_mod.Config:
    path = tmp_path / "config.toml"
    path.write_text(f'[storage]\npath = "prices.duckdb"\n{extra}')
    return config_mod.load(path)


def reviews(tmp_path: Path) -> list[tuple[Any, ...]]:
    sql = """SELECT channel, subject, status, attempts, last_error FROM alert_events
             WHERE rule = 'review' ORDER BY channel, event_id"""
    return query(tmp_path / "prices.duckdb", sql).rows


def digests(rsps: responses.RequestsMock) -> list[dict[str, Any]]:
    """The review payloads Slack accepted."""
    bodies = [
        json.loads(c.request.body)
        for c in rsps.calls
        if getattr(c.response, "status_code", None) == 200
    ]
    return [b for b in bodies if b["text"].startswith("GPU price review")]


@pytest.fixture(autouse=True)
def store(tmp_path: Path) -> None:
    scenario(tmp_path / "prices.duckdb")


def test_the_digest_goes_to_email_and_slack_once_each(tmp_path: Path) -> None:
    inbox = Inbox()
    with smtp_server(inbox) as port, responses.RequestsMock() as rsps:
        rsps.post(URL, body="ok")
        config = configure(tmp_path, "[alerts.slack]\n" + EMAIL.format(port=port))
        report = send(config, ENV, io.StringIO(), now=NOW)
        ((payload),) = digests(rsps)
    assert report.ok
    assert [(e.channel, e.subject, e.rule) for e in report.fired] == [
        ("email", PERIOD, "review"),
        ("slack", PERIOD, "review"),
    ]
    assert reviews(tmp_path) == [
        ("email", PERIOD, "sent", 1, None),
        ("slack", PERIOD, "sent", 1, None),
    ]
    ((_, recipients, mail, _),) = inbox.mails
    assert recipients == ["ops@example.com"]
    assert mail["Subject"] == f"[gpu-tracker] GPU price review {PERIOD}"
    text = mail.get_body(("plain",)).get_content().replace("\r\n", "\n")
    assert text == digest.plain_text(
        build(tmp_path / "prices.duckdb", NOW, Since(6, "mo")).to_dict()
    )
    assert "spot               1.111111*  0.972222*    -12.5%\n" in text
    html = mail.get_body(("html",)).get_content()
    assert "<h3>A100</h3>" in html and "<td align='right'>-14.7%</td>" in html
    blocks = payload["blocks"]
    assert blocks[0]["text"]["text"] == f"GPU price review {PERIOD}"
    # header, intro, the market index, A100, H100, L4, V100, the largest moves, what compute
    # costs, the alerts, footer
    assert len(blocks) == 11
    assert blocks[2]["text"]["text"].startswith("How the market moved")
    assert blocks[3]["text"]["text"].startswith("*A100*\n```A100                    then")
    assert "reserved discount      75.1%      62.8%  -12.3 pp" in blocks[3]["text"]["text"]
    assert blocks[7]["text"]["text"].startswith("Largest like-for-like moves")
    assert blocks[8]["text"]["text"].startswith("What compute costs, then and now")
    # the review was made before this send's retries delivered the two pending alerts to Slack
    assert (
        "cheap-a100-spot: 2x to console; not delivered: slack (2 pending)"
        in (blocks[9]["text"]["text"])
    )


def test_slack_failing_then_accepting_gets_the_review_once(tmp_path: Path) -> None:
    config = configure(tmp_path, "[alerts.slack]\n")
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        rsps.post(URL, status=503, body="down")
        report = send(config, ENV, io.StringIO(), now=NOW)
        assert not report.ok and report.deliveries[0].error == "slack: HTTP 503: down"
        assert reviews(tmp_path) == [("slack", PERIOD, "pending", 1, "slack: HTTP 503: down")]
        # Sent again a minute later (a restart, a second `review --send`): nothing new, and the
        # failed one waits for its retry (5 minutes after the failure).
        again = send(config, ENV, io.StringIO(), now=NOW + MIN)
        assert again.fired == [] and again.deliveries == []
        rsps.replace(responses.POST, URL, body="ok")
        retried = alerting.check(config, ENV, io.StringIO(), now=NOW + 5 * MIN, rules=())
        assert retried.ok
        send(config, ENV, io.StringIO(), now=NOW + 6 * MIN)
        assert len(digests(rsps)) == 1
    assert reviews(tmp_path) == [("slack", PERIOD, "sent", 2, None)]


def test_the_scheduled_date_makes_a_catch_up_send_nothing_twice(tmp_path: Path) -> None:
    # Nothing configured: the console. The daemon passes the scheduled fire time, as a datetime
    # or as its ISO text; a catch-up two days later finds the same period.
    config = configure(tmp_path)
    first, second = io.StringIO(), io.StringIO()
    report = send(config, {}, first, now=NOW + 2 * MIN, period_subject=NOW)
    again = send(config, {}, second, now=NOW + 2 * 24 * 60 * MIN, period_subject=NOW.isoformat())
    assert [e.subject for e in report.fired] == [PERIOD] and again.fired == []
    assert first.getvalue().startswith(f"== GPU price review {PERIOD}\nNow (2026-11-01)")
    assert "GPU price review" not in second.getvalue()
    assert reviews(tmp_path) == [("console", PERIOD, "sent", 1, None)]


def test_a_review_and_alerts_due_together_are_two_messages(tmp_path: Path) -> None:
    # The scenario's two cheap-a100-spot alerts wait for slack (it was off) until 5 minutes
    # after `NOW`; the review sent then goes beside them, not inside their message.
    config = configure(tmp_path, "[alerts.slack]\n")
    with responses.RequestsMock() as rsps:
        rsps.post(URL, body="ok")
        report = send(config, ENV, io.StringIO(), now=NOW + 10 * MIN)
        texts = [json.loads(c.request.body)["text"] for c in rsps.calls]
    assert sorted(texts) == ["2 GPU price alerts: cheap-a100-spot", f"GPU price review {PERIOD}"]
    assert sorted((d.channel, d.events, d.error) for d in report.deliveries) == [
        ("slack", 1, None),
        ("slack", 2, None),
    ]


def test_review_channels(tmp_path: Path) -> None:
    email = EMAIL.format(port=2525)
    assert channels(configure(tmp_path)) == ("console",)
    assert channels(configure(tmp_path, "[alerts.slack]\n" + email)) == ("slack", "email")
    only = configure(tmp_path, "[alerts.slack]\n" + email + '\n[review]\nchannels = ["email"]\n')
    assert channels(only) == ("email",)


def test_a_late_review_is_made_as_of_its_scheduled_time(tmp_path: Path) -> None:
    # The daemon was down on 1 November and sends that review on the 6th. An alert that fired
    # on the 2nd belongs to the next period (2026-11-01..2027-05-01), not to this one.
    config = configure(tmp_path)
    later = rules({"name": "any-a100-spot", "kind": "spot_price_below", "threshold": 5.0,
                   "currency": "USD", "gpu_model": "A100", "channels": ["console"]})  # fmt: skip
    assert Bench(tmp_path / "prices.duckdb").fired(later, NOW + DAY)
    out = io.StringIO()
    report = send(config, {}, out, now=NOW + 5 * DAY, period_subject=NOW.isoformat())
    facts = report.fired[0].facts
    assert (facts["period"], facts["then"], facts["now"], facts["prices_at"]) == (
        PERIOD,
        "2026-05-01T09:00:00+00:00",
        "2026-11-01T09:00:00+00:00",
        "2026-11-06T09:00:00+00:00",
    )
    assert [a["rule"] for a in facts["alerts"]] == ["cheap-a100-spot"]
    assert out.getvalue().startswith(
        f"== GPU price review {PERIOD}\nNow (2026-11-01) against 6mo ago (2026-05-01), "
    )
    assert (
        "\nSent late: the period and its alerts end when the review was due (2026-11-01 09:00 "
        "UTC); the 'now' prices are those of 2026-11-06 09:00 UTC.\n"
    ) in out.getvalue()


def test_names_are_escaped_in_the_slack_and_html_digest(tmp_path: Path) -> None:
    # A GPU model and a rule name holding the characters Slack's mrkdwn and HTML reserve: an
    # Azure spot offer at 0.50 USD, under the rule's 1.00 (as are Tencent's 0.972222 A100s).
    bench = Bench(tmp_path / "prices.duckdb")
    odd = offer("0.50", kind="spot", provider="azure", region="eastus", itype="Standard_X",
                gpu=("H100 <&>", 1, 80))  # fmt: skip
    bench.collect([odd], NOW - 30 * MIN, provider="azure", regions=None)
    rule = {"name": "cheap <&> spot", "kind": "spot_price_below", "threshold": 1.0,
            "currency": "USD", "channels": ["console"]}  # fmt: skip
    assert bench.fired(rules(rule), NOW - 5 * MIN)
    inbox = Inbox()
    with smtp_server(inbox) as port, responses.RequestsMock() as rsps:
        rsps.post(URL, body="ok")
        config = configure(tmp_path, "[alerts.slack]\n" + EMAIL.format(port=port))
        assert send(config, ENV, io.StringIO(), now=NOW).ok
        ((payload),) = digests(rsps)
    mrkdwn = [b["text"]["text"] for b in payload["blocks"] if b["type"] == "section"]
    assert not [t for t in mrkdwn if "<&>" in t]
    # escaped after aligning: Slack shows `&lt;` as one character, so the columns hold
    assert (
        "*H100 &lt;&amp;&gt;*\n```H100 &lt;&amp;&gt;  then    now  move\n"
        "spot         —  0.50      —\n"
        "  spot  now:  azure eastus Standard_X\n"
        "        then: —```"
    ) in mrkdwn
    assert "\n  cheap &lt;&amp;&gt; spot: 2x to console, last " in mrkdwn[-1]
    ((_, _, mail, _),) = inbox.mails
    html = mail.get_body(("html",)).get_content()
    assert "<&>" not in html
    assert "<h3>H100 &lt;&amp;&gt;</h3>" in html
    assert "<li>cheap &lt;&amp;&gt; spot: 2x to console, last " in html
    assert "cheap <&> spot: 2x to console" in mail.get_body(("plain",)).get_content()
