"""AlibabaCollector: the official SDK against the loopback replay server, then parse of what it
fetched.

The fixtures (tests/fixtures/alibaba/README.md) are DescribeInstanceTypes, DescribePrice and
DescribeSpotPriceHistory answers in the ECS wire format, for a China-site (CNY) account asking
cn-hangzhou and ap-southeast-1. The expected numbers below are worked out by hand from the
numbers in those files.
"""

from __future__ import annotations

import copy
import json
import shutil
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any, ClassVar

import pytest

from collectors import REGISTRY, gpus
from collectors.alibaba.collector import GPU_FAMILIES, GPU_REGIONS, AlibabaCollector
from collectors.base import ParseResult, Payloads, PriceRecord, ProviderSettings
from collectors.common import FetchError, PayloadShapeError
from storage.query import query
from storage.store import Store
from tests.collectors.support import (
    demo_of,
    fetch_once,
    find,
    fixtures_of,
    recording,
    signed_settings,
)
from tracker.collecting.pipeline import collect
from tracker.collecting.replay import ReplayServer
from tracker.config import from_dict

KEYS = {"access_key_id": "LTAI5tDemoKeyId", "access_key_secret": "demo-secret"}
REGIONS = ("cn-hangzhou", "ap-southeast-1")
GN7I, GN6I, GN6V = "ecs.gn7i-c8g1.2xlarge", "ecs.gn6i-c4g1.xlarge", "ecs.gn6v-c8g1.16xlarge"
GN7 = "ecs.gn7-c12g1.3xlarge"  # not sold pay-as-you-go in cn-hangzhou
GN8V = "ecs.gn8v.4xlarge"  # test-only: its GPUSpec "NVIDIA H20" is no name the table knows
GN7I_NEW = "ecs.gn7i-c16g1.8xlarge"  # test-only: a type the GPU table does not list
# The one recording, the demo's and these tests'; the error answers and the trap type are kept
# apart (tests/fixtures/alibaba/README.md).
DEMO = demo_of("alibaba")
TEST_ONLY = fixtures_of("alibaba")

Replay = Callable[..., ReplayServer]


class FastRetries(AlibabaCollector):
    """The real collector with millisecond backoff, so retry tests take no time."""

    backoff_ms: ClassVar[int] = 1
    backoff_cap_ms: ClassVar[int] = 5


