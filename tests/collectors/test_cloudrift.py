"""CloudRift collector: parse on the authored wire-format answer (hand-checked records), fetch
through the real requests stack against `responses` and the loopback replay server."""

from __future__ import annotations

import json
import logging
import tomllib
from collections.abc import Callable
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import responses

from collectors import REGISTRY
from collectors.base import ParseResult, PriceRecord
from collectors.cloudrift import CloudriftCollector
from collectors.common import FetchError, PayloadShapeError
from tests.collectors.support import (
    cli_ok,
    demo_json,
    demo_of,
    find,
    fixtures_of,
    keyed,
    list_price,
    store_config,
    under_test,
    with_traps,
)
from tracker.collecting.replay import ReplayServer

DEMO = demo_of("cloudrift")
FIXTURES = fixtures_of("cloudrift")
URL = "https://api.cloudrift.ai/api/v1/instance-types/list"


def recorded() -> dict[str, Any]:
    return demo_json("cloudrift", "instance-types.json")


def answer() -> dict[str, Any]:
    """The recording with the instance types of tests/fixtures/cloudrift/traps.json added."""
    return with_traps(recorded(), "cloudrift", "data", "instance_types")


def collector(**settings: Any) -> CloudriftCollector:
    return under_test(CloudriftCollector, **settings)


def parse(body: Any, observed_at: datetime, **settings: Any) -> ParseResult:
    return collector(**settings).parse({"instance-types": body}, observed_at=observed_at)


def offers(result: ParseResult) -> dict[tuple[Any, ...], PriceRecord]:
    return keyed(result, "instance_type", "region")


def cr_record(**fields: Any) -> PriceRecord:
    return list_price("cloudrift", **{"price_kind": "on_demand", "available": True, **fields})


def test_records_worked_out_by_hand(observed_at: datetime) -> None:
    got = offers(parse(recorded(), observed_at))
    # 4 x 39 = 156 cents = 1.56 USD for the machine; 24564 MiB of vram -> 24 GiB per GPU;
    # 32 logical CPUs, 200 GiB of dram; one free node in the datacenter: available
    assert got["rtx49-8c-nr.4", "usny01_a01"] == cr_record(
        region="usny01_a01",
        instance_type="rtx49-8c-nr.4",
        price_per_hour=Decimal("1.56"),
        gpu_model="RTX4090",
        gpu_count=4,
        gpu_memory_gib=24,
        vcpus=32,
        memory_gib=200,
    )
    # no free node for 8 GPUs: the list price kept, sold out (312 cents)
    eight = got["rtx49-8c-nr.8", "usny01_a01"]
    assert (eight.price_per_hour, eight.available) == (Decimal("3.12"), False)
    # V100: 16280 MiB -> 16 GiB; 2 x 19 cents
    two = got["v100-6c-gv.2", "ustx1a_a01"]
    assert (two.gpu_model, two.gpu_memory_gib, two.price_per_hour) == ("V100", 16, Decimal("0.38"))
    # listed in no datacenter: one record, region NULL, sold out
    nowhere = got["rtx49-16c-kn.8", None]
    assert (nowhere.price_per_hour, nowhere.available) == (Decimal("2.96"), False)


def test_every_offer(observed_at: datetime) -> None:
    result = parse(recorded(), observed_at)
    assert len(result.records) == 4 + 3 + 1  # the CPU machine is left out
    assert {r.price_kind for r in result.records} == {"on_demand"}
    assert {r.currency for r in result.records} == {"USD"}
    assert result.skipped_rows == 0 and result.unknown_instance_types == set()
    assert set(result.facts.values()) == {"api"}


def test_traps(observed_at: datetime, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="collectors.cloudrift"):
        result = parse(answer(), observed_at)
    # GPUs the table may not know yet: stored under the API's own name (or the table's)
    new = [find(result, instance_type=t)[0] for t in ("rtx59-16c-nr.1", "rtxpro6000-24c-gv.1")]
    assert [(r.gpu_memory_gib, r.price_per_hour, r.available) for r in new] == [
        (32, Decimal("0.65"), False),
        (95, Decimal("1.39"), True),
    ]
    assert {r.gpu_model for r in new} <= {"RTX 5090", "RTX5090", "RTX PRO 6000", "RTXPRO6000"}
    assert result.skipped_rows == 2  # the string price, the name with a space
    assert result.unreadable == {"rtxpro6000-24c-gv.2"}
    assert result.unknown_instance_types == {"v100-6c-gv.8"}
    messages = [r.getMessage() for r in caplog.records]
    assert "cloudrift: rtxpro6000-24c-gv.2 skipped: cost_per_hour is '2.78'" in messages
    assert "cloudrift: a variant skipped: name is 'a100 80gb.1'" in messages


