"""Vultr collector: parse on the demo's recording of `/v2/plans?type=vcg` (two pages) and
`/v2/plans-metal` (the traps of tests/fixtures/vultr/traps.json laid over it), fetch through
the real requests stack against a loopback server (cursor paging, totals, retries, failures)."""

from __future__ import annotations

import copy
import json
import logging
import time
from collections.abc import Callable
from datetime import datetime
from decimal import Decimal
from typing import Any

import pytest

from collectors import gpus
from collectors.base import ParseResult, PriceRecord, ProviderSettings
from collectors.common import FetchError, PayloadShapeError
from collectors.vultr.collector import VultrCollector
from tests.collectors.support import demo_of, fixtures_of, keyed, list_price
from tracker.collecting.replay import Exchange, ReplayServer

DEMO = demo_of("vultr")
FIXTURES = fixtures_of("vultr")


def recorded() -> dict[str, Any]:
    """The payloads fetch returns for the demo recording."""
    files = {
        "plans/page-1": "plans-page1.json",
        "plans/page-2": "plans-page2.json",
        "plans-metal/page-1": "plans-metal.json",
    }
    return {key: json.loads((DEMO / name).read_text()) for key, name in files.items()}


def with_traps() -> dict[str, Any]:
    payloads = recorded()
    traps = json.loads((FIXTURES / "traps.json").read_text())
    payloads["plans/page-2"]["plans"] += traps["plans"]
    payloads["plans-metal/page-1"]["plans_metal"] += traps["plans-metal"]
    return payloads


def collector(**settings: Any) -> VultrCollector:
    settings.setdefault("max_retries", 2)
    return VultrCollector(ProviderSettings(**settings))


def parse(payloads: dict[str, Any], observed_at: datetime, **settings: Any) -> ParseResult:
    return collector(**settings).parse(payloads, observed_at=observed_at)


def by_offer(result: ParseResult) -> dict[tuple[Any, ...], PriceRecord]:
    return keyed(result, "instance_type", "region", "price_kind")


def vultr_record(**fields: Any) -> PriceRecord:
    return list_price("vultr", **{"effective_at": None, "available": True, **fields})


# ---------------------------------------------------------------------------------------------
# parse


def test_records_in_full(observed_at: datetime) -> None:
    offers = by_offer(parse(recorded(), observed_at))
    # A slice: gpu_vram_gb 4 of one 80 GB A100 = 4 / 80 = 0.05 GPU, the whole GPU's 80 GB.
    # hourly_cost 0.123 as given (monthly 90 / 730 = 0.123288 would be wrong). ram 6144 MB =
    # 6144 / 1024 = 6 GiB.
    assert offers["vcg-a100-1c-6g-4vram", "ewr", "on_demand"] == vultr_record(
        region="ewr",
        instance_type="vcg-a100-1c-6g-4vram",
        price_kind="on_demand",
        price_per_hour=Decimal("0.123000"),
        gpu_model="A100",
        gpu_count=0.05,
        gpu_memory_gib=80,
        vcpus=1,
        memory_gib=6,
    )
    # Bare metal names no GPU: 8 x H100 80 GB from the table. hourly_cost 23.92 (monthly
    # 16074.24 is 672 h of it; / 730 would give 22.019507); hourly_cost_preemptible 18.4 is
    # spot. cpu_threads 224; ram 2097152 MB / 1024 = 2048 GiB.
    h100 = {
        "region": "sea",
        "instance_type": "vbm-112c-2048gb-8-h100-gpu",
        "gpu_model": "H100",
        "gpu_count": 8,
        "gpu_memory_gib": 80,
        "vcpus": 224,
        "memory_gib": 2048,
    }
    assert offers["vbm-112c-2048gb-8-h100-gpu", "sea", "on_demand"] == vultr_record(
        **h100, price_kind="on_demand", price_per_hour=Decimal("23.920000")
    )
    assert offers["vbm-112c-2048gb-8-h100-gpu", "sea", "spot"] == vultr_record(
        **h100, price_kind="spot", price_per_hour=Decimal("18.400000")
    )
    # 160 GB of VRAM = 160 / 80 = 2 whole A100s.
    two = offers["vcg-a100-24c-240g-160vram", "ord", "on_demand"]
    assert (two.gpu_count, two.gpu_memory_gib, two.price_per_hour) == (2, 80, Decimal("4.794"))


