"""Nebius collector: the official SDK against a gRPC front on loopback replaying the recording
(ProtoJSON answers encoded with the SDK's own classes), the parse of what it fetched with
hand-checked records, the traps, and the SDK's own failures."""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from collectors.base import ParseResult, PriceRecord, ProviderSettings
from collectors.common import FetchError, MissingCredentials, PayloadShapeError
from collectors.nebius import NebiusCollector
from collectors.nebius.loopback import GrpcFront, front
from tests.collectors.support import demo_of, find, fixtures_of, keyed, list_price, recording
from tracker.collecting.replay import Recording, ReplayServer

DEMO = demo_of("nebius")
FIXTURES = fixtures_of("nebius")
NORTH = "project-e00north"


def collector(url: str | None = None, **settings: Any) -> NebiusCollector:
    settings.setdefault("max_retries", 0)
    settings.setdefault("timeout", 10.0)
    settings.setdefault("credentials", {"iam_token": "demo"})
    return NebiusCollector(ProviderSettings(endpoint=url, **settings))


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[ReplayServer, GrpcFront]]:
    server = ReplayServer(Recording.load(DEMO)).start()
    grpc_front = front(server).start()
    yield server, grpc_front
    grpc_front.stop()
    server.stop()


@pytest.fixture(scope="module")
def fetched(served: tuple[ReplayServer, GrpcFront]) -> dict[str, Any]:
    server, grpc_front = served
    payloads = collector(grpc_front.url).fetch()
    assert server.unmatched == []
    return payloads


def with_traps(payloads: dict[str, Any]) -> dict[str, Any]:
    """The fetched answers with the platforms and estimates of tests/fixtures/nebius/traps.json."""
    out = copy.deepcopy(payloads)
    traps = json.loads((FIXTURES / "traps.json").read_text())
    out[f"platforms/{NORTH}/page-1"]["items"] += traps[f"platforms/{NORTH}/page-1"]
    out.update(traps["estimates"])
    return out


def parse(payloads: dict[str, Any], observed_at: datetime, **settings: Any) -> ParseResult:
    return collector(**settings).parse(payloads, observed_at=observed_at)


def offers(result: ParseResult) -> dict[tuple[Any, ...], PriceRecord]:
    return keyed(result, "instance_type", "region", "price_kind")


def test_records_worked_out_by_hand(fetched: dict[str, Any], observed_at: datetime) -> None:
    got = offers(parse(fetched, observed_at))
    # The calculator's "23.600000000" USD an hour for the whole 8-GPU VM; 8 x 80 GB (the
    # platform's gpuMemoryGigabytes), 128 vCPUs, 1600 GiB, as the preset says
    assert got["gpu-h100-sxm/8gpu-128vcpu-1600gb", "eu-north1", "on_demand"] == list_price(
        "nebius",
        region="eu-north1",
        instance_type="gpu-h100-sxm/8gpu-128vcpu-1600gb",
        price_kind="on_demand",
        price_per_hour=Decimal("23.600000"),
        gpu_model="H100",
        gpu_count=8,
        gpu_memory_gib=80,
        vcpus=128,
        memory_gib=1600,
    )
    spot = got["gpu-h100-sxm/8gpu-128vcpu-1600gb", "eu-north1", "spot"]
    assert spot.price_per_hour == Decimal("10")  # the preemptible estimate
    # every digit of "1.553200000" kept
    l40s = got["gpu-l40s-a/1gpu-8vcpu-32gb", "eu-north1", "on_demand"]
    assert (l40s.gpu_model, l40s.gpu_memory_gib, l40s.price_per_hour) == (
        "L40S",
        48,
        Decimal("1.5532"),
    )


def test_every_gpu_preset_and_region(fetched: dict[str, Any], observed_at: datetime) -> None:
    result = parse(fetched, observed_at)
    # eu-north1: H100 x2, H200 x2, L40S x2 presets, each on-demand and spot; us-central1: H200
    # on-demand and spot, B200 on-demand only (no preemptible VMs); cpu-d3 is not a GPU platform
    assert len(result.records) == 6 * 2 + 2 + 1
    assert {r.currency for r in result.records} == {"USD"}
    assert {r.available for r in result.records} == {None} and {r.zone for r in result.records} == {
        None
    }
    assert not find(result, instance_type="gpu-b200-sxm/8gpu-160vcpu-1792gb", price_kind="spot")
    assert result.skipped_rows == 0 and result.unknown_instance_types == set()
    assert set(result.facts.values()) == {"api"}


def test_fetch_asks_each_estimate_once(
    served: tuple[ReplayServer, GrpcFront], fetched: dict[str, Any]
) -> None:
    server, _ = served
    estimates = [r for r in server.requests if r.path.endswith("CalculatorService/Estimate")]
    assert len(estimates) == len([k for k in fetched if k.startswith("estimate/")]) == 15
    assert {r.headers.get("authorization") for r in server.requests} == {"Bearer demo"}


