"""RunPod collector: the recorded `gpuTypes` answer parsed into per-GPU records per cloud,
checked by hand from the API's own prices; the GraphQL call through the real requests stack
against the loopback replay server (the key, the query, a GraphQL error, a refused key); and
through the real CLI, a missing key skips the provider with one line."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from collectors import gpus
from collectors.base import ParseResult, PriceRecord, ProviderSettings
from collectors.common import FetchError, MissingCredentials, PayloadShapeError
from collectors.runpod import RunpodCollector
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
from tracker.collecting.replay import Recording, ReplayServer

DEMO = demo_of("runpod")
FIXTURES = fixtures_of("runpod")
H100 = "NVIDIA H100 80GB HBM3"

Replay = Callable[..., ReplayServer]


def recorded() -> dict[str, Any]:
    return demo_json("runpod", "gpu-types.json")


def answer() -> dict[str, Any]:
    """The recorded types plus the trap types of tests/fixtures/runpod/traps.json."""
    return with_traps(recorded(), "runpod", "data", "gpuTypes")


def collector(**settings: Any) -> RunpodCollector:
    settings.setdefault("credentials", {"api_key": "rp-key"})
    return RunpodCollector(ProviderSettings(**settings))


def parse(body: Any, **settings: Any) -> ParseResult:
    return collector(**settings).parse({"gpuTypes": body}, observed_at=NOW)


def by_offer(result: ParseResult) -> dict[tuple[str, str], PriceRecord]:
    out = {(r.instance_type, r.price_kind): r for r in result.records}
    assert len(out) == len(result.records)
    return out


def pod(**fields: Any) -> PriceRecord:
    base = {"region": None, "gpu_count": 1, "vcpus": None, "memory_gib": None}
    return list_price("runpod", **{**base, **fields})


def test_records_in_full() -> None:
    offers = by_offer(parse(recorded()))
    h100 = {"gpu_model": "H100", "gpu_memory_gib": 80.0, "available": True}
    # securePrice 3.99, secureSpotPrice 2.79 (secureStock High); communityPrice 2.69,
    # communitySpotPrice 1.75 (communityStock Medium): per GPU-hour, one GPU, no region
    assert offers[f"secure/{H100}", "on_demand"] == pod(
        instance_type=f"secure/{H100}", price_kind="on_demand", price_per_hour=Decimal("3.99"),
        **h100,
    )  # fmt: skip
    assert offers[f"secure/{H100}", "spot"] == pod(
        instance_type=f"secure/{H100}", price_kind="spot", price_per_hour=Decimal("2.79"), **h100
    )
    assert offers[f"community/{H100}", "on_demand"] == pod(
        instance_type=f"community/{H100}", price_kind="on_demand",
        price_per_hour=Decimal("2.69"), **h100,
    )  # fmt: skip
    # A100 PCIe in Community Cloud: communityStock {stockStatus: null} -> no stock
    pcie = "community/NVIDIA A100 80GB PCIe"
    assert offers[pcie, "on_demand"] == pod(
        instance_type=pcie, price_kind="on_demand", price_per_hour=Decimal("1.19"),
        gpu_model="A100", gpu_memory_gib=80.0, available=False,
    )  # fmt: skip
    # MI300X: Secure Cloud only, spot 0 -> on-demand 2.49 alone
    mi300x = "secure/AMD Instinct MI300X OAM"
    assert offers[mi300x, "on_demand"] == pod(
        instance_type=mi300x, price_kind="on_demand", price_per_hour=Decimal("2.49"),
        gpu_model="MI300X", gpu_memory_gib=192.0, available=True,
    )  # fmt: skip


def test_every_offer_and_price() -> None:
    result = parse(recorded())
    prices = {key: r.price_per_hour for key, r in by_offer(result).items()}
    types = {
        H100: ("3.99", "2.79", "2.69", "1.75"),
        "NVIDIA A100-SXM4-80GB": ("1.79", "1.19", "1.39", "0.89"),
        "NVIDIA A100 80GB PCIe": ("1.64", "1.09", "1.19", "0.79"),
        "NVIDIA RTX A6000": ("0.76", "0.49", "0.49", "0.25"),
        "NVIDIA L40S": ("0.86", "0.53", "0.79", "0.42"),
    }
    expected = {}
    for ident, (secure, secure_spot, community, community_spot) in types.items():
        expected[f"secure/{ident}", "on_demand"] = Decimal(secure)
        expected[f"secure/{ident}", "spot"] = Decimal(secure_spot)
        expected[f"community/{ident}", "on_demand"] = Decimal(community)
        expected[f"community/{ident}", "spot"] = Decimal(community_spot)
    # Community only (secureCloud false, securePrice 0), and Secure only without spot (0)
    expected["community/NVIDIA GeForce RTX 4090", "on_demand"] = Decimal("0.34")
    expected["community/NVIDIA GeForce RTX 4090", "spot"] = Decimal("0.2")
    expected["secure/AMD Instinct MI300X OAM", "on_demand"] = Decimal("2.49")
    expected["secure/NVIDIA H200", "on_demand"] = Decimal("3.99")
    assert prices == expected  # the `unknown` type: nothing
    assert result.skipped_rows == 0 and result.notes == []


def test_traps(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="collectors.runpod"):
        result = parse(answer())
    offers = by_offer(result)
    pro = "secure/NVIDIA RTX PRO 6000 Blackwell Server Edition"
    assert offers[pro, "on_demand"] == pod(
        instance_type=pro, price_kind="on_demand", price_per_hour=Decimal("1.79"),
        gpu_model="RTXPRO6000", gpu_memory_gib=96.0, available=True,
    )  # fmt: skip
    # displayName "RTX PRO 6000" is the model's alias in the GPU table: every type known
    assert result.gpu_summary().without_facts == []
    # every type's facts are the answer's own: displayName and memoryInGb
    assert result.facts == dict.fromkeys({r.instance_type for r in result.records}, "api")
    # memoryInGb "94": skipped and counted, not guessed
    assert result.skipped_rows == 1 and "'NVIDIA H100 NVL' skipped: memoryInGb is '94'" in (
        caplog.text
    )
    # B200: secureStock {stockStatus: null}: listed, no stock
    assert offers["secure/NVIDIA B200", "on_demand"].available is False


def test_a_users_entry_names_an_unknown_gpu() -> None:
    pro = "secure/NVIDIA RTX PRO 6000 Blackwell Server Edition"
    entry = gpus.TypeOverride("runpod", "RTXPRO6000")
    result = parse(answer(), gpus=gpus.Overrides({pro: entry}))
    offers = by_offer(result)
    secure = offers[pro, "on_demand"]
    assert (secure.gpu_model, secure.gpu_count, secure.gpu_memory_gib) == ("RTXPRO6000", 1, 96)
    assert result.facts[pro] == "config"
    # the entry names the Secure Cloud type only: the Community one keeps the answer's facts
    community = "community/NVIDIA RTX PRO 6000 Blackwell Server Edition"
    assert offers[community, "on_demand"].gpu_model == "RTXPRO6000"
    assert result.facts[community] == "api"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (json.loads((FIXTURES / "error-graphql.json").read_text()), "Something went wrong"),
        ({"data": {}}, "no data.gpuTypes"),
        ([], "no data.gpuTypes"),
    ],
    ids=["graphql-error", "no-types", "list"],
)
def test_a_changed_shape_or_an_error_fails(body: Any, message: str) -> None:
    with pytest.raises(PayloadShapeError, match=rf"^runpod: .*{message}"):
        parse(body)


def test_without_a_key_it_cannot_collect() -> None:
    with pytest.raises(MissingCredentials, match="RUNPOD_API_KEY"):
        collector(credentials={}).check_credentials()


# ---------------------------------------------------------------------------------------------
# fetch: the real requests stack against loopback


@pytest.fixture
def server(tmp_path: Path, replay: Replay) -> ReplayServer:
    spec = json.loads((DEMO / "exchanges.json").read_text())
    spec["exchanges"][0]["match"]["headers"] = {"Authorization": "Bearer rp-key"}
    spec["exchanges"][0]["body_file"] = str(DEMO / "gpu-types.json")
    spec["exchanges"].append(
        {"match": {}, "status": 401, "body_file": str(FIXTURES / "error-401.json")}
    )
    (tmp_path / "exchanges.json").write_text(json.dumps(spec))
    return replay(tmp_path)


def test_fetch_posts_the_query_with_the_key(server: ReplayServer) -> None:
    payloads = collector(endpoint=server.url).fetch()
    assert payloads == {"gpuTypes": recorded()}
    (request,) = server.requests
    assert request.method == "POST" and request.path == "/graphql"
    query = request.json()["query"]
    assert "gpuTypes" in query and "secureSpotPrice" in query and "communitySpotPrice" in query


def test_a_refused_key_names_the_variable(server: ReplayServer) -> None:
    with pytest.raises(FetchError, match=r"^runpod: GPU types: HTTP 401 \(check .*RUNPOD_API_KEY"):
        collector(endpoint=server.url, credentials={"api_key": "wrong"}).fetch()


def test_collect_without_the_key_skips_runpod_naming_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RUNPOD_API_KEY", raising=False)
    result = cli_ok(store_config(tmp_path), "collect", "--provider", "runpod")
    lines = result.output.splitlines()
    assert "runpod skipped: runpod: no credentials; set RUNPOD_API_KEY" in lines, result.output


def test_region_less_offers_are_stored_and_closed_when_gone(
    tmp_path: Path, replay: Replay, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the CLI into a real store: region NULL rows land; a type no
    longer offered closes; a type whose row cannot be read stays open (unconfirmed)."""
    (tmp_path / "types.json").write_text(json.dumps(answer()))
    exchange = {"match": {"method": "POST", "path": "/graphql"}, "body_file": "types.json"}
    server = replay(recording(tmp_path, exchange))
    monkeypatch.setenv("RUNPOD_API_KEY", "rp-key")
    config = store_config(tmp_path, "runpod", server.url)

    def sql(query: str) -> Any:
        return json.loads(cli_ok(config, "sql", query, "--format", "json").output)

    first = cli_ok(config, "collect", "--provider", "runpod")
    assert "GPU not in the GPU table" not in " ".join(first.output.split())
    # 24 recorded + the PRO 6000 (on-demand in both clouds) + the B200 (secure on-demand)
    assert sql("SELECT count(*) AS n FROM latest_prices WHERE region IS NULL") == [{"n": 27}]
    assert sql(
        "SELECT instance_type, price_per_hour FROM latest_prices WHERE gpu_model = 'RTXPRO6000'"
        " ORDER BY ALL"
    ) == [
        {"instance_type": "community/NVIDIA RTX PRO 6000 Blackwell Server Edition",
         "price_per_hour": 1.49},
        {"instance_type": "secure/NVIDIA RTX PRO 6000 Blackwell Server Edition",
         "price_per_hour": 1.79},
    ]  # fmt: skip
    # Next collection: the PRO 6000 is gone, the A6000's row cannot be read.
    body = answer()
    types = body["data"]["gpuTypes"]
    types[:] = [t for t in types if t["displayName"] != "RTX PRO 6000"]
    next(t for t in types if t["displayName"] == "RTX A6000")["memoryInGb"] = None
    (tmp_path / "types.json").write_text(json.dumps(body))
    server.serve(Recording.load(tmp_path))
    cli_ok(config, "collect", "--provider", "runpod")
    assert sql(
        "SELECT count(*) AS n FROM prices WHERE gpu_model = 'RTXPRO6000' AND valid_to IS NOT NULL"
    ) == [{"n": 2}]
    assert sql("SELECT count(*) AS n FROM latest_prices WHERE instance_type LIKE '%RTX A6000'") == [
        {"n": 4}
    ]


