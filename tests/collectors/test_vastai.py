"""Vast.ai collector: the marketplace grouped (per GPU, count and country) on the recorded
search answer, checked by hand from the offers' own `dph_base` and `min_bid`; the search
through the real requests stack against the loopback replay server (the filter it posts, the
optional key, throttling with Retry-After)."""

from __future__ import annotations

import json
import logging
import pickle
import time
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from collectors import gpus
from collectors.base import MarketDepth, ParseResult, PriceRecord, ProviderSettings
from collectors.common import FetchError, PayloadShapeError
from collectors.vastai.collector import VastaiCollector
from tests.collectors.support import (
    NOW,
    cli_ok,
    demo_json,
    demo_of,
    fixtures_of,
    list_price,
    recording,
    store_config,
    with_traps,
)
from tracker.collecting import isolation
from tracker.collecting.replay import Recording, ReplayServer

DEMO = demo_of("vastai")
FIXTURES = fixtures_of("vastai")

Replay = Callable[..., ReplayServer]


def recorded() -> dict[str, Any]:
    return demo_json("vastai", "bundles.json")


def answer() -> dict[str, Any]:
    """The recorded offers plus the trap offers of tests/fixtures/vastai/traps.json."""
    return with_traps(recorded(), "vastai", "offers")


def parse(body: Any, **settings: Any) -> ParseResult:
    return VastaiCollector(ProviderSettings(**settings)).parse({"bundles": body}, observed_at=NOW)


def by_offer(result: ParseResult) -> dict[tuple[str | None, str, str], PriceRecord]:
    out = {(r.region, r.instance_type, r.price_kind): r for r in result.records}
    assert len(out) == len(result.records)
    return out


def vast_record(**fields: Any) -> PriceRecord:
    return list_price("vastai", **{"vcpus": None, "memory_gib": None, "available": True, **fields})


def test_a_group_in_full() -> None:
    offers = by_offer(parse(recorded()))
    # 1x H100 SXM in the US: offers 1001 (listed twice; dph_base 2.4024, min_bid 1.2) and 1002
    # (2.6667, 1.0533). The unverified 1003 (1.85) and the rented 1004 (2.10) are cheaper but
    # left out. On-demand = min(2.4024, 2.6667) = 2.4024; spot = min(1.2, 1.0533) = 1.0533.
    # gpu_ram 81559 MiB / 1024 = 79.6 -> 80 GB.
    h100 = {"instance_type": "1x H100 SXM", "region": "US", "gpu_model": "H100", "gpu_count": 1,
            "gpu_memory_gib": 80.0}  # fmt: skip
    assert offers["US", "1x H100 SXM", "on_demand"] == vast_record(
        **h100, price_kind="on_demand", price_per_hour=Decimal("2.402400")
    )
    assert offers["US", "1x H100 SXM", "spot"] == vast_record(
        **h100, price_kind="spot", price_per_hour=Decimal("1.053300")
    )
    # 2x A100 SXM4 in Germany: 1030 (2.30, bid 1.40) and 1031 (2.25, no min_bid): on-demand
    # 2.25 from 1031, spot 1.40 from 1030 (an offer without a bid never sets the spot price).
    # gpu_ram 81920 MiB = 80 GB exactly.
    a100 = {"instance_type": "2x A100 SXM4", "region": "DE", "gpu_model": "A100",
            "gpu_count": 2, "gpu_memory_gib": 80.0}  # fmt: skip
    assert offers["DE", "2x A100 SXM4", "on_demand"] == vast_record(
        **a100, price_kind="on_demand", price_per_hour=Decimal("2.250000")
    )
    assert offers["DE", "2x A100 SXM4", "spot"] == vast_record(
        **a100, price_kind="spot", price_per_hour=Decimal("1.400000")
    )
    # The real RTX 3090 offer: dph_base 0.12, never dph_total 0.12138... (+ 0.2 $/GB/month
    # storage x 5 GB / 720 h); 24576 MiB = 24 GB.
    assert offers["CA", "1x RTX 3090", "on_demand"] == vast_record(
        instance_type="1x RTX 3090", region="CA", gpu_model="RTX3090", gpu_count=1,
        gpu_memory_gib=24.0, price_kind="on_demand", price_per_hour=Decimal("0.120000"),
    )  # fmt: skip


