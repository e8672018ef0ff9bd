"""The Market panel, the offers behind an index value and `/api/index` over real HTTP on
loopback, on `index_support`'s store (its docstring has the numbers)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.storage.reads import index_support
from tests.tracker.web_support import get, serving
from tracker.web.server import Running


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    store = index_support.build(tmp_path_factory.mktemp("market") / "prices.duckdb")
    with serving(store) as running:
        yield running


def test_api_index_answers_the_commands_json(server: Running) -> None:
    status, body = get(
        server, "/api/index?gpu=H100&kind=on-demand&since=2026-11-01&until=2026-11-03"
    )
    assert status == 200
    found = json.loads(body)
    assert [(r["date"], r["index_usd_per_gpu_hour"], r["providers"]) for r in found] == [
        ("2026-11-01", 2.5, 4),
        ("2026-11-02", 2.5, 4),
    ]
    assert found[0]["kind"] == "on_demand" and found[0]["segment"] == "all"


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ("kind=reserved", "on-demand (or on_demand), spot"),
        ("segment=cloud", "all, hyperscaler, neocloud, marketplace"),
        ("gpu=H1000", "--gpu H1000"),
        ("provider=aws", "unknown parameter"),
    ],
)
def test_api_index_refuses_what_the_command_refuses(
    server: Running, query: str, words: str
) -> None:
    status, body = get(server, f"/api/index?{query}")
    assert status == 400
    assert words in json.loads(body)["error"]


def test_market_panel_links_each_value_to_the_offers_behind_it(server: Running) -> None:
    status, body = get(server, "/market")
    assert status == 200
    assert "Market index" in body and "<svg" in body
    assert "/market?gpu=H100+80GB&amp;kind=on_demand&amp;segment=all&amp;date=" in body
    assert "low confidence" in body  # the hyperscaler segment: two providers


def test_the_offers_behind_a_day_with_their_provider_medians(server: Running) -> None:
    status, body = get(server, "/market?gpu=H100+80GB&kind=on_demand&segment=all&date=2026-11-02")
    assert status == 200
    # aws votes 4.0 with its three offers; tencent's 20 CNY per GPU-hour is 2.8 USD.
    assert body.count("<td>aws</td><td>4.0000</td>") == 3
    assert "<td>tencent</td><td>2.8000</td>" in body
    assert "v2" not in body  # the sold-out offer is not counted
    status, body = get(server, "/market?gpu=H100&date=yesterday")
    assert status == 200 and "expected an ISO date" in body