def test_every_offer_and_price(observed_at: datetime) -> None:
    result = parse(recorded(), observed_at)
    prices = {k: r.price_per_hour for k, r in by_offer(result).items()}
    assert prices == {
        ("vcg-a100-1c-6g-4vram", "ewr", "on_demand"): Decimal("0.123"),
        ("vcg-a100-12c-120g-80vram", "ewr", "on_demand"): Decimal("2.397"),
        ("vcg-a100-24c-240g-160vram", "ewr", "on_demand"): Decimal("4.794"),
        ("vcg-a100-24c-240g-160vram", "ord", "on_demand"): Decimal("4.794"),
        ("vcg-l40s-16c-180g-48vram", "ewr", "on_demand"): Decimal("1.671"),
        ("vcg-l40s-16c-180g-48vram", "lax", "on_demand"): Decimal("1.671"),
        ("vcg-l40s-16c-180g-48vram", "ord", "on_demand"): Decimal("1.671"),
        ("vbm-112c-2048gb-8-h100-gpu", "sea", "on_demand"): Decimal("23.92"),
        ("vbm-112c-2048gb-8-h100-gpu", "sea", "spot"): Decimal("18.4"),
        ("vbm-256c-2048gb-8-mi300x-gpu", "ord", "on_demand"): Decimal("17.52"),
        ("vbm-256c-2048gb-8-mi300x-gpu", "ord", "spot"): Decimal("14.72"),
        ("vbm-256c-2048gb-8-mi300x-gpu", "sea", "on_demand"): Decimal("17.52"),
        ("vbm-256c-2048gb-8-mi300x-gpu", "sea", "spot"): Decimal("14.72"),
        # Lists no location: its price kept once, in no region, sold out.
        ("vcg-a100-6c-60g-40vram", None, "on_demand"): Decimal("1.199"),
    }
    # The CPU bare-metal plan vbm-4c-32gb makes none.
    assert {r.available for r in result.records if r.region is None} == {False}
    assert {r.available for r in result.records if r.region is not None} == {True}
    assert result.sold_out == set()
    assert result.skipped_rows == 0 and result.unknown_instance_types == set()


def test_configured_regions_restrict(observed_at: datetime) -> None:
    # Plans listed only elsewhere make no record (their offers here close); the plan in no
    # location keeps its price in no region, sold out, whatever locations are asked: the store
    # looks for an offer of no region in every collection.
    result = parse(recorded(), observed_at, regions=("ord",))
    assert {r.region for r in result.records} == {"ord", None}
    [nowhere] = [r for r in result.records if r.region is None]
    assert (nowhere.instance_type, nowhere.available) == ("vcg-a100-6c-60g-40vram", False)
    assert result.sold_out == {
        "vcg-a100-1c-6g-4vram",
        "vcg-a100-12c-120g-80vram",
        "vbm-112c-2048gb-8-h100-gpu",
    }