def test_every_group_and_price() -> None:
    result = parse(recorded())
    prices = {key: r.price_per_hour for key, r in by_offer(result).items()}
    assert prices == {
        ("US", "1x H100 SXM", "on_demand"): Decimal("2.4024"),
        ("US", "1x H100 SXM", "spot"): Decimal("1.0533"),
        ("US", "8x H100 SXM", "on_demand"): Decimal("19.2192"),  # 2.4024 per GPU
        ("US", "8x H100 SXM", "spot"): Decimal("12"),
        ("SE", "1x RTX 4090", "on_demand"): Decimal("0.35"),  # 1020 (0.35 < 0.40)
        ("SE", "1x RTX 4090", "spot"): Decimal("0.18"),  # 1021 (0.18 < 0.20)
        ("CA", "1x RTX 3090", "on_demand"): Decimal("0.12"),
        ("CA", "1x RTX 3090", "spot"): Decimal("0.0801"),
        ("DE", "2x A100 SXM4", "on_demand"): Decimal("2.25"),
        ("DE", "2x A100 SXM4", "spot"): Decimal("1.4"),
        ("US", "4x RTX A6000", "on_demand"): Decimal("1.6"),
        ("US", "4x RTX A6000", "spot"): Decimal("0.96"),
    }
    # 12 listings: 1001 twice, 1003 unverified, 1004 rented -> 9 offers in 6 groups
    assert result.notes == [
        "9 offers in 6 groups (GPU, count, country); most offered: 1x H100 SXM US (2), "
        "1x RTX 4090 SE (2), 2x A100 SXM4 DE (2)",
        "left out: 1 rented or not rentable, 1 unverified host",
    ]
    assert result.skipped_rows == 0 and not result.unknown_instance_types


def test_traps(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="collectors.vastai"):
        result = parse(answer())
    offers = by_offer(result)
    # 2005 (not rentable, 1.50) and 2006 (deverified, 1.70) are cheaper than 2.4024: left out
    assert offers["US", "1x H100 SXM", "on_demand"].price_per_hour == Decimal("2.4024")
    # no country (2001), a price as a string (2002), a zero price (2003): skipped, counted
    assert result.skipped_rows == 3
    assert "offer 2001 skipped: geolocation None names no country" in caplog.text
    # A GPU the table does not know: stored under Vast.ai's name, named; 49140 MiB -> 48 GB
    assert offers["JP", "2x RTX 5880Ada", "on_demand"] == vast_record(
        instance_type="2x RTX 5880Ada", region="JP", gpu_model="RTX 5880Ada", gpu_count=2,
        gpu_memory_gib=48.0, price_kind="on_demand", price_per_hour=Decimal("1.100000"),
    )  # fmt: skip
    assert offers["JP", "2x RTX 5880Ada", "spot"].price_per_hour == Decimal("0.7")
    assert result.notes[1:] == ["left out: 2 rented or not rentable, 2 unverified host"]
    # the run summary names it, as for every provider
    assert result.gpu_summary().without_facts == ["2x RTX 5880Ada"]
    # every group's facts are the offers' own: gpu_name, num_gpus, gpu_ram
    assert result.facts == dict.fromkeys({r.instance_type for r in result.records}, "api")
    assert result.notes[0].startswith("10 offers in 7 groups")
    # every group's count in the log
    assert "offers per group: 1x H100 SXM US 2, 1x RTX 3090 CA 1," in caplog.text


def test_a_users_entry_names_an_unknown_gpu() -> None:
    rtx = gpus.parse_model("RTX5880Ada", {"vendor": "nvidia"}, "gpus.models.RTX5880Ada.")
    entry = gpus.TypeOverride("vastai", "RTX5880Ada")
    overrides = gpus.Overrides({"2x RTX 5880Ada": entry}, {"RTX5880Ada": rtx})
    result = parse(answer(), gpus=overrides)
    offer = by_offer(result)["JP", "2x RTX 5880Ada", "on_demand"]
    # the model the user's entry gives; the count and memory still the offer's own
    assert (offer.gpu_model, offer.gpu_count, offer.gpu_memory_gib) == ("RTX5880Ada", 2, 48)
    assert result.facts["2x RTX 5880Ada"] == "config"


