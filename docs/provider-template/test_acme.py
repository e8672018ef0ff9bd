"""Acme collector: parse on the recording (hand-checked records), fetch through the real
requests stack against the loopback replay server. Copy to tests/collectors/test_acme.py."""

# Until copied, ruff cannot tell collectors.acme is first-party: drop this line in the copy.
# ruff: noqa: I001

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from collectors.acme import AcmeCollector
from collectors.base import ParseResult, ProviderSettings
from collectors.common import FetchError, MissingCredentials, PayloadShapeError
from tests.collectors.support import demo_of, fixtures_of, keyed, list_price, recorded_pages
from tracker.collecting.replay import ReplayServer

DEMO = demo_of("acme")
FIXTURES = fixtures_of("acme")


def collector(**settings: Any) -> AcmeCollector:
    settings.setdefault("max_retries", 0)
    settings.setdefault("credentials", {"api_key": "demo"})
    return AcmeCollector(ProviderSettings(**settings))


def parse(observed_at: datetime, **settings: Any) -> ParseResult:
    return collector(**settings).parse(recorded_pages(DEMO), observed_at=observed_at)


def test_records_worked_out_by_hand(observed_at: datetime) -> None:
    offers = keyed(parse(observed_at), "instance_type", "region", "price_kind")
    # 8 x 2.99 = 23.92 per hour for the whole instance, as the answer says
    assert offers["acme.h100x8", "us-east-1", "on_demand"] == list_price(
        "acme",
        region="us-east-1",
        instance_type="acme.h100x8",
        price_kind="on_demand",
        price_per_hour=Decimal("23.920000"),
        gpu_model="H100",
        gpu_count=8,
        gpu_memory_gib=80,
    )
    assert offers["acme.h100x8", "us-east-1", "spot"].price_per_hour == Decimal("15.60")
    assert ("acme.h100x1", "us-east-1", "spot") not in offers  # null spot: no record


def test_configured_regions_restrict(observed_at: datetime) -> None:
    result = parse(observed_at, regions=("eu-west-1",))
    assert {r.instance_type for r in result.records} == {"acme.l4x1"}


def test_a_changed_shape_fails_loudly(observed_at: datetime) -> None:
    with pytest.raises(PayloadShapeError, match=r"^acme: page-1: answer has no prices list"):
        collector().parse({"page-1": {"items": []}}, observed_at=observed_at)


def test_fetch_without_a_key_names_the_variable() -> None:
    with pytest.raises(MissingCredentials, match="set ACME_API_KEY"):
        AcmeCollector(ProviderSettings()).fetch()


def test_replay_follows_every_page(
    replay: Callable[..., ReplayServer], observed_at: datetime
) -> None:
    server = replay(DEMO)
    fetched = collector(endpoint=server.url).fetch()
    assert server.unmatched == []
    assert fetched == recorded_pages(DEMO)


def test_replay_wrong_key(replay: Callable[..., ReplayServer], tmp_path: Path) -> None:
    server = replay(DEMO)  # the recording answers its own key only
    with pytest.raises(FetchError, match=r"^acme: price list page 1: HTTP 404"):
        collector(endpoint=server.url, credentials={"api_key": "stale"}).fetch()
    assert json.loads((FIXTURES / "error-401.json").read_text())["error"]
