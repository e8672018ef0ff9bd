"""Volcano Engine collector: parse on the authored wire-format answers (hand-checked records),
fetch through the official SDK (signing, the universal call, paging) against the loopback
replay server."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from collectors import gpus
from collectors.base import ParseResult, Payloads, PriceRecord, ProviderSettings
from collectors.common import ConfigError, FetchError, PayloadShapeError
from collectors.volcengine import VolcengineCollector
from tests.collectors.support import demo_of, find, fixtures_of, list_price, recording
from tracker.collecting.replay import ReplayServer

DEMO = demo_of("volcengine")
FIXTURES = fixtures_of("volcengine")
REGIONS = ("cn-beijing", "cn-shanghai")
KEYS = {"access_key_id": "AKLTdemo", "secret_access_key": "demo"}
NOW = datetime(2026, 11, 30, 4, tzinfo=UTC)


def collector(url: str | None = None, **settings: Any) -> VolcengineCollector:
    settings.setdefault("max_retries", 0)
    settings.setdefault("credentials", KEYS)
    settings.setdefault("regions", REGIONS)
    return VolcengineCollector(
        ProviderSettings(endpoint=url, **settings),
        backoff_s=0,
        sleep=lambda seconds: None,
        clock=lambda: NOW,
    )


def recorded() -> Payloads:
    """The payloads fetch returns for the demo recording: each answer's Result, by request."""
    spec = json.loads((DEMO / "exchanges.json").read_text())
    payloads: Payloads = {}
    for exchange in spec["exchanges"]:
        match = exchange["match"]
        result = json.loads((DEMO / exchange["body_file"]).read_text())["Result"]
        region, query = match["region"], match["query"]
        if query["Action"] == "DescribeInstanceTypes":
            payloads[f"{region}/types/page-1"] = result
        else:
            number = 1 if query.get("NextToken") is None else int(query["NextToken"][-1]) + 1
            payloads[f"{region}/spot/{query['InstanceTypeId']}/page-{number}"] = result
    return payloads


def with_traps() -> Payloads:
    """The recording with tests/fixtures/volcengine/traps.json laid over it."""
    payloads = recorded()
    for key, value in json.loads((FIXTURES / "traps.json").read_text()).items():
        if isinstance(value, list):
            field = "InstanceTypes" if "/types/" in key else "SpotPrices"
            payloads[key][field] += value
        else:
            payloads[key] = value
    return payloads


def parse(payloads: Payloads, **settings: Any) -> ParseResult:
    return collector(**settings).parse(payloads, observed_at=NOW)


def spot(**fields: Any) -> PriceRecord:
    base = {"price_kind": "spot", "currency": "CNY", "available": None}
    return list_price("volcengine", **(base | fields))


def test_records_worked_out_by_hand() -> None:
    got = find(parse(recorded()), instance_type="ecs.gni2.3xlarge", zone="cn-beijing-a")
    # two points an hour apart, each dated by its own Timestamp (+08:00 turned to UTC);
    # 1 x NVIDIA A10 of 24576 MiB = 24 GiB; host 12 vCPUs, 47104 MiB = 46 GiB
    facts = {"gpu_model": "A10", "gpu_count": 1, "gpu_memory_gib": 24, "vcpus": 12}
    assert sorted(got, key=lambda r: r.effective_at or NOW) == [
        spot(
            region="cn-beijing",
            zone="cn-beijing-a",
            instance_type="ecs.gni2.3xlarge",
            price_per_hour=Decimal(price),
            effective_at=datetime(2026, 11, 30, hour, tzinfo=UTC),
            memory_gib=46,
            **facts,
        )
        for hour, price in ((2, "2.310000"), (3, "2.270000"))
    ]
    eight = find(parse(recorded()), instance_type="ecs.pni2.28xlarge", zone="cn-beijing-b")
    assert [(r.gpu_model, r.gpu_count, r.gpu_memory_gib, r.price_per_hour) for r in eight] == [
        ("A100", 8, 80, Decimal("60.12"))  # from the second page
    ]


def test_every_offer() -> None:
    result = parse(recorded())
    # beijing: gni2.3xlarge 3 points, gni2.12xlarge 1, pni2.28xlarge 2 (two pages); shanghai 1
    assert len(result.records) == 3 + 1 + 2 + 1
    assert {r.price_kind for r in result.records} == {"spot"}
    assert "ecs.g1ve.xlarge" not in {r.instance_type for r in result.records}  # no GPU
    assert result.skipped_rows == 0 and result.unknown_instance_types == set()
    assert set(result.facts.values()) == {"api"}