def test_traps(observed_at: datetime, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        result = parse(with_traps(), observed_at)
    offers = by_offer(result)
    plans = {r.instance_type for r in result.records}
    assert "vc2-1c-1gb" not in plans  # a CPU plan in the type=vcg answer: ignored
    # An A40 slice: 16 of 48 GB = a third of one A40.
    a40 = offers["vcg-a40-4c-20g-16vram", "ewr", "on_demand"]
    assert (a40.gpu_model, a40.gpu_count, a40.gpu_memory_gib) == ("A40", 16 / 48, 48)
    # Unknown GPU (gpu_type NVIDIA_B200) and a bare-metal GPU plan the table lacks: reported.
    assert result.unknown_instance_types == {
        "vcg-b200-32c-512g-180vram",
        "vbm-128c-3072gb-8-b300-gpu",
    }
    # A plan priced 0 is never stored: skipped, its offers unconfirmed rather than withdrawn.
    assert result.unreadable == {"vcg-a100-3c-30g-20vram"} and result.skipped_rows == 1
    assert "vultr: vcg-a100-3c-30g-20vram skipped: hourly_cost is 0" in caplog.text
    # GH200 bare metal lists no location: one record, region NULL, sold out; no spot price.
    gh200 = [r for r in result.records if r.instance_type == "vbm-72c-480gb-gh200-gpu"]
    assert [(r.region, r.price_kind, r.price_per_hour, r.available) for r in gh200] == [
        (None, "on_demand", Decimal("3.36"), False)
    ]
    assert result.sold_out == set()


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"hourly_cost": None}, "hourly_cost is None"),
        ({"hourly_cost": "2.397"}, "hourly_cost is '2.397'"),
        ({"hourly_cost": -1}, "hourly_cost is -1"),
        ({"locations": "ewr"}, "locations is 'ewr'"),
        ({"locations": ["ewr", 3]}, "locations is"),
    ],
)
def test_plans_not_understood_are_skipped(
    observed_at: datetime, caplog: pytest.LogCaptureFixture, change: Any, reason: str
) -> None:
    payloads = recorded()
    payloads["plans/page-1"]["plans"][1].update(change)  # vcg-a100-12c-120g-80vram
    with caplog.at_level(logging.WARNING):
        result = parse(payloads, observed_at)
    assert result.unreadable == {"vcg-a100-12c-120g-80vram"} and result.skipped_rows == 1
    assert reason in caplog.text


def test_a_preemptible_price_not_below_on_demand_is_refused(observed_at: datetime) -> None:
    payloads = recorded()
    payloads["plans-metal/page-1"]["plans_metal"][1]["hourly_cost_preemptible"] = 23.92
    result = parse(payloads, observed_at)
    assert result.unreadable == {"vbm-112c-2048gb-8-h100-gpu"}


def test_facts_are_the_answers_for_cloud_plans_the_tables_for_bare_metal(
    observed_at: datetime,
) -> None:
    result = parse(recorded(), observed_at)
    assert result.facts == {
        **dict.fromkeys({r.instance_type for r in result.records if r.instance_type[:4] == "vcg-"},
                        "api"),
        **dict.fromkeys({r.instance_type for r in result.records if r.instance_type[:4] == "vbm-"},
                        "table"),
    }  # fmt: skip
    assert len(result.facts) == 7


def test_a_users_model_with_the_spelling_places_an_unknown_gpu_type(
    observed_at: datetime,
) -> None:
    """NVIDIA_B200 is no spelling the table knows, and without one GPU's memory the plan's
    180 GB of VRAM gives no count: reported. A [gpus.models] entry naming the spelling and the
    memory places it, as the API's facts (one 180 GB B200)."""
    b200 = gpus.parse_model(
        "B200",
        {"aliases": ["NVIDIA_B200"], "memory_gib": [180]},
        "gpus.models.B200.",
        base=gpus.GPU_MODELS["B200"],
    )
    result = parse(with_traps(), observed_at, gpus=gpus.Overrides(models={"B200": b200}))
    assert by_offer(result)["vcg-b200-32c-512g-180vram", "ewr", "on_demand"] == vultr_record(
        region="ewr",
        instance_type="vcg-b200-32c-512g-180vram",
        price_kind="on_demand",
        price_per_hour=Decimal("5.479"),
        gpu_model="B200",
        gpu_count=1,  # 180 GB of VRAM / 180 GB of one B200
        gpu_memory_gib=180,
        vcpus=32,
        memory_gib=512,  # 524288 MB / 1024
    )
    assert result.facts["vcg-b200-32c-512g-180vram"] == "api"
    assert result.unknown_instance_types == {"vbm-128c-3072gb-8-b300-gpu"}


