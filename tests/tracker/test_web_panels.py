"""The dashboard's History and Decide panels over the demo store, through a real server on
loopback: the window the History panel says it draws is the one asked for (the 180-day review
period too), its lines are told apart past ten series, and the Decide form takes migration cost,
current provider and baseline, says what it applied and shows the blended plans with the API's
own figures."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from html import unescape
from pathlib import Path

import pytest

from tests.tracker.web_support import get, serving
from tracker.web.server import Running

SWITCHING = "gpu=A100&utilization=0.5&migration_cost=5000&current=aws&baseline=4"


@pytest.fixture(scope="module")
def server(demo_store: Path) -> Iterator[Running]:
    with serving(demo_store) as running:  # the server only reads: the shared store will do
        yield running


def selected(body: str, name: str) -> list[str]:
    select = re.search(rf'<select name="{name}">(.*?)</select>', body)
    assert select is not None, name
    return re.findall(r'<option value="([^"]*)" selected>', select.group(1))


def text_of(body: str, element_id: str) -> str:
    found = re.search(rf'id="{element_id}">(.*?)</p>', body)
    assert found is not None, element_id
    return unescape(found.group(1))


def cells(body: str, table_id: str) -> list[list[str]]:
    found = re.search(rf'<table id="{table_id}">.*?<tbody>(.*?)</tbody>', body)
    assert found is not None, table_id
    rows = re.findall(r"<tr>(.*?)</tr>", found.group(1))
    return [[unescape(c) for c in re.findall(r"<td>(.*?)</td>", row)] for row in rows]


def test_the_history_window_is_the_one_drawn_and_offers_the_review_period(
    server: Running,
) -> None:
    status, body = get(server, "/history?gpu=A100&since=180d&limit=12")
    assert status == 200
    assert selected(body, "since") == ["180d"]  # was shown as the menu's first entry, 7d
    assert text_of(body, "window").endswith("UTC (180 days)")
    # A date from a bookmark is shown as asked, and the note says where the window starts.
    status, body = get(server, "/history?gpu=A100&since=2026-06-01")
    assert status == 200 and selected(body, "since") == ["2026-06-01"]
    assert text_of(body, "window").startswith("window drawn: 2026-06-01 00:00 to ")
    status, body = get(server, "/history?gpu=A100")
    assert selected(body, "since") == ["30d"] and text_of(body, "window").endswith("(30 days)")


def test_the_history_panel_ranks_per_gpu_hour_in_usd_as_the_api_does(server: Running) -> None:
    question = "gpu=A100&since=2026-06-01&until=2026-11-01&limit=5&per_gpu=true&usd=true"
    status, body = get(server, f"/history?{question}")
    assert status == 200
    assert (
        'name="per_gpu" value="true" checked' in body and 'name="usd" value="true" checked' in body
    )
    status, answer = get(server, f"/api/history?{question}")
    assert status == 200
    rows = json.loads(answer)
    shown = cells(body, "stats")
    assert [row[1] for row in shown] == ["USD"] * len(rows) and len(rows) == 5
    assert [row[4] for row in shown] == [f"{r['mean']:.4f}" for r in rows]
    assert "prices per GPU-hour" in body
    assert "USD per GPU-hour" in body  # the chart's axis
    # Without the switches: per instance-hour, each in its own currency.
    status, plain = get(server, "/history?gpu=A100&since=2026-06-01&until=2026-11-01&limit=5")
    assert "prices per instance-hour" in plain and "checked" not in plain


def test_twelve_history_lines_have_twelve_styles(server: Running) -> None:
    status, body = get(server, "/history?gpu=A100&since=365d&limit=12")
    assert status == 200
    # The series' step lines (the grid's are thinner), each a colour and a dash of its own.
    styles = re.findall(r'clip-path="[^"]*" style="([^"]*stroke-width: 1\.6[^"]*)"', body)
    assert len(styles) == 12
    pairs = {(_part(style, "stroke"), _part(style, "stroke-dasharray")) for style in styles}
    assert len(pairs) == 12


def _part(style: str, name: str) -> str | None:
    found = re.search(rf"(?:^|; ){name}: ([^;]+)", style)
    return found.group(1) if found else None


def test_the_decide_form_takes_switching_and_says_what_it_applied(server: Running) -> None:
    status, body = get(server, "/decide?" + SWITCHING)
    assert status == 200
    for name, value in (("migration_cost", "5000"), ("baseline", "4")):
        assert f'name="{name}" value="{value}"' in body
    assert selected(body, "current") == ["aws"]
    assert text_of(body, "applied") == (
        "applied: migration cost 5,000 USD (every option away from aws), current aws, "
        "baseline 4 of 8 GPUs reserved, the rest on-demand or spot"
    )
    # The blended plans are the API's (the question asked with a baseline is the blend).
    status, answer = get(server, "/api/tco?" + SWITCHING)
    plans = json.loads(answer)
    shown = cells(body, "blends")
    assert status == 200 and len(shown) == len(plans) > 0
    for row, plan in zip(shown, plans, strict=True):
        assert row[3] == f"{plan['total_usd']:,.2f}"
        # By hand: both parts priced on their own, and 5,000 USD per provider that is not aws.
        away = {plan["reserved_provider"], plan["burst_provider"]} - {"aws", None}
        assert plan["migration_usd"] == 5000 * len(away)
        assert plan["total_usd"] == pytest.approx(
            plan["reserved_usd"] + plan["burst_usd"] + plan["migration_usd"], abs=0.01
        )
    best = cells(body, "tco")[0]
    verdict = text_of(body, "verdict")
    if plans[0]["total_usd"] < float(best[3].replace(",", "")):
        assert verdict.startswith("cheapest mix: 4 reserved")
    else:
        assert verdict == f"no blend beats {best[0]} alone ({best[1]})"


def test_the_decide_panel_without_switching_says_nothing_of_it(server: Running) -> None:
    status, body = get(server, "/decide?gpu=A100")
    assert status == 200 and 'id="tco"' in body
    assert 'id="applied"' not in body and 'id="blends"' not in body
    assert selected(body, "current") == [""]
    status, body = get(server, "/decide?gpu=A100&gpus=4&baseline=6")
    assert status == 200 and "--baseline 6: more than --gpus 4" in unescape(body)
    status, body = get(server, "/decide?gpu=A100&current=nimbus")
    assert "unknown provider" in unescape(body)