def test_traps(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="collectors.volcengine"):
        result = parse(with_traps())
    [h20] = find(result, instance_type="ecs.gni3.4xlarge")
    assert h20.gpu_model == gpus.stored_model("volcengine", "NVIDIA H20")
    assert (h20.gpu_memory_gib, h20.price_per_hour, h20.effective_at) == (
        96,
        Decimal("3.95"),
        datetime(2026, 11, 30, 2, tzinfo=UTC),
    )
    assert result.unreadable == {"ecs.mix1.8xlarge", "ecs.gni2.6xlarge", "ecs.gni2.3xlarge"}
    assert result.skipped_rows == 4  # two types, two spot points
    assert not find(result, zone="cn-shanghai-a", region="cn-beijing")
    assert len(find(result, instance_type="ecs.gni2.3xlarge", region="cn-beijing")) == 3
    messages = [r.getMessage() for r in caplog.records]
    assert "volcengine: cn-beijing ecs.mix1.8xlarge skipped: not one kind of GPU device" in messages


def test_currency_is_the_configured_site() -> None:
    assert {r.currency for r in parse(recorded(), options={"currency": "USD"}).records} == {"USD"}


@pytest.mark.parametrize("currency", ["EUR", "usd", None])
def test_any_other_currency_is_a_config_error(currency: Any) -> None:
    with pytest.raises(ConfigError, match=r"providers\.volcengine\.currency"):
        collector(options={"currency": currency})


def test_endpoint_must_be_the_root_of_a_host() -> None:
    with pytest.raises(ConfigError, match=r"providers\.volcengine\.endpoint"):
        collector("https://open.volcengineapi.com/ecs")


def test_parse_keeps_only_the_configured_regions() -> None:
    result = parse(recorded(), regions=("cn-shanghai",))
    assert {r.region for r in result.records} == {"cn-shanghai"}


@pytest.mark.parametrize("body", [{}, {"InstanceTypes": {}}, []])
def test_a_changed_shape_fails_loudly(body: Any) -> None:
    with pytest.raises(PayloadShapeError, match=r"^volcengine: cn-beijing/types/page-1: the"):
        parse({"cn-beijing/types/page-1": body})


# -- fetch: the official SDK against loopback ----------------------------------------------


def test_the_demo_recording_answers_every_request(replay: Any) -> None:
    server: ReplayServer = replay(DEMO)
    payloads = collector(server.url).fetch()
    assert server.unmatched == []
    assert payloads == recorded()
    asked = [r.query for r in server.requests if r.query["Action"] == "DescribeSpotPriceHistory"]
    # one window back from the collection: three hours (the smallest window asked)
    assert {(q["TimestampStart"], q["TimestampEnd"]) for q in asked} == {
        (str(int(NOW.timestamp()) - 3 * 3600), str(int(NOW.timestamp())))
    }
    assert all(r.headers["authorization"].startswith("HMAC-SHA256") for r in server.requests)


def _ahead(tmp_path: Path, status: int, body_file: str, **extra: Any) -> Path:
    body = (FIXTURES / body_file).read_text()
    return recording(tmp_path, {"match": {}, "status": status, "body": body, **extra})


def test_a_refused_key_names_the_variables(replay: Any, tmp_path: Path) -> None:
    server = replay(_ahead(tmp_path, 401, "error-auth.json"))
    with pytest.raises(FetchError, match=r"^volcengine: .*InvalidAccessKey.*VOLCENGINE_ACCESS_KEY"):
        collector(server.url).fetch()


def test_throttling_is_retried_then_succeeds(replay: Any, tmp_path: Path) -> None:
    server = replay(_ahead(tmp_path, 429, "error-throttled.json", times=1), DEMO)
    assert collector(server.url, max_retries=2).fetch() == recorded()


def test_throttling_until_it_gives_up(replay: Any, tmp_path: Path) -> None:
    server = replay(_ahead(tmp_path, 429, "error-throttled.json"))
    with pytest.raises(FetchError, match=r"AccountFlowLimitExceeded.*gave up after 3 attempts"):
        collector(server.url, max_retries=2).fetch()