def test_configured_countries_limit_the_groups() -> None:
    result = parse(recorded(), regions=("SE", "DE"))
    assert {(r.region, r.instance_type) for r in result.records} == {
        ("SE", "1x RTX 4090"),
        ("DE", "2x A100 SXM4"),
    }


@pytest.mark.parametrize(
    "body",
    [{"offers": None}, {"success": False, "error": "invalid_args", "msg": "bad query"}, []],
    ids=["offers-null", "error", "list"],
)
def test_a_changed_shape_fails(body: Any) -> None:
    with pytest.raises(PayloadShapeError, match=r"^vastai: bundles: "):
        parse(body)


def test_an_answer_of_nothing_readable_fails() -> None:
    with pytest.raises(PayloadShapeError, match="none of the 2 offers could be read"):
        parse({"offers": [{"id": 1, "verified": True}, {"id": 2, "verified": True, "num_gpus": 1}]})


def test_no_offer_is_no_price_and_no_error() -> None:
    result = parse({"offers": []})
    assert result.records == [] and result.notes == ["0 offers in 0 groups (GPU, count, country)"]


# ---------------------------------------------------------------------------------------------
# fetch: the real requests stack against loopback


@pytest.fixture
def server(tmp_path: Path, replay: Replay) -> ReplayServer:
    spec = json.loads((DEMO / "exchanges.json").read_text())
    spec["exchanges"].insert(0, {**spec["exchanges"][0], "status": 429, "times": 1,
                                 "headers": {"Retry-After": "0"},
                                 "body_file": str(FIXTURES / "error-429.json")})  # fmt: skip
    spec["exchanges"][1]["body_file"] = str(DEMO / "bundles.json")
    (tmp_path / "exchanges.json").write_text(json.dumps(spec))
    return replay(tmp_path)


def test_fetch_posts_the_filter_and_waits_out_a_429(server: ReplayServer) -> None:
    collector = VastaiCollector(ProviderSettings(endpoint=server.url, max_retries=2))
    payloads = collector.fetch()
    assert payloads == {"bundles": recorded()}
    first, second = server.requests
    assert first.method == second.method == "POST" and first.path == "/api/v0/bundles/"
    query = second.json()
    assert query["verified"] == {"eq": True} and query["rented"] == {"eq": False}
    assert query["rentable"] == {"eq": True} and query["limit"] == 10_000
    assert "authorization" not in second.headers  # no key: the search is public


def test_fetch_sends_the_key_when_there_is_one(server: ReplayServer) -> None:
    settings = ProviderSettings(endpoint=server.url, credentials={"api_key": "vk"})
    VastaiCollector(settings).fetch()
    assert server.requests[-1].headers["authorization"] == "Bearer vk"


def test_throttling_that_persists_fails_naming_the_provider(tmp_path: Path, replay: Replay) -> None:
    exchange = {"match": {}, "status": 429, "headers": {"Retry-After": "0"},
                "body_file": str(FIXTURES / "error-429.json")}  # fmt: skip
    server = replay(recording(tmp_path, exchange))
    collector = VastaiCollector(ProviderSettings(endpoint=server.url, max_retries=1))
    with pytest.raises(FetchError, match=r"^vastai: offer search: HTTP 429"):
        collector.fetch()
    assert len(server.requests) == 2