def test_a_users_entry_places_a_bare_metal_plan_the_table_lacks(observed_at: datetime) -> None:
    entry = gpus.TypeOverride("vultr", None, 8, 288)  # 8 GPUs of 288 GB, the model unknown
    overrides = gpus.Overrides(instance_types={"vbm-128c-3072gb-8-b300-gpu": entry})
    result = parse(with_traps(), observed_at, gpus=overrides)
    offers = by_offer(result)
    b300 = offers["vbm-128c-3072gb-8-b300-gpu", "sea", "on_demand"]
    assert (b300.gpu_model, b300.gpu_count, b300.gpu_memory_gib) == (None, 8, 288)
    assert (b300.price_per_hour, b300.vcpus, b300.memory_gib) == (Decimal("40"), 256, 3072)
    spot = offers["vbm-128c-3072gb-8-b300-gpu", "sea", "spot"]
    assert spot.price_per_hour == Decimal("30")  # hourly_cost_preemptible
    assert result.facts["vbm-128c-3072gb-8-b300-gpu"] == "config"
    assert result.gpu_summary().without_facts == [
        "vbm-128c-3072gb-8-b300-gpu",  # stored, gpu_model NULL
        "vcg-b200-32c-512g-180vram",  # not stored: no count
    ]


def test_vram_that_is_no_whole_number_of_gpus_is_reported(observed_at: datetime) -> None:
    payloads = recorded()
    payloads["plans/page-1"]["plans"][2]["gpu_vram_gb"] = 120  # 1.5 A100s
    result = parse(payloads, observed_at)
    assert result.unknown_instance_types == {"vcg-a100-24c-240g-160vram"}


def test_a_plan_on_two_pages_is_stored_once(observed_at: datetime) -> None:
    payloads = recorded()
    payloads["plans/page-2"]["plans"].append(copy.deepcopy(payloads["plans/page-1"]["plans"][0]))
    result = parse(payloads, observed_at)
    assert result.skipped_rows == 1
    assert result.records == parse(recorded(), observed_at).records


def test_bare_metal_under_the_specs_key_is_read_the_same(observed_at: datetime) -> None:
    """Vultr's spec names the bare-metal list `plans`, the live answer `plans_metal`."""
    payloads = recorded()
    metal = payloads["plans-metal/page-1"]
    payloads["plans-metal/page-1"] = {"plans": metal.pop("plans_metal"), **metal}
    assert parse(payloads, observed_at).records == parse(recorded(), observed_at).records


def test_decimal_and_float_json_give_the_same_records(observed_at: datetime) -> None:
    exact = {k: json.loads(json.dumps(v), parse_float=Decimal) for k, v in recorded().items()}
    assert parse(exact, observed_at).records == parse(recorded(), observed_at).records


@pytest.mark.parametrize("key", ["plans/page-1", "plans-metal/page-1"])
def test_a_changed_shape_fails_loudly(observed_at: datetime, key: str) -> None:
    payloads = recorded()
    payloads[key] = {"error": "Invalid API token.", "status": 401}
    with pytest.raises(PayloadShapeError, match=rf"^vultr: {key}: answer has no plan list") as e:
        parse(payloads, observed_at)
    assert "(the answer is an error: 'Invalid API token.')" in str(e.value)


def test_nothing_readable_fails_loudly(observed_at: datetime) -> None:
    payloads = recorded()
    for page in ("plans/page-1", "plans/page-2"):
        for plan in payloads[page]["plans"]:
            plan["hourly_cost"] = "n/a"
    for plan in payloads["plans-metal/page-1"]["plans_metal"]:
        plan["hourly_cost"] = "n/a"
    with pytest.raises(PayloadShapeError, match="none of the 7 GPU plans could be read"):
        parse(payloads, observed_at)