def test_traps(fetched: dict[str, Any], observed_at: datetime, caplog: Any) -> None:
    with caplog.at_level(logging.WARNING, logger="collectors.nebius"):
        result = parse(with_traps(fetched), observed_at)
    # a GPU the table does not know: stored under Nebius' name in capitals
    b300 = find(result, instance_type="gpu-b300-sxm/8gpu-192vcpu-2768gb")
    assert [(r.gpu_model, r.gpu_count, r.gpu_memory_gib, r.price_per_hour) for r in b300] == [
        ("B300", 8, 288, Decimal("70.4"))
    ]
    # "RTX6000" would be the 24 GB Turing card: with 96 GB it is not, so Nebius' own name
    rtx = find(result, instance_type="gpu-rtx6000/1gpu-16vcpu-96gb")
    assert [(r.gpu_model, r.gpu_memory_gib) for r in rtx] == [("rtx6000", 96)]
    assert result.unknown_instance_types == {"gpu-x1/1gpu-8vcpu-32gb"}  # no memory known
    # spot estimated at the on-demand price: no spot record
    l40s = find(result, instance_type="gpu-l40s-d/1gpu-8vcpu-32gb")
    assert [r.price_kind for r in l40s] == ["on_demand"]
    assert result.skipped_rows == 1  # an on-demand estimate without a cost
    assert result.unreadable == {"gpu-l40s-d/2gpu-16vcpu-64gb"}
    messages = [r.getMessage() for r in caplog.records]
    assert any(m.startswith("nebius: gpu-l40s-d/2gpu-16vcpu-64gb skipped:") for m in messages)


def test_configured_regions_restrict(fetched: dict[str, Any], observed_at: datetime) -> None:
    result = parse(fetched, observed_at, regions=("us-central1",))
    assert {r.instance_type for r in result.records} == {
        "gpu-h200-sxm/8gpu-128vcpu-1600gb",
        "gpu-b200-sxm/8gpu-160vcpu-1792gb",
    }


PROJECT = {"items": [{"metadata": {"id": "p"}, "spec": {"region": "eu-north1"}}]}


def test_a_changed_shape_fails_loudly(observed_at: datetime) -> None:
    with pytest.raises(PayloadShapeError, match=r"^nebius: platforms/p/page-1: answer has no"):
        parse({"projects/t/page-1": PROJECT, "platforms/p/page-1": {"items": {}}}, observed_at)


def test_without_credentials_it_names_both_variables() -> None:
    with pytest.raises(MissingCredentials, match="NEBIUS_SERVICE_ACCOUNT_CREDENTIALS"):
        collector(credentials={}).fetch()


@contextmanager
def _refusing(tmp_path: Path) -> Iterator[str]:
    """The URL of a gRPC front whose every answer is the recorded 401."""
    body = (FIXTURES / "error-401.json").read_text()
    exchange = {"match": {}, "content_type": "application/json", "status": 401, "body": body}
    server = ReplayServer(Recording.load(recording(tmp_path, exchange))).start()
    grpc_front = front(server).start()
    try:
        yield grpc_front.url
    finally:
        grpc_front.stop()
        server.stop()


def test_a_refused_token_names_the_variables(tmp_path: Path) -> None:
    refused = r"^nebius: tenants/page-1: UNAUTHENTICATED \(check"
    with _refusing(tmp_path) as url, pytest.raises(FetchError, match=refused):
        collector(url).fetch()


def test_throttling_is_retried_then_answered(tmp_path: Path) -> None:
    throttled = {
        "match": {"path": "/nebius.iam.v2.TenantService/List"},
        "status": 429,
        "body": (FIXTURES / "error-429.txt").read_text(),
        "times": 1,
    }
    spec = json.loads((DEMO / "exchanges.json").read_text())
    folder = tmp_path / "throttled"
    folder.mkdir()
    for path in DEMO.rglob("*.json"):
        target = folder / path.relative_to(DEMO)
        target.parent.mkdir(exist_ok=True)
        target.write_bytes(path.read_bytes())
    (folder / "exchanges.json").write_text(
        json.dumps({"exchanges": [throttled, *spec["exchanges"]]})
    )
    server = ReplayServer(Recording.load(folder)).start()
    grpc_front = front(server).start()
    try:
        payloads = collector(grpc_front.url, max_retries=1).fetch()
    finally:
        grpc_front.stop()
        server.stop()
    tenants = [r for r in server.requests if r.path.endswith("TenantService/List")]
    assert len(tenants) == 2 and "tenants/page-1" in payloads  # RESOURCE_EXHAUSTED retried


def test_a_close_that_times_out_changes_neither_answer_nor_error(
    served: tuple[ReplayServer, GrpcFront],
    fetched: dict[str, Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: Any,
) -> None:
    # The SDK's shutdown waits for requests still held by the server: on a busy machine it can
    # outlast the timeout. That is said in the log; the fetch keeps its answers or its error.
    from nebius.sdk import SDK

    def slow_close(self: SDK, timeout: float | None = None) -> None:
        raise TimeoutError("shutdown did not complete")

    monkeypatch.setattr(SDK, "sync_close", slow_close)
    _, grpc_front = served
    with caplog.at_level(logging.WARNING):
        assert collector(grpc_front.url).fetch() == fetched
    assert "did not close within 10 s" in caplog.text
    refused = r"^nebius: tenants/page-1: UNAUTHENTICATED"
    with _refusing(tmp_path) as url, pytest.raises(FetchError, match=refused):
        collector(url).fetch()