def make(
    endpoint: str | None,
    *,
    regions: tuple[str, ...] = REGIONS,
    retries: int = 2,
    timeout: float = 2.0,
    window_s: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> AlibabaCollector:
    settings = signed_settings(
        endpoint, KEYS, regions=regions, retries=retries, timeout=timeout, history_window_s=window_s
    )
    return FastRetries(settings, progress)


def answer(action: str, query: dict[str, Any], status: int, body_file: Path, **extra: Any) -> Any:
    """An exchange answering `action` with one of the fixture error bodies."""
    return {
        "match": {"method": "POST", "headers": {"x-acs-action": action}, "query": query},
        "status": status,
        "content_type": "application/json;charset=utf-8",
        "body": body_file.read_text(),
        **extra,
    }


def calls(server: ReplayServer, action: str, **query: str) -> list[dict[str, str]]:
    return [
        r.query
        for r in server.requests
        if r.headers.get("x-acs-action") == action
        and all(r.query.get(k) == v for k, v in query.items())
    ]


@pytest.fixture
def fixtures(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the recording with the test-only answers beside it (answered first: see
    tests/fixtures/alibaba/README.md) and the trap types on the second DescribeInstanceTypes
    page: gn8v.4xlarge (a GPUSpec no table spells) and gn7i-c16g1.8xlarge (not in the table)."""
    return _fixture_folder(tmp_path_factory)


def _fixture_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("alibaba")
    shutil.copytree(DEMO, folder, dirs_exist_ok=True)
    for extra in [*TEST_ONLY.glob("error-*.json"), *TEST_ONLY.glob("price-*.json")]:
        shutil.copy(extra, folder)
    ours = json.loads((TEST_ONLY / "trap-exchanges.json").read_text())["exchanges"]
    recorded = json.loads((folder / "exchanges.json").read_text())["exchanges"]
    (folder / "exchanges.json").write_text(json.dumps({"exchanges": ours + recorded}))
    for name, types in json.loads((TEST_ONLY / "traps.json").read_text()).items():
        page = json.loads((folder / name).read_text())
        page["InstanceTypes"]["InstanceType"] += types
        (folder / name).write_text(json.dumps(page))
    return folder


@pytest.fixture
def served(replay: Replay, fixtures: Path) -> tuple[ReplayServer, Payloads]:
    server = replay(fixtures)
    payloads = make(server.url).fetch()
    assert server.unmatched == []
    return server, payloads


@pytest.fixture(scope="module")
def fetched_once(tmp_path_factory: pytest.TempPathFactory) -> Payloads:
    """One fetch of the fixtures for the tests that only parse it (each a second of CPU)."""
    return fetch_once(make, _fixture_folder(tmp_path_factory))


@pytest.fixture
def fetched(fetched_once: Payloads) -> Payloads:
    return copy.deepcopy(fetched_once)  # a test may change its payloads


@pytest.fixture
def result(fetched: Payloads, observed_at: datetime) -> ParseResult:
    return make(None).parse(fetched, observed_at=observed_at)


def gn7i(**fields: Any) -> PriceRecord:
    """A cn-hangzhou ecs.gn7i-c8g1.2xlarge record: 1 x A10 24 GB, 8 vCPUs and 30 GiB as
    DescribeInstanceTypes says (CpuCoreCount 8, MemorySize 30.0)."""
    base: dict[str, Any] = {
        "provider": "alibaba",
        "region": "cn-hangzhou",
        "zone": None,
        "instance_type": GN7I,
        "term_months": None,
        "payment_option": None,
        "offering_class": None,
        "currency": "CNY",
        "upfront_total": None,
        "gpu_model": "A10",
        "gpu_count": 1,
        "gpu_memory_gib": 24,
        "vcpus": 8.0,
        "memory_gib": 30.0,
    }
    return PriceRecord(**{**base, **fields})


# -- parse, through the real fetch path --------------------------------------------------------


def test_pay_as_you_go_is_the_instance_module_not_the_order_total(result: ParseResult) -> None:
    # price-cn-hangzhou-gn7i-c8g1.2xlarge-Hour-1.json: Price.TradePrice 9.04 is the order
    # (instance 8.984 + system disk 0.056); the instanceType module's TradePrice is 8.984.
    assert find(result, instance_type=GN7I, region="cn-hangzhou", price_kind="on_demand") == [
        gn7i(price_kind="on_demand", price_per_hour=Decimal("8.984000"))
    ]
    assert not find(result, price_per_hour=Decimal("9.04"))


def test_one_year_subscription_in_full(result: ParseResult) -> None:
    # Year-1: the instanceType module's TradePrice 34629.00 (= OriginalPrice 40740.00 -
    # DiscountPrice 6111.00) is the total for the year; 34629 / 8760 h = 3.95308219... -> 3.953082.
    # The order's 35037.00 includes 408.00 of system disk.
    assert find(result, instance_type=GN7I, region="cn-hangzhou", term_months=12) == [
        gn7i(
            price_kind="reserved",
            term_months=12,
            price_per_hour=Decimal("3.953082"),
            upfront_total=Decimal("34629.000000"),
        )
    ]


def test_discount_price_is_the_amount_taken_off(result: ParseResult) -> None:
    # gn6i Year-1: OriginalPrice 17100.00, DiscountPrice 2565.00 (15 % off), TradePrice
    # 14535.00 = 17100 - 2565. 14535 / 8760 = 1.65924657... -> 1.659247. Reading DiscountPrice
    # as the price (Tencent's meaning) would give 2565 / 8760 = 0.292808.
    [record] = find(result, instance_type=GN6I, term_months=12)
    assert record == PriceRecord(
        provider="alibaba",
        region="cn-hangzhou",
        zone=None,
        instance_type=GN6I,
        price_kind="reserved",
        term_months=12,
        payment_option=None,
        offering_class=None,
        currency="CNY",
        price_per_hour=Decimal("1.659247"),
        upfront_total=Decimal("14535.000000"),
        gpu_model="T4",
        gpu_count=1,
        gpu_memory_gib=16,
        vcpus=4.0,
        memory_gib=15.0,
    )
    assert not find(result, price_per_hour=Decimal("0.292808"))


def test_every_subscription_term(result: ParseResult) -> None:
    # Month-1: 3395.00 / 730 h = 4.65068493... -> 4.650685.
    # Month-3 (test-only answer): the instance module's TradePrice 9675.75 (= OriginalPrice
    # 10185.00 - DiscountPrice 509.25) for three months: 9675.75 / (3 x 730 h) = 4.41815068...
    # -> 4.418151. Month-6: 18333.00 (20370.00 - 2037.00) / (6 x 730 h) = 4.18561643... ->
    # 4.185616. Year-3: 61110.00 (122220.00 - 61110.00) / 26280 h = 2.32534246... -> 2.325342.
    terms = {
        r.term_months: (r.price_per_hour, r.upfront_total)
        for r in find(result, instance_type=GN7I, region="cn-hangzhou", price_kind="reserved")
    }
    assert terms == {
        1: (Decimal("4.650685"), Decimal("3395.000000")),
        3: (Decimal("4.418151"), Decimal("9675.750000")),
        6: (Decimal("4.185616"), Decimal("18333.000000")),
        12: (Decimal("3.953082"), Decimal("34629.000000")),
        36: (Decimal("2.325342"), Decimal("61110.000000")),
    }


def test_spot_record_in_full(result: ParseResult) -> None:
    [record] = find(
        result, zone="cn-hangzhou-i", effective_at=datetime(2026, 11, 30, 5, tzinfo=UTC)
    )
    assert record == gn7i(
        zone="cn-hangzhou-i",
        price_kind="spot",
        price_per_hour=Decimal("1.953000"),
        effective_at=datetime(2026, 11, 30, 5, tzinfo=UTC),
    )


def test_spot_history_every_point_of_every_page_once(result: ParseResult) -> None:
    # Two pages (NextOffset 3, then 6) and an empty third; the 04:00 cn-hangzhou-j item is on
    # both pages and is kept once.
    points = sorted(
        (r.zone, r.effective_at.hour if r.effective_at else None, str(r.price_per_hour))
        for r in find(result, instance_type=GN7I, region="cn-hangzhou", price_kind="spot")
    )
    assert points == [
        ("cn-hangzhou-i", 3, "1.797000"),
        ("cn-hangzhou-i", 4, "1.797000"),
        ("cn-hangzhou-i", 5, "1.953000"),
        ("cn-hangzhou-j", 4, "1.612000"),
        ("cn-hangzhou-j", 5, "1.612000"),
    ]


def test_every_expected_offer_and_nothing_else(result: ParseResult) -> None:
    offers = sorted(
        (r.region, r.instance_type, r.price_kind, r.term_months or 0, str(r.price_per_hour))
        for r in result.records
        if r.price_kind != "spot"
    )
    assert offers == [
        # 10.318; 3899 / 730; 39769.80 / 8760; 70182 / 26280
        ("ap-southeast-1", GN7I, "on_demand", 0, "10.318000"),
        ("ap-southeast-1", GN7I, "reserved", 1, "5.341096"),
        ("ap-southeast-1", GN7I, "reserved", 12, "4.539932"),
        ("ap-southeast-1", GN7I, "reserved", 36, "2.670548"),
        # 3.92; 1425 / 730; 14535 / 8760; 25650 / 26280
        ("cn-hangzhou", GN6I, "on_demand", 0, "3.920000"),
        ("cn-hangzhou", GN6I, "reserved", 1, "1.952055"),
        ("cn-hangzhou", GN6I, "reserved", 12, "1.659247"),
        ("cn-hangzhou", GN6I, "reserved", 36, "0.976027"),
        # 26.46; 11476 / 730; 117055.20 / 8760; no 3-year price (PriceNotFound)
        ("cn-hangzhou", GN6V, "on_demand", 0, "26.460000"),
        ("cn-hangzhou", GN6V, "reserved", 1, "15.720548"),
        ("cn-hangzhou", GN6V, "reserved", 12, "13.362466"),
        # refused pay-as-you-go (InvalidInstanceType.ValueNotSupported), sold by the month:
        # 6350 / 730
        ("cn-hangzhou", GN7, "reserved", 1, "8.698630"),
        # not in the GPU table: priced from DescribeInstanceTypes' facts
        ("cn-hangzhou", GN7I_NEW, "on_demand", 0, "12.660000"),
        ("cn-hangzhou", GN7I, "on_demand", 0, "8.984000"),
        ("cn-hangzhou", GN7I, "reserved", 1, "4.650685"),
        ("cn-hangzhou", GN7I, "reserved", 3, "4.418151"),
        ("cn-hangzhou", GN7I, "reserved", 6, "4.185616"),
        ("cn-hangzhou", GN7I, "reserved", 12, "3.953082"),
        ("cn-hangzhou", GN7I, "reserved", 36, "2.325342"),
        # a GPUSpec no table spells: stored, the model unknown
        ("cn-hangzhou", GN8V, "on_demand", 0, "14.200000"),
    ]
    spot = sorted(
        (r.region, r.zone, r.instance_type) for r in result.records if r.price_kind == "spot"
    )
    assert spot == [
        ("ap-southeast-1", "ap-southeast-1a", GN7I),
        *[("cn-hangzhou", "cn-hangzhou-i", GN7I)] * 3,
        *[("cn-hangzhou", "cn-hangzhou-j", GN7I)] * 2,
        ("cn-hangzhou", "cn-hangzhou-k", GN6I),
    ]
    assert {r.currency for r in result.records} == {"CNY"}
    assert result.skipped_rows == 0


def test_a_type_absent_from_the_table_is_priced_from_the_api_facts(result: ParseResult) -> None:
    # traps.json: GPUSpec "NVIDIA A10", GPUAmount 1, GPUMemorySize 24.0, CpuCoreCount 32,
    # MemorySize 128.0; its Hour-1 instance module says 12.66.
    assert gpus.lookup("alibaba", GN7I_NEW) is None
    assert find(result, instance_type=GN7I_NEW) == [
        gn7i(
            instance_type=GN7I_NEW,
            price_kind="on_demand",
            price_per_hour=Decimal("12.660000"),
            vcpus=32.0,
            memory_gib=128.0,
        )
    ]
    assert result.facts[GN7I_NEW] == "api"


def test_an_unknown_gpu_spec_is_stored_under_its_own_name(result: ParseResult) -> None:
    # gn8v.4xlarge: GPUSpec "NVIDIA H30" (no GPU the table knows), 1 GPU of 96 GiB, 16 vCPUs,
    # 96 GiB; Hour-1 14.20. Stored under the API's name and named in the run summary.
    [record] = find(result, instance_type=GN8V)
    assert (record.gpu_model, record.gpu_count, record.gpu_memory_gib) == ("NVIDIA H30", 1, 96)
    assert (record.vcpus, record.memory_gib, record.price_per_hour) == (
        16.0,
        96.0,
        Decimal("14.200000"),
    )
    assert result.unknown_instance_types == set()
    summary = result.gpu_summary()
    assert summary.without_facts == [GN8V]
    # gn6i, gn6v, gn7, gn7i, gn7i-c16g1, gn8v: every one from DescribeInstanceTypes
    assert (summary.priced, summary.from_api) == (6, 6)
    assert set(result.facts.values()) == {"api"}


def test_a_type_refused_pay_as_you_go_is_priced_by_subscription(
    served: tuple[ReplayServer, Payloads], result: ParseResult
) -> None:
    # gn7 in cn-hangzhou: Hour-1 answers InvalidInstanceType.ValueNotSupported; Month-1
    # (test-only answer) prices the instance module at 6350.00: 6350 / 730 = 8.69863013...
    server, fetched = served
    assert fetched[f"cn-hangzhou/price/{GN7}/Hour-1"]["Code"] == (
        "InvalidInstanceType.ValueNotSupported"
    )
    assert [(r.price_kind, r.term_months, r.price_per_hour) for r in find(result, instance_type=GN7)
            ] == [("reserved", 1, Decimal("8.698630"))]  # fmt: skip
    asked = calls(server, "DescribePrice", RegionId="cn-hangzhou", InstanceType=GN7)
    assert len(asked) == 6  # every term, although pay-as-you-go was refused
    assert calls(server, "DescribeSpotPriceHistory", RegionId="cn-hangzhou", InstanceType=GN7)


def test_api_specs_that_contradict_the_gpu_table_win_and_are_logged(
    fetched: Payloads, observed_at: datetime, caplog: pytest.LogCaptureFixture
) -> None:
    page = json.loads(json.dumps(fetched["types/page-1"]))
    gn7i_spec = page["InstanceTypes"]["InstanceType"][0]
    gn7i_spec.update(GPUSpec="NVIDIA A100", GPUMemorySize=40.0)
    result = make(None).parse({**fetched, "types/page-1": page}, observed_at=observed_at)
    assert {(r.gpu_model, r.gpu_memory_gib) for r in find(result, instance_type=GN7I)} == {
        ("A100", 40)
    }
    assert (
        f"alibaba: {GN7I}: the API says 1 x A100 40 GiB, the GPU table 1 x A10 24 GiB; "
        "using the API's" in caplog.messages
    )


def test_a_gpu_type_without_its_memory_or_a_table_entry_is_reported(
    fetched: Payloads, observed_at: datetime
) -> None:
    page = json.loads(json.dumps(fetched["types/page-2"]))
    [new] = [t for t in page["InstanceTypes"]["InstanceType"] if t["InstanceTypeId"] == GN7I_NEW]
    del new["GPUMemorySize"]
    result = make(None).parse({**fetched, "types/page-2": page}, observed_at=observed_at)
    assert result.unknown_instance_types == {GN7I_NEW}
    assert not find(result, instance_type=GN7I_NEW)


def test_the_users_entries_name_the_gpu_and_correct_the_facts(
    fetched: Payloads, observed_at: datetime
) -> None:
    h30 = gpus.GpuModel("H30", "nvidia", 148.0, 44.0, aliases=("NVIDIA H30",))
    mine = gpus.Overrides(
        {GN7I_NEW: gpus.TypeOverride(provider="alibaba", vcpus=30.0)}, {"H30": h30}
    )
    try:
        collector = AlibabaCollector(ProviderSettings(regions=REGIONS, gpus=mine))
        result = collector.parse(fetched, observed_at=observed_at)
    finally:
        gpus.install(None)
    assert {r.gpu_model for r in find(result, instance_type=GN8V)} == {"H30"}
    assert result.facts[GN8V] == "api"
    assert {r.vcpus for r in find(result, instance_type=GN7I_NEW)} == {30.0}
    assert result.facts[GN7I_NEW] == "config"


def test_parse_keeps_only_the_configured_regions(fetched: Payloads, observed_at: datetime) -> None:
    result = make(None, regions=("ap-southeast-1",)).parse(fetched, observed_at=observed_at)
    assert {r.region for r in result.records} == {"ap-southeast-1"}
    assert len(result.records) == 5


def test_payloads_are_json_and_reparse_the_same(
    fetched: Payloads, result: ParseResult, observed_at: datetime
) -> None:
    archived = json.loads(json.dumps(fetched))
    assert archived == fetched
    assert make(None).parse(archived, observed_at=observed_at) == result
    assert list(fetched)[:3] == [
        "types/page-1",
        "types/page-2",
        f"cn-hangzhou/price/{GN6I}/Hour-1",
    ]
    # the "not sold" answers are kept: the record of the run says why nothing was stored
    assert fetched["cn-hangzhou/price/ecs.gn7-c12g1.3xlarge/Hour-1"]["Code"] == (
        "InvalidInstanceType.ValueNotSupported"
    )


def test_currency_comes_from_the_answer(fetched: Payloads, observed_at: datetime) -> None:
    key = f"cn-hangzhou/price/{GN7I}/Hour-1"
    usd = json.loads(json.dumps(fetched[key]))
    usd["PriceInfo"]["Price"]["Currency"] = "USD"
    none = json.loads(json.dumps(fetched[key]))
    del none["PriceInfo"]["Price"]["Currency"]
    collector = make(None)
    [record] = find(collector.parse({**fetched, key: usd}, observed_at=observed_at), zone=None,
                    instance_type=GN7I, region="cn-hangzhou", price_kind="on_demand")  # fmt: skip
    assert record.currency == "USD"
    without = collector.parse({**fetched, key: none}, observed_at=observed_at)
    assert not find(without, instance_type=GN7I, region="cn-hangzhou", price_kind="on_demand")
    assert without.skipped_rows == 1


@pytest.mark.parametrize(
    ("module", "expected"),
    [
        # no TradePrice: OriginalPrice - DiscountPrice, the discount being an amount
        ({"OriginalPrice": 17100.0, "DiscountPrice": 2565.0}, "1.659247"),
        # TradePrice that is not OriginalPrice - DiscountPrice: not understood, not stored
        ({"OriginalPrice": 17100.0, "DiscountPrice": 2565.0, "TradePrice": 2565.0}, None),
        ({"OriginalPrice": 17100.0, "DiscountPrice": 17100.0, "TradePrice": 0.0}, None),
        ({"Resource": "systemDisk"}, None),  # no instance module at all: never the total
    ],
)
def test_instance_module_prices(
    fetched: Payloads, observed_at: datetime, module: dict[str, Any], expected: str | None
) -> None:
    key = f"cn-hangzhou/price/{GN6I}/Year-1"
    body = json.loads(json.dumps(fetched[key]))
    [instance] = [
        m for m in body["PriceInfo"]["Price"]["DetailInfos"]["DetailInfo"]
        if m["Resource"] == "instanceType"
    ]  # fmt: skip
    for name in ("OriginalPrice", "DiscountPrice", "TradePrice"):
        instance.pop(name)
    instance.update(module)
    result = make(None).parse({**fetched, key: body}, observed_at=observed_at)
    found = [str(r.price_per_hour) for r in find(result, instance_type=GN6I, term_months=12)]
    assert found == ([expected] if expected else [])
    assert result.skipped_rows == (0 if expected else 1)


def test_bad_spot_items_are_skipped_and_counted(fetched: Payloads, observed_at: datetime) -> None:
    key = f"ap-southeast-1/spot/{GN7I}/page-1"
    page = json.loads(json.dumps(fetched[key]))
    good = page["SpotPrices"]["SpotPriceType"][0]
    page["SpotPrices"]["SpotPriceType"] += [
        {**good, "SpotPrice": 0},
        {**good, "Timestamp": "yesterday"},
        {**good, "InstanceType": GN6I},
        {**good, "SpotPrice": 1.5},  # a second price for the same zone and moment
    ]
    result = make(None).parse({**fetched, key: page}, observed_at=observed_at)
    [spot] = find(result, region="ap-southeast-1", price_kind="spot")
    assert spot.price_per_hour == Decimal("2.171000")
    assert result.skipped_rows == 4


@pytest.mark.parametrize(
    ("key", "body"),
    [
        ("types/page-1", {"InstanceTypes": []}),
        (f"cn-hangzhou/price/{GN7I}/Hour-1", {"RequestId": "x"}),
        (f"cn-hangzhou/price/{GN7I}/Hour-1", {"PriceInfo": {"Price": {"Currency": "CNY"}}}),
        (f"cn-hangzhou/price/{GN7I}/Week-1", {"PriceInfo": {}}),
        (f"cn-hangzhou/spot/{GN7I}/page-1", {"SpotPrices": []}),
        (f"cn-hangzhou/spot/{GN7I}/page-1", ["not", "an", "answer"]),
        ("cn-hangzhou/ondemand/x", {}),
    ],
)
def test_changed_shape_raises(
    fetched: Payloads, observed_at: datetime, key: str, body: Any
) -> None:
    with pytest.raises(PayloadShapeError, match=f"^alibaba: .*{key.split('/')[0]}"):
        make(None).parse({**fetched, key: body}, observed_at=observed_at)


def test_an_instance_type_without_its_id_is_skipped_and_the_others_stand(
    fetched: Payloads, observed_at: datetime
) -> None:
    good = make(None).parse(fetched, observed_at=observed_at)
    page = fetched["types/page-1"]
    items = [{"GPUAmount": 1}, *page["InstanceTypes"]["InstanceType"]]
    broken = {**fetched, "types/page-1": {**page, "InstanceTypes": {"InstanceType": items}}}
    result = make(None).parse(broken, observed_at=observed_at)
    assert result.records == good.records


def test_without_any_readable_instance_type_the_answer_fails(
    fetched: Payloads, observed_at: datetime
) -> None:
    pages = {
        k: {"InstanceTypes": {"InstanceType": [{"GPUAmount": 1}]}}
        for k in fetched
        if k.startswith("types/")
    }
    with pytest.raises(PayloadShapeError, match=r"^alibaba: types/page-1: an InstanceType without"):
        make(None).parse({**fetched, **pages}, observed_at=observed_at)


def test_without_instance_types_nothing_can_be_placed(observed_at: datetime) -> None:
    with pytest.raises(PayloadShapeError, match="no DescribeInstanceTypes answer"):
        make(None).parse({f"cn-hangzhou/price/{GN7I}/Hour-1": {}}, observed_at=observed_at)


# -- fetch: the requests -----------------------------------------------------------------------


def test_requests_are_signed_and_carry_the_action_in_a_header(
    served: tuple[ReplayServer, Payloads],
) -> None:
    server, _ = served
    for request in server.requests:
        assert request.headers["x-acs-version"] == "2014-05-26"
        assert request.headers["authorization"].startswith(
            f"ACS3-HMAC-SHA256 Credential={KEYS['access_key_id']},"
        )
        assert "Action" not in request.query
    [first, second] = calls(server, "DescribeInstanceTypes")
    families = [v for k, v in sorted(first.items()) if k.startswith("InstanceTypeFamilies.")]
    assert set(families) == set(GPU_FAMILIES)
    assert {"ecs.gn6i", "ecs.gn6v", "ecs.gn6e", "ecs.gn7", "ecs.gn7i", "ecs.gn7e"} <= set(families)
    assert first["MaxResults"] == "100" and "NextToken" not in first
    assert second["NextToken"] == "AAAAAdDWBF2w6Olxc+cMPjUtmE9TeeZJ1fwIIFnCGqaQNgT7"


def test_price_requests_every_term_of_every_gpu_type(
    served: tuple[ReplayServer, Payloads],
) -> None:
    server, _ = served
    asked = calls(server, "DescribePrice", RegionId="cn-hangzhou", InstanceType=GN7I)
    assert [(q["PriceUnit"], q["Period"]) for q in asked] == [
        ("Hour", "1"), ("Month", "1"), ("Month", "3"), ("Month", "6"), ("Year", "1"), ("Year", "3")
    ]  # fmt: skip
    assert {(q["ResourceType"], q["SystemDisk.Category"]) for q in asked} == {
        ("instance", "cloud_essd")
    }
    # 6 GPU types (the table's 4, gn7i-c16g1 and gn8v) x 2 regions x 6 terms, whatever each
    # answer was: a type refused pay-as-you-go is asked for its subscriptions too
    assert len(calls(server, "DescribePrice")) == 72
    # and for spot: one walk per type and region (gn7i in cn-hangzhou takes three pages)
    walks = {(q["RegionId"], q["InstanceType"]) for q in calls(server, "DescribeSpotPriceHistory")}
    assert len(walks) == 12


def test_spot_pages_are_followed_to_the_end(served: tuple[ReplayServer, Payloads]) -> None:
    server, _ = served
    pages = calls(server, "DescribeSpotPriceHistory", RegionId="cn-hangzhou", InstanceType=GN7I)
    assert [q.get("Offset") for q in pages] == [None, "3", "6"]
    assert {(q["NetworkType"], q["OSType"]) for q in pages} == {("vpc", "linux")}


@pytest.mark.parametrize(
    ("window_s", "expected"),
    [
        (None, timedelta(hours=3)),  # the price in force: the API's own 3 h of hourly points
        (5400, timedelta(hours=3)),  # 1.5 x a 1 h interval is less than one point's worth
        (36000, timedelta(hours=10)),
        (90 * 86400, timedelta(days=30)),  # the API refuses more than 30 days
    ],
)
def test_spot_history_window(
    replay: Replay, fixtures: Path, window_s: int | None, expected: timedelta
) -> None:
    server = replay(fixtures)
    make(server.url, regions=("ap-southeast-1",), window_s=window_s).fetch()
    [first, *_] = calls(server, "DescribeSpotPriceHistory")
    start, end = (
        datetime.strptime(first[k], "%Y-%m-%dT%H:%M:%SZ") for k in ("StartTime", "EndTime")
    )
    assert end - start == expected


def test_progress_after_every_answer(replay: Replay, fixtures: Path) -> None:
    server = replay(fixtures)
    seen: list[tuple[int, int]] = []
    make(server.url, regions=("ap-southeast-1",), progress=lambda *a: seen.append(a)).fetch()
    # 2 type pages (3 + 3 types), 6 types x 6 price answers, spot: 2 pages for gn7i (1 + 0
    # items), 1 empty page for each of the 5 others
    assert seen[0] == (1, 3) and seen[1] == (2, 6)
    assert seen[-1] == (45, 7)
    assert [pages for pages, _ in seen] == list(range(1, 46))


def test_defaults() -> None:
    assert AlibabaCollector(ProviderSettings()).regions == GPU_REGIONS
    info = REGISTRY["alibaba"]
    assert info.credential_env == {
        "access_key_id": "ALIBABA_CLOUD_ACCESS_KEY_ID",
        "access_key_secret": "ALIBABA_CLOUD_ACCESS_KEY_SECRET",
    }
    assert info.default_interval == "1h"
    assert {"T4", "V100", "A100", "A10", "L20"} <= {
        g.gpu_model for g in gpus.INSTANCE_GPUS["alibaba"].values()
    }
    # the table holds Alibaba's documented sizes: (GPUs, vCPUs, memory GiB)
    assert gpus.lookup("alibaba", "ecs.gn8is-2x.8xlarge") == gpus.InstanceGpu("L20", 2, 48, 32, 256)
    assert gpus.lookup("alibaba", "ecs.gn6e-c12g1.24xlarge") == gpus.InstanceGpu(
        "V100", 8, 32, 96, 736
    )
    assert gpus.lookup("alibaba", "ecs.gn8v.4xlarge") is None  # GPU not named by Alibaba


# -- fetch: errors -----------------------------------------------------------------------------


def test_auth_error_names_the_credential_variables(
    replay: Replay, fixtures: Path, tmp_path: Path
) -> None:
    refused = answer("DescribeInstanceTypes", {}, 404, fixtures / "error-auth.json")
    server = replay(recording(tmp_path, refused))
    with pytest.raises(FetchError) as err:
        make(server.url).fetch()
    message = str(err.value)
    assert message.startswith("alibaba: DescribeInstanceTypes page 1: InvalidAccessKeyId.NotFound")
    assert "ALIBABA_CLOUD_ACCESS_KEY_ID and ALIBABA_CLOUD_ACCESS_KEY_SECRET" in message
    assert len(server.requests) == 1  # a refused key is not retried


def test_throttling_then_success(replay: Replay, fixtures: Path, tmp_path: Path) -> None:
    query = {"RegionId": "ap-southeast-1", "InstanceType": GN7I, "PriceUnit": "Year"}
    throttled = answer("DescribePrice", query, 400, fixtures / "error-throttling.json", times=2)
    server = replay(recording(tmp_path, throttled), fixtures)
    payloads = make(server.url, regions=("ap-southeast-1",)).fetch()
    assert server.unmatched == []
    year = calls(server, "DescribePrice", InstanceType=GN7I, PriceUnit="Year", Period="1")
    assert len(year) == 3  # throttled twice, answered the third time
    assert payloads[f"ap-southeast-1/price/{GN7I}/Year-1"]["PriceInfo"]["Price"]["Currency"]


def test_retry_after_answer_is_waited_for(replay: Replay, fixtures: Path, tmp_path: Path) -> None:
    # 503 with x-acs-retry-after (ms): the SDK raises ThrottlingException and waits as asked,
    # within the backoff cap; the retried request says how long it waited.
    unavailable = {
        **answer("DescribeSpotPriceHistory", {}, 503, fixtures / "error-throttling.json", times=1),
        "body": json.dumps({"Code": "ServiceUnavailable", "Message": "busy", "RequestId": "r"}),
        "headers": {"x-acs-retry-after": "2"},
    }
    server = replay(recording(tmp_path, unavailable), fixtures)
    make(server.url, regions=("ap-southeast-1",)).fetch()
    assert server.unmatched == []
    spot = [r for r in server.requests if r.headers["x-acs-action"] == "DescribeSpotPriceHistory"]
    # the first spot question (gn6i's) was answered 503; every later one at once
    delays = [r.headers.get("x-acs-retry-delay") for r in spot]
    assert delays[:2] == [None, "2"] and set(delays[2:]) == {None}


def test_throttling_until_it_gives_up(
    replay: Replay, fixtures: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    throttled = answer(
        "DescribePrice", {"PriceUnit": "Month"}, 400, fixtures / "error-throttling.json"
    )
    server = replay(recording(tmp_path, throttled), fixtures)
    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)  # the backoff asked for, not a stopwatch
    with pytest.raises(
        FetchError,
        match=r"^alibaba: DescribePrice cn-hangzhou ecs.gn6i-c4g1.xlarge Month-1: still throttled "
        r"after 4 attempts \(Throttling.User, HTTP 400\): Request was denied",
    ):
        make(server.url, retries=3).fetch()
    assert slept and sum(slept) < 2
    assert len(calls(server, "DescribePrice", PriceUnit="Month")) == 4


def test_a_region_failing_halfway_fails_the_whole_run(
    replay: Replay, fixtures: Path, tmp_path: Path
) -> None:
    # cn-hangzhou answers in full; ap-southeast-1 breaks at its 1-year price: the collection
    # raises, so no payload (and no price) of this run reaches the store.
    query = {"RegionId": "ap-southeast-1", "PriceUnit": "Year", "Period": "1"}
    broken = answer("DescribePrice", query, 500, fixtures / "error-internal.json")
    server = replay(recording(tmp_path, broken), fixtures)
    with pytest.raises(
        FetchError,
        match=rf"^alibaba: DescribePrice ap-southeast-1 {GN6I} Year-1: InternalError \(HTTP 500\)",
    ):
        make(server.url, retries=1).fetch()
    assert len(calls(server, "DescribePrice", **query)) == 2  # 5xx is retried once, then given up
    assert calls(server, "DescribeSpotPriceHistory", RegionId="cn-hangzhou")


def test_a_failed_run_stores_nothing_of_itself(
    replay: Replay, fixtures: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the pipeline and a real store: the good run lands; the broken one is a failed
    run and leaves the prices as they were."""
    monkeypatch.setattr(AlibabaCollector, "backoff_ms", 1)
    monkeypatch.setattr(AlibabaCollector, "backoff_cap_ms", 5)
    env = {"ALIBABA_CLOUD_ACCESS_KEY_ID": "LTAI5tDemoKeyId", "ALIBABA_CLOUD_ACCESS_KEY_SECRET": "x"}
    store = Store(tmp_path / "prices.duckdb")

    def run(server: ReplayServer) -> str:
        provider = {"endpoint": server.url, "regions": list(REGIONS), "timeout": 2}
        config = from_dict({"providers": {"alibaba": provider}}, source=None)
        [outcome] = collect(config, ("alibaba",), env=env, store=store)
        return outcome.status

    assert run(replay(fixtures)) == "ok"
    before = query(store.path, "SELECT * FROM prices ORDER BY ALL").rows
    query_ = {"RegionId": "ap-southeast-1", "PriceUnit": "Year", "Period": "1"}
    broken = answer("DescribePrice", query_, 500, fixtures / "error-internal.json")
    assert run(replay(recording(tmp_path / "broken", broken), fixtures)) == "failed"
    assert query(store.path, "SELECT * FROM prices ORDER BY ALL").rows == before
    runs = query(store.path, "SELECT status, error FROM collection_runs ORDER BY run_id").rows
    assert [r[0] for r in runs] == ["ok", "failed"]
    assert f"DescribePrice ap-southeast-1 {GN6I} Year-1: InternalError" in runs[1][1]


def test_an_endpoint_with_a_path_is_refused() -> None:
    with pytest.raises(FetchError, match="root of its host"):
        make("http://127.0.0.1:9/ecs").fetch()


# -- the offline demo recording ----------------------------------------------------------------


def test_demo_recording_answers_every_request(replay: Replay, observed_at: datetime) -> None:
    meta = json.loads((DEMO / "demo.json").read_text())
    server = replay(DEMO)
    collector = make(server.url, regions=tuple(meta["regions"]))
    result = collector.parse(collector.fetch(), observed_at=observed_at)
    assert server.unmatched == []
    assert len(calls(server, "DescribePrice")) == 48  # as its README counts: 4 types x 6 x 2
    assert result.skipped_rows == 0
    assert result.unknown_instance_types == set()  # the demo warns about nothing of its own
    # as test_every_expected_offer_and_nothing_else lists, without the test-only gn7i-c16g1
    # and gn8v prices
    assert len(result.records) == 25
    kinds = {r.price_kind for r in result.records}
    assert kinds == {"on_demand", "reserved", "spot"}
    assert {r.currency for r in result.records} == {"CNY"}
    assert {r.gpu_model for r in result.records} == {"T4", "A10", "V100", "A100"}
    assert set(result.facts.values()) == {"api"}


def _disk_refused(**query: str) -> dict[str, Any]:
    # The code is the one other DescribePrice clients handle the same way (retry with another
    # disk category); the status and message are invented.
    body = {
        "Code": "InvalidSystemDiskCategory.ValueNotSupported",
        "Message": "The specified parameter 'SystemDisk.Category' is not supported.",
        "RequestId": "7C1F9E1A-disk",
    }
    return {
        "match": {"method": "POST", "headers": {"x-acs-action": "DescribePrice"}, "query": query},
        "status": 403,
        "content_type": "application/json;charset=utf-8",
        "body": json.dumps(body),
    }


def test_a_refused_system_disk_is_asked_again_with_the_next_category(
    replay: Replay, fixtures: Path, tmp_path: Path, observed_at: datetime
) -> None:
    refused = _disk_refused(InstanceType=GN6V, **{"SystemDisk.Category": "cloud_essd"})
    server = replay(recording(tmp_path, refused), fixtures)
    payloads = make(server.url, regions=("cn-hangzhou",)).fetch()
    assert server.unmatched == []
    hour = calls(server, "DescribePrice", InstanceType=GN6V, PriceUnit="Hour")
    assert [q["SystemDisk.Category"] for q in hour] == ["cloud_essd", "cloud_ssd"]
    # The instance module's price is what the fixture says, whatever disk the quote carried.
    baseline = make(None, regions=("cn-hangzhou",))
    got = find(baseline.parse(payloads, observed_at=observed_at), instance_type=GN6V)
    assert {r.price_kind for r in got} >= {"on_demand", "reserved"}


def test_a_type_refusing_every_system_disk_fails_the_run(
    replay: Replay, fixtures: Path, tmp_path: Path
) -> None:
    server = replay(recording(tmp_path, _disk_refused(InstanceType=GN6V)), fixtures)
    with pytest.raises(FetchError, match=r"DescribePrice cn-hangzhou ecs.gn6v-c8g1.16xlarge "
                       r"Hour-1: no system disk category accepted"):  # fmt: skip
        make(server.url, regions=("cn-hangzhou",)).fetch()


def _edited_fixtures(fixtures: Path, tmp_path: Path, name: str, **changes: Any) -> Path:
    copy = tmp_path / "edited"
    shutil.copytree(fixtures, copy)
    body = json.loads((copy / name).read_text())
    body.update(changes)
    (copy / name).write_text(json.dumps(body))
    return copy


def test_a_next_offset_given_as_a_string_is_still_followed(
    replay: Replay, fixtures: Path, tmp_path: Path
) -> None:
    edited = _edited_fixtures(
        fixtures, tmp_path, "spot-cn-hangzhou-gn7i-page1.json", NextOffset="3"
    )
    server = replay(edited)
    payloads = make(server.url, regions=("cn-hangzhou",)).fetch()
    assert f"cn-hangzhou/spot/{GN7I}/page-2" in payloads


def test_a_next_token_that_does_not_move_fails_loudly(
    replay: Replay, fixtures: Path, tmp_path: Path
) -> None:
    token = json.loads((fixtures / "types-page1.json").read_text())["NextToken"]
    server = replay(_edited_fixtures(fixtures, tmp_path, "types-page2.json", NextToken=token))
    with pytest.raises(PayloadShapeError, match="page 2: NextToken did not move"):
        make(server.url).fetch()
