"""Huawei Cloud collector: parse on the authored wire-format answers (hand-checked records), fetch
through the official SDK (signing, the IAM project and domain look-ups, ECS and BSS) against the
loopback replay server."""

from __future__ import annotations

import json
import logging
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from collectors import gpus
from collectors.base import ParseResult, Payloads, PriceRecord, ProviderSettings
from collectors.common import ConfigError, FetchError, PayloadShapeError
from collectors.huawei import HuaweiCollector
from tests.collectors.support import demo_of, find, fixtures_of, keyed, list_price, recording
from tracker.collecting.replay import ReplayServer

DEMO = demo_of("huawei")
FIXTURES = fixtures_of("huawei")
REGIONS = ("cn-north-4", "cn-east-3")
KEYS = {"access_key_id": "DEMOAKHUAWEI", "secret_access_key": "demo"}
ON_DEMAND = "/v2/bills/ratings/on-demand-resources"
PERIOD = "/v2/bills/ratings/period-resources/subscribe-rate"


def collector(url: str | None = None, **settings: Any) -> HuaweiCollector:
    settings.setdefault("max_retries", 0)
    settings.setdefault("credentials", KEYS)
    settings.setdefault("regions", REGIONS)
    return HuaweiCollector(ProviderSettings(endpoint=url, **settings), backoff_s=0, sleep=_no_wait)


def _no_wait(seconds: float) -> None:
    return None


def recorded() -> Payloads:
    """The payloads fetch returns for the demo recording, read from its exchanges."""
    spec = json.loads((DEMO / "exchanges.json").read_text())
    payloads: Payloads = {}
    projects = {}
    for exchange in spec["exchanges"]:
        match, body = exchange["match"], json.loads((DEMO / exchange["body_file"]).read_text())
        if match["path"] == "/v3/projects":
            projects[body["projects"][0]["id"]] = match["query"]["name"]
        elif match["path"].endswith("/cloudservers/flavors"):
            payloads[f"flavors/{projects[match['path'].split('/')[2]]}"] = body
        elif match["path"] in (ON_DEMAND, PERIOD):
            [info] = match["json"]["product_infos"]
            kind = "on_demand" if match["path"] == ON_DEMAND else "period"
            flavor = info["resource_spec"].removesuffix(".linux")
            payloads[f"{kind}/{info['region']}/{flavor}"] = body
    return payloads


def with_traps() -> Payloads:
    """The recording with tests/fixtures/huawei/traps.json laid over it."""
    payloads = recorded()
    for key, value in json.loads((FIXTURES / "traps.json").read_text()).items():
        if key.startswith("flavors/"):
            payloads[key]["flavors"] += value
        else:
            payloads[key] = value
    return payloads


def parse(payloads: Payloads, observed_at: datetime, **settings: Any) -> ParseResult:
    return collector(**settings).parse(payloads, observed_at=observed_at)


def offers(result: ParseResult) -> dict[tuple[Any, ...], PriceRecord]:
    return keyed(result, "instance_type", "region", "price_kind", "term_months")


def hw_record(**fields: Any) -> PriceRecord:
    base = {"price_kind": "on_demand", "currency": "CNY", "available": True}
    return list_price("huawei", **(base | fields))


V100_1 = {"gpu_model": "V100", "gpu_count": 1, "gpu_memory_gib": 32, "vcpus": 8, "memory_gib": 64}


