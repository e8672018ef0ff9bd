"""Verda collector: parse on the authored wire-format answers (hand-checked records), fetch
through the real requests stack against `responses` and the loopback replay server."""

from __future__ import annotations

import json
import logging
from datetime import datetime
from decimal import Decimal
from typing import Any

import pytest
import responses

from collectors.base import ParseResult, PriceRecord
from collectors.common import PayloadShapeError
from collectors.http import listening
from collectors.verda import VerdaCollector
from tests.collectors.support import demo_json, find, fixtures_of, keyed, list_price, under_test

FIXTURES = fixtures_of("verda")
BASE = "https://api.verda.com/v1"
KEYS = {"client_id": "demo", "client_secret": "demo"}


def recorded() -> dict[str, Any]:
    return {
        "instance-types": demo_json("verda", "instance-types.json"),
        "availability/on-demand": demo_json("verda", "availability-on-demand.json"),
        "availability/spot": demo_json("verda", "availability-spot.json"),
    }


def answer() -> dict[str, Any]:
    """The recording with the instance types of tests/fixtures/verda/traps.json added."""
    payloads = recorded()
    payloads["instance-types"] += json.loads((FIXTURES / "traps.json").read_text())
    return payloads


def collector(**settings: Any) -> VerdaCollector:
    return under_test(VerdaCollector, dict(KEYS), **settings)


def parse(payloads: Any, observed_at: datetime, **settings: Any) -> ParseResult:
    return collector(**settings).parse(payloads, observed_at=observed_at)


def offers(result: ParseResult) -> dict[tuple[Any, ...], PriceRecord]:
    return keyed(result, "instance_type", "region", "price_kind")


def verda_record(**fields: Any) -> PriceRecord:
    return list_price("verda", **{"price_kind": "on_demand", "available": True, **fields})


def test_records_worked_out_by_hand(observed_at: datetime) -> None:
    got = offers(parse(recorded(), observed_at))
    # 8 x H100: price_per_hour for the whole instance; gpu_memory 640 GB is all eight: 80 each
    assert got["8H100.80S.176V", "FIN-03", "on_demand"] == verda_record(
        region="FIN-03",
        instance_type="8H100.80S.176V",
        price_per_hour=Decimal("18.32"),
        gpu_model="H100",
        gpu_count=8,
        gpu_memory_gib=80,
        vcpus=176,
        memory_gib=1480,
    )
    # its spot price, startable as spot nowhere: kept once, region NULL, sold out
    spot = got["8H100.80S.176V", None, "spot"]
    assert (spot.price_per_hour, spot.available) == (Decimal("9.20"), False)
    # 4 x A100 40 GB: 160 / 4 = 40 per GPU; on-demand nowhere; spot_price "0" is no spot
    four = got["4A100.40S.88V", None, "on_demand"]
    assert (four.gpu_memory_gib, four.price_per_hour, four.available) == (
        40,
        Decimal("2.88"),
        False,
    )
    assert not find(
        parse(recorded(), observed_at), instance_type="4A100.40S.88V", price_kind="spot"
    )
    # RTX 6000 Ada through [names.verda]; 96 / 2 = 48
    ada = got["2RTX6000ADA.20V", "FIN-01", "on_demand"]
    assert (ada.gpu_model, ada.gpu_memory_gib) == ("RTX6000Ada", 48)


def test_every_offer(observed_at: datetime) -> None:
    result = parse(recorded(), observed_at)
    # H100x1 3, H100x8 2, A100x1 3, A100x4 1, L40S 2, RTX 6000 Ada 2; the CPU type left out
    assert len(result.records) == 13
    assert not find(result, instance_type="CPU.8V.32G")
    assert {r.region for r in find(result, instance_type="1H100.80S.30V")} == {"FIN-01", "FIN-03"}
    assert {r.currency for r in result.records} == {"USD"}
    assert all(r.available is (r.region is not None) for r in result.records)
    assert result.skipped_rows == 0 and result.unknown_instance_types == set()
    assert set(result.facts.values()) == {"api"}