def test_collect_and_latest_through_the_cli_with_no_key(
    server: ReplayServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("VAST_API_KEY", raising=False)
    config = store_config(tmp_path, "vastai", server.url)
    run = cli_ok(config, "collect", "--provider", "vast")
    assert "9 offers in 6 groups" in run.output
    sql = (
        "SELECT region, instance_type, price_kind, price_per_hour, price_per_gpu_hour"
        " FROM latest_prices WHERE provider = 'vastai' AND gpu_model = 'H100'"
        " ORDER BY instance_type, price_kind"
    )
    rows = cli_ok(config, "sql", sql, "--format", "json")
    assert json.loads(rows.output) == [
        {"region": "US", "instance_type": "1x H100 SXM", "price_kind": "on_demand",
         "price_per_hour": 2.4024, "price_per_gpu_hour": 2.4024},
        {"region": "US", "instance_type": "1x H100 SXM", "price_kind": "spot",
         "price_per_hour": 1.0533, "price_per_gpu_hour": 1.0533},
        # 19.2192 / 8 GPUs = 2.4024 per GPU-hour
        {"region": "US", "instance_type": "8x H100 SXM", "price_kind": "on_demand",
         "price_per_hour": 19.2192, "price_per_gpu_hour": 2.4024},
        {"region": "US", "instance_type": "8x H100 SXM", "price_kind": "spot",
         "price_per_hour": 12.0, "price_per_gpu_hour": 1.5},
    ]  # fmt: skip
    latest = cli_ok(config, "latest", "--provider", "vastai", "--gpu", "RTX4090")
    assert "1x RTX 4090" in latest.output and "SE" in latest.output


def test_offer_counts_are_stored_change_only(tmp_path: Path, replay: Replay) -> None:
    """market_depth through the CLI into a real store: a count per group; a changed count
    closes the old row and opens a new one, an unchanged one is confirmed, an emptied group
    closes."""
    (tmp_path / "bundles.json").write_text(json.dumps(recorded()))
    exchange = {"match": {"method": "POST"}, "body_file": "bundles.json"}
    server = replay(recording(tmp_path, exchange))
    config = store_config(tmp_path, "vastai", server.url)
    depth = (
        "SELECT region, instance_type, offers, valid_to IS NULL AS current FROM market_depth"
        " ORDER BY instance_type, region, valid_from"
    )
    cli_ok(config, "collect", "--provider", "vastai")
    first = json.loads(cli_ok(config, "sql", depth, "--format", "json").output)
    # 1001 (listed twice) and 1002; 1003 unverified and 1004 rented do not count
    assert first[:3] == [
        {"region": "US", "instance_type": "1x H100 SXM", "offers": 2, "current": True},
        {"region": "CA", "instance_type": "1x RTX 3090", "offers": 1, "current": True},
        {"region": "SE", "instance_type": "1x RTX 4090", "offers": 2, "current": True},
    ]
    assert len(first) == 6
    # Next: 1002 gone (H100 US: 2 -> 1), both RTX 4090 offers gone (the group empties).
    body = recorded()
    body["offers"] = [o for o in body["offers"] if o["id"] not in (1002, 1020, 1021)]
    (tmp_path / "bundles.json").write_text(json.dumps(body))
    server.serve(Recording.load(tmp_path))
    cli_ok(config, "collect", "--provider", "vastai")
    second = json.loads(cli_ok(config, "sql", depth, "--format", "json").output)
    assert second[:4] == [
        {"region": "US", "instance_type": "1x H100 SXM", "offers": 2, "current": False},
        {"region": "US", "instance_type": "1x H100 SXM", "offers": 1, "current": True},
        {"region": "CA", "instance_type": "1x RTX 3090", "offers": 1, "current": True},
        {"region": "SE", "instance_type": "1x RTX 4090", "offers": 2, "current": False},
    ]
    assert len(second) == 7  # the three other groups confirmed, not repeated


def test_the_daemons_collection_child_hands_back_the_offer_counts(server: ReplayServer) -> None:
    """The daemon collects in a child process and gets plain data back: the counts travel
    with the records, as a direct parse gives them."""
    settings = ProviderSettings(endpoint=server.url, max_retries=2)
    answer = isolation._collect("vastai", settings, NOW, isolation._RECORD_FIELDS)
    fetched = isolation._answer("vastai", pickle.dumps(answer), 0)
    direct = parse(recorded())
    assert fetched.parsed.market == direct.market and direct.market
    assert direct.market[0] == MarketDepth("US", "1x H100 SXM", 2)
    assert fetched.parsed.records == direct.records


def test_fetch_waits_the_retry_after_asked(
    tmp_path: Path, replay: Replay, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 429 with Retry-After: 4 is waited as asked (of time.sleep, not waited) before the
    search is posted again."""
    throttled = {"match": {}, "status": 429, "times": 1, "headers": {"Retry-After": "4"},
                 "body_file": str(FIXTURES / "error-429.json")}  # fmt: skip
    answer = {"match": {}, "body_file": str(DEMO / "bundles.json")}
    server = replay(recording(tmp_path, throttled, answer))
    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)
    payloads = VastaiCollector(ProviderSettings(endpoint=server.url, max_retries=2)).fetch()
    assert payloads == {"bundles": recorded()}
    assert len(server.requests) == 2 and slept == [4]