def test_records_worked_out_by_hand(observed_at: datetime) -> None:
    got = offers(parse(recorded(), observed_at))
    where = {"region": "cn-north-4", "instance_type": "p2s.2xlarge.8", **V100_1}
    # official_website_amount 20.26 CNY for one hour; info:gpus 1 x NVIDIA-V100 32768 MB;
    # ram 65536 MiB = 64 GiB
    assert got["p2s.2xlarge.8", "cn-north-4", "on_demand", None] == hw_record(
        price_per_hour=Decimal("20.260000"), **where
    )
    # one year 107916 CNY upfront: 107916 / 8760 = 12.3191780... per hour
    assert got["p2s.2xlarge.8", "cn-north-4", "reserved", 12] == hw_record(
        price_kind="reserved",
        term_months=12,
        price_per_hour=Decimal("12.319178"),
        upfront_total=Decimal("107916.000000"),
        **where,
    )
    # one month 10580 / 730 = 14.4931506...; three years 241722 / 26280 = 9.1979452...
    assert got["p2s.2xlarge.8", "cn-north-4", "reserved", 1].price_per_hour == Decimal("14.493151")
    assert got["p2s.2xlarge.8", "cn-north-4", "reserved", 36].price_per_hour == Decimal("9.197945")
    eight = got["p2s.16xlarge.8", "cn-north-4", "on_demand", None]
    assert (eight.gpu_count, eight.vcpus, eight.memory_gib, eight.price_per_hour) == (
        8,
        64,
        512,
        Decimal("162.08"),
    )


def test_every_offer(observed_at: datetime) -> None:
    result = parse(recorded(), observed_at)
    # cn-north-4: p2s.2xlarge.8 and p2s.16xlarge.8 (on-demand, 1, 12, 36 months), pi2.2xlarge.4
    # (on-demand, 1, 12: no three-year row); cn-east-3: p2s.2xlarge.8 (4) and pi2.2xlarge.4 (3)
    assert len(result.records) == 4 + 4 + 3 + 4 + 3
    assert {r.currency for r in result.records} == {"CNY"}
    assert "s6.large.2" not in {r.instance_type for r in result.records}  # not a GPU flavor
    # sold out in every zone of cn-east-3: kept with its list price, available false
    east_t4 = find(result, region="cn-east-3", instance_type="pi2.2xlarge.4")
    assert {r.available for r in east_t4} == {False} and len(east_t4) == 3
    # p2s.2xlarge.8 is sold out in cn-north-4b only: available
    assert {r.available for r in find(result, instance_type="p2s.2xlarge.8")} == {True}
    assert result.skipped_rows == 0 and result.unknown_instance_types == set()
    assert set(result.facts.values()) == {"api"}


def test_traps(observed_at: datetime, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="collectors.huawei"):
        result = parse(with_traps(), observed_at)
    got = offers(result)
    # Ascend: not (yet) in the GPU table, stored under the API's own name
    ascend = got["kat2.24xlarge.8", "cn-north-4", "on_demand", None]
    assert ascend.gpu_model == gpus.stored_model("huawei", "Ascend-910B")
    assert (ascend.gpu_count, ascend.gpu_memory_gib, ascend.price_per_hour) == (
        8,
        64,
        Decimal("186.4"),
    )
    # measure_id 3: 2212 fen = 22.12 CNY; info:gpus as a bare list; the period inquiry refused
    two = got["pi2.4xlarge.4", "cn-north-4", "on_demand", None]
    assert (two.gpu_model, two.gpu_count, two.price_per_hour) == ("T4", 2, Decimal("22.12"))
    assert not find(result, instance_type="pi2.4xlarge.4", price_kind="reserved")
    assert not find(result, instance_type="p1.2xlarge.8")  # withdrawn (abandon)
    assert result.unknown_instance_types == {"pi1.2xlarge.4"}  # no GPU information
    assert result.unreadable == {"g6.10xlarge.7"} and result.skipped_rows == 1
    messages = [r.getMessage() for r in caplog.records]
    assert (
        "huawei: cn-north-4 flavor g6.10xlarge.7 skipped: its GPU information is not JSON"
        in messages
    )


def test_the_answer_names_the_currency(observed_at: datetime) -> None:
    payloads = recorded()
    for key, body in payloads.items():
        if not key.startswith("flavors/"):
            body["currency"] = "USD"  # an international-site account's answer
    result = parse(payloads, observed_at, options={"currency": "USD"})
    assert {r.currency for r in result.records} == {"USD"}