def test_configured_regions_restrict(observed_at: datetime) -> None:
    result = parse(recorded(), observed_at, regions=("ustx1a_a01",))
    # the variant listed nowhere is kept once, sold out, whatever was asked
    assert {(r.instance_type, r.region) for r in result.records} == {
        *((f"v100-6c-gv.{n}", "ustx1a_a01") for n in (1, 2, 4)),
        ("rtx49-16c-kn.8", None),
    }


@pytest.mark.parametrize(
    "body", [{}, {"data": {}}, [], {"data": {"instance_types": {}}}, "Invalid version"]
)
def test_a_changed_shape_fails_loudly(observed_at: datetime, body: Any) -> None:
    with pytest.raises(PayloadShapeError, match=r"^cloudrift: instance types: answer has no list"):
        parse(body, observed_at)


def test_every_variant_unreadable_is_a_changed_shape(observed_at: datetime) -> None:
    body = recorded()
    for kind in body["data"]["instance_types"]:
        for variant in kind["variants"]:
            variant["cost_per_hour"] = str(variant["cost_per_hour"])
    with pytest.raises(PayloadShapeError, match="none of the 8 GPU variants"):
        parse(body, observed_at)


def test_fetch_asks_for_vm_types_without_a_key(rsps: responses.RequestsMock) -> None:
    rsps.post(URL, json=recorded())
    assert collector().fetch() == {"instance-types": recorded()}
    sent = json.loads(rsps.calls[0].request.body)
    assert sent["data"] == {"selector": {"ByServiceAndLocation": {"services": ["vm"]}}}
    assert "Authorization" not in rsps.calls[0].request.headers


def test_fetch_error_names_the_provider(rsps: responses.RequestsMock) -> None:
    rsps.post(URL, status=400, json=json.loads((FIXTURES / "error-400.json").read_text()))
    with pytest.raises(FetchError, match=r"^cloudrift: instance types: HTTP 400: .*Invalid"):
        collector().fetch()


def test_a_first_run_with_no_key_stores_its_prices(
    replay: Callable[..., ReplayServer], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for variables in (info.credential_env for info in REGISTRY.values()):
        for variable in variables.values():
            monkeypatch.delenv(variable, raising=False)
    # Enabled in the repository's config.toml, with no key to ask for.
    shipped = tomllib.loads((Path(__file__).parents[2] / "config.toml").read_text())
    assert shipped["providers"]["cloudrift"]["enabled"] is True
    assert REGISTRY["cloudrift"].credential_env == {}
    server = replay(DEMO)
    config = store_config(tmp_path, "cloudrift", server.url)
    others = "".join(f"[providers.{p}]\nenabled = false\n" for p in REGISTRY if p != "cloudrift")
    config.write_text(config.read_text() + others)
    cli_ok(config, "collect")
    latest = cli_ok(config, "latest", "--format", "json", "--include-sold-out", "--limit", "100")
    rows = json.loads(latest.stdout)
    assert {row["provider"] for row in rows} == {"cloudrift"} and len(rows) == 8
    four = next(row for row in rows if row["instance_type"] == "rtx49-8c-nr.4")
    assert (four["per_hour"], four["per_gpu_hour"], four["available"]) == (1.56, 0.39, True)


def test_datacenters_as_objects_are_read_by_name(observed_at: datetime) -> None:
    body = recorded()
    nowhere = body["data"]["instance_types"][2]
    nowhere["datacenters"] = [{"name": "usny01_a01", "country_code": "US"}]
    got = offers(parse(body, observed_at))
    # listed there, no free node counted: sold out in that datacenter, not nowhere
    assert got["rtx49-16c-kn.8", "usny01_a01"].available is False
    assert ("rtx49-16c-kn.8", None) not in got