# ---------------------------------------------------------------------------------------------
# fetch through the real urllib3 stack (loopback replay server)


def reply(path: str, body: Any, cursor: str | None = None, **kw: Any) -> Exchange:
    text = json.dumps(body) if body is not None else "busy"
    match = {"method": "GET", "path": path, "query": {"cursor": cursor}}
    return Exchange(match=match, body=text.encode(), **kw)


def metal(plans: list[Any], total: int | None = None) -> Any:
    return {"plans_metal": plans, "meta": {"total": len(plans) if total is None else total}}


def test_demo_recording_fetch_then_parse(
    replay: Callable[..., ReplayServer], observed_at: datetime
) -> None:
    server = replay(DEMO)
    progress: list[tuple[int, int]] = []
    vultr = VultrCollector(
        ProviderSettings(endpoint=server.url), lambda pages, plans: progress.append((pages, plans))
    )
    fetched = vultr.fetch()
    assert server.unmatched == [] and fetched == recorded()
    assert progress == [(1, 3), (2, 5), (3, 8)]  # pages and plans so far, over both lists
    cursor = recorded()["plans/page-1"]["meta"]["links"]["next"]
    assert [(r.path, r.query) for r in server.requests] == [
        ("/v2/plans", {"type": "vcg", "per_page": "500"}),
        ("/v2/plans", {"type": "vcg", "per_page": "500", "cursor": cursor}),
        ("/v2/plans-metal", {"per_page": "500"}),
    ]
    assert (
        vultr.parse(fetched, observed_at=observed_at).records
        == parse(recorded(), observed_at).records
    )


def test_fewer_plans_than_the_total_fail_the_run(serve: Callable[..., ReplayServer]) -> None:
    page = recorded()["plans/page-2"]  # the last page alone: 2 plans, meta.total 5
    server = serve(reply("/v2/plans", page), reply("/v2/plans-metal", metal([])))
    with pytest.raises(FetchError, match=r"^vultr: plans: the 1 pages hold 2 plans but .* 5"):
        collector(endpoint=server.url).fetch()


def test_a_page_that_fails_halfway_fails_the_run(
    serve: Callable[..., ReplayServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    first = recorded()["plans/page-1"]
    cursor = first["meta"]["links"]["next"]
    server = serve(reply("/v2/plans", first), reply("/v2/plans", None, cursor=cursor, status=502))
    monkeypatch.setattr(time, "sleep", lambda seconds: None)
    with pytest.raises(FetchError, match=r"^vultr: plans/page-2: HTTP 502: busy"):
        collector(endpoint=server.url, max_retries=1).fetch()
    assert [r.query.get("cursor") for r in server.requests] == [None, cursor, cursor]


def test_429_waits_for_retry_after(
    serve: Callable[..., ReplayServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    limited = {"error": "Rate limit reached - please try your request again later.", "status": 429}
    empty = {"plans": [], "meta": {"total": 0, "links": {"next": "", "prev": ""}}}
    server = serve(
        reply("/v2/plans", limited, status=429, headers={"Retry-After": "3"}, times=1),
        reply("/v2/plans", empty),
        reply("/v2/plans-metal", metal([])),
    )
    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)  # the wait asked for, not waited
    assert collector(endpoint=server.url).fetch()["plans/page-1"] == empty
    assert slept == [3]


def test_a_cursor_that_never_ends_is_given_up(serve: Callable[..., ReplayServer]) -> None:
    looping = {"plans": [], "meta": {"total": 0, "links": {"next": "again"}}}
    server = serve(reply("/v2/plans", looping), reply("/v2/plans", looping, cursor="again"))
    with pytest.raises(PayloadShapeError, match=r"^vultr: plans: more than 100 pages"):
        collector(endpoint=server.url).fetch()