@pytest.mark.parametrize("currency", ["EUR", "cny", 1])
def test_any_other_currency_is_a_config_error(currency: Any) -> None:
    with pytest.raises(ConfigError, match=r"providers\.huawei\.currency"):
        collector(options={"currency": currency})


def test_parse_keeps_only_the_configured_regions(observed_at: datetime) -> None:
    result = parse(recorded(), observed_at, regions=("cn-east-3",))
    assert {r.region for r in result.records} == {"cn-east-3"}


@pytest.mark.parametrize("body", [{}, {"flavors": {}}, [], {"error_code": "APIGW.0301"}])
def test_a_changed_shape_fails_loudly(observed_at: datetime, body: Any) -> None:
    with pytest.raises(PayloadShapeError, match=r"^huawei: flavors/cn-north-4: the answer has no"):
        parse({"flavors/cn-north-4": body}, observed_at)


# -- fetch: the official SDK against loopback ----------------------------------------------


def test_the_demo_recording_answers_every_request(replay: Any, observed_at: datetime) -> None:
    server: ReplayServer = replay(DEMO)
    payloads = collector(server.url).fetch()
    assert server.unmatched == []
    assert payloads == recorded()
    # the BSS inquiries carry the region's project, found through IAM
    bodies = [json.loads(r.body) for r in server.requests if r.path == ON_DEMAND]
    projects = {b["product_infos"][0]["region"]: b["project_id"] for b in bodies}
    assert projects["cn-east-3"] == "7a1b2c3d4e5f40618293a4b5c6d7e8f9"
    signed = [r for r in server.requests if r.path.endswith("/cloudservers/flavors")]
    assert all(r.headers["authorization"].startswith("SDK-HMAC-SHA256") for r in signed)
    assert len(collector().parse(payloads, observed_at=observed_at).records) == 18


def _ahead(tmp_path: Path, path: str, status: int, body_file: str, **extra: Any) -> Path:
    answer = {"match": {"path": path}, "status": status, "body": _fixture(body_file), **extra}
    return recording(tmp_path, answer)


def _fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_a_refused_key_names_the_variables(replay: Any, tmp_path: Path) -> None:
    folder = recording(tmp_path, {"match": {}, "status": 401, "body": _fixture("error-401.json")})
    server = replay(folder)
    with pytest.raises(FetchError, match=r"^huawei: .*APIGW\.0301.*HUAWEICLOUD_SDK_AK"):
        collector(server.url).fetch()


def test_throttling_is_retried_then_succeeds(replay: Any, tmp_path: Path) -> None:
    ahead = _ahead(tmp_path, ON_DEMAND, 429, "error-throttled.json", times=1)
    server = replay(ahead, DEMO)
    payloads = collector(server.url, max_retries=2).fetch()
    assert payloads == recorded()


def test_throttling_until_it_gives_up(replay: Any, tmp_path: Path) -> None:
    server = replay(_ahead(tmp_path, ON_DEMAND, 429, "error-throttled.json"), DEMO)
    with pytest.raises(FetchError, match=r"APIGW\.0308.*gave up after 3 attempts"):
        collector(server.url, max_retries=2).fetch()


def test_a_refused_inquiry_prices_nothing_and_the_rest_stands(
    replay: Any, tmp_path: Path, observed_at: datetime
) -> None:
    server = replay(_ahead(tmp_path, PERIOD, 400, "error-refused.json"), DEMO)
    payloads = collector(server.url).fetch()
    assert payloads["period/cn-north-4/p2s.2xlarge.8"]["error_code"] == "CBC.0100"
    result = collector().parse(payloads, observed_at=observed_at)
    assert {r.price_kind for r in result.records} == {"on_demand"} and len(result.records) == 5


def test_defaults_are_the_gpu_regions() -> None:
    assert "cn-north-4" in HuaweiCollector(ProviderSettings()).regions