def test_fetch_waits_for_retry_after_on_429(
    tmp_path: Path, replay: Replay, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Throttled once with Retry-After: 3, the query is sent again after that wait (asked of
    time.sleep, not waited) and the answer is the recording's."""
    slow_down = json.dumps({"errors": [{"message": "slow down"}]})
    throttled = {"match": {"method": "POST", "path": "/graphql"}, "status": 429, "times": 1,
                 "headers": {"Retry-After": "3"}, "body": slow_down}  # fmt: skip
    answer = {"match": {"method": "POST", "path": "/graphql"},
              "body_file": str(DEMO / "gpu-types.json")}  # fmt: skip
    server = replay(recording(tmp_path, throttled, answer))
    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)
    payloads = collector(endpoint=server.url, max_retries=2).fetch()
    assert payloads == {"gpuTypes": recorded()}
    assert len(server.requests) == 2 and slept == [3]


def test_throttling_that_persists_fails_naming_the_provider(
    tmp_path: Path, replay: Replay, monkeypatch: pytest.MonkeyPatch
) -> None:
    exchange = {"match": {}, "status": 429, "headers": {"Retry-After": "1"}, "body": "{}"}
    server = replay(recording(tmp_path, exchange))
    monkeypatch.setattr(time, "sleep", lambda seconds: None)
    with pytest.raises(FetchError, match=r"^runpod: GPU types: HTTP 429"):
        collector(endpoint=server.url, max_retries=1).fetch()
    assert len(server.requests) == 2