def test_traps(observed_at: datetime, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="collectors.verda"):
        result = parse(answer(), observed_at)
    # a GPU the table may not know yet: stored under Verda's own name, 2096 / 8 = 262 GB each
    b300 = find(result, instance_type="8B300.30V", price_kind="on_demand")
    assert [(r.gpu_memory_gib, r.price_per_hour, r.region) for r in b300] == [
        (262, Decimal("39.60"), None)
    ]
    assert b300[0].gpu_model == "B300"
    # no `model`: the name in gpu.description
    assert {r.gpu_model for r in find(result, instance_type="4RTX6000ADA.40V")} == {"RTX6000Ada"}
    # a spot price above on-demand is no spot price
    assert [r.price_kind for r in find(result, instance_type="1V100.6V")] == ["on_demand"]
    assert result.skipped_rows == 2  # the null price, the price in euros
    assert result.unreadable == {"8A100.176V", "2L40S.40V"}
    messages = [r.getMessage() for r in caplog.records]
    assert "verda: 8A100.176V skipped: price_per_hour is 'None'" in messages
    assert "verda: 2L40S.40V skipped: currency is 'eur'" in messages


def test_configured_regions_restrict(observed_at: datetime) -> None:
    result = parse(recorded(), observed_at, regions=("FIN-02",))
    assert {(r.instance_type, r.region) for r in result.records if r.region} == {
        ("1A100.22V", "FIN-02"),
        ("1L40S.20V", "FIN-02"),
    }


@pytest.mark.parametrize("key", ["instance-types", "availability/on-demand", "availability/spot"])
@pytest.mark.parametrize("body", [{}, {"code": "unauthorized_request"}, "not json", None])
def test_a_changed_shape_fails_loudly(observed_at: datetime, key: str, body: Any) -> None:
    with pytest.raises(PayloadShapeError, match=rf"^verda: {key.replace('-', ' ')}|^verda: {key}"):
        parse({**recorded(), key: body}, observed_at)


def _answers(rsps: responses.RequestsMock) -> None:
    rsps.post(f"{BASE}/oauth2/token", json={"access_token": "t0k3n", "token_type": "Bearer"})
    rsps.get(f"{BASE}/instance-types", json=recorded()["instance-types"])
    for spot, key in (("false", "availability/on-demand"), ("true", "availability/spot")):
        rsps.get(
            f"{BASE}/instance-availability",
            json=recorded()[key],
            match=[responses.matchers.query_param_matcher({"is_spot": spot})],
        )


def test_fetch_asks_a_token_and_never_keeps_it(rsps: responses.RequestsMock) -> None:
    _answers(rsps)
    with listening() as heard:
        payloads = collector(credentials={"client_id": "id", "client_secret": "s3cret"}).fetch()
    assert payloads == recorded()
    assert json.loads(rsps.calls[0].request.body) == {
        "grant_type": "client_credentials",
        "client_id": "id",
        "client_secret": "s3cret",
    }
    assert all(c.request.headers["Authorization"] == "Bearer t0k3n" for c in rsps.calls[1:])
    assert rsps.calls[1].request.params == {"currency": "usd"}
    # the answers kept are the three payloads; the token's is not among them
    assert len(heard.contents()) == 3 and not any(b"t0k3n" in c for c in heard.contents())


def test_one_gpus_memory_from_the_description_first(observed_at: datetime) -> None:
    payloads = recorded()
    eight = next(t for t in payloads["instance-types"] if t["instance_type"] == "8H100.80S.176V")
    eight["gpu_memory"]["size_in_gigabytes"] = 80  # an answer giving one GPU's: not 10 each
    one = next(t for t in payloads["instance-types"] if t["instance_type"] == "1A100.22V")
    one["gpu"]["description"] = ""  # no description: the total over the count (80 / 1)
    got = offers(parse(payloads, observed_at))
    assert got["8H100.80S.176V", "FIN-03", "on_demand"].gpu_memory_gib == 80
    assert got["1A100.22V", "FIN-01", "on_demand"].gpu_memory_gib == 80
