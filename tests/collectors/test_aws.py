"""AwsCollector: boto3 against the loopback replay server, then parse of what it fetched.

The fixtures (tests/fixtures/aws/README.md) are recorded-format Price List and EC2 answers; the
expected numbers below are worked out by hand from the API strings in those files.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from datetime import UTC, datetime
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from collectors.aws.collector import GPU_REGIONS, AwsCollector
from collectors.base import ParseResult, Payloads, PriceRecord, ProviderSettings
from collectors.common import FetchError, MissingCredentials, PayloadShapeError
from tests.collectors.support import (
    demo_of,
    fetch_once,
    find,
    fixtures_of,
    recording,
    signed_settings,
)
from tracker.collecting.replay import ReplayServer

KEYS = {"aws_access_key_id": "x", "aws_secret_access_key": "x"}
TYPES = ["p4d.24xlarge", "g4dn.xlarge", "p5.48xlarge", "p3.2xlarge", "g5g.xlarge"]
REGIONS = ("us-east-1", "us-west-2")
# The one recording, the demo's and these tests' (its README says what each answer exercises),
# and the answer kept apart because the type is one the GPU table does not know.
DEMO = demo_of("aws")
TRAPS = fixtures_of("aws")
GET_PRODUCTS = {"X-Amz-Target": "AWSPriceListService.GetProducts"}
INTERNAL_ERROR = {"__type": "InternalErrorException", "Message": "An internal error occurred"}
EC2_THROTTLED = (
    '<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error>'
    "<Code>RequestLimitExceeded</Code><Message>Request limit exceeded.</Message>"
    "</Error></Errors><RequestID>0f2bc2bd-4e2d-4f16-9b3a-3c8bd1a3e0f1</RequestID></Response>"
)

Replay = Callable[..., ReplayServer]


def make(
    endpoint: str | None,
    *,
    regions: tuple[str, ...] = REGIONS,
    types: list[str] | None = TYPES,
    retries: int = 1,
    timeout: float = 2.0,
    options: dict[str, Any] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> AwsCollector:
    options = dict(options or {})
    if types:
        options["instance_types"] = types
    settings = signed_settings(
        endpoint, KEYS, regions=regions, retries=retries, timeout=timeout, options=options
    )
    return AwsCollector(settings, progress)


def six(value: Decimal) -> Decimal:
    return value.quantize(Decimal("0.000001"), rounding=ROUND_HALF_EVEN)


def page_file(name: str) -> Any:
    return json.loads((DEMO / name).read_text())


def answers(tmp_path: Path) -> tuple[Path, Path]:
    """The folders `replay` serves for the tests: the trap exchanges (g5g.xlarge, a type the GPU
    table does not know), then the recording."""
    folder = tmp_path / "traps"
    folder.mkdir(exist_ok=True)
    spec = json.loads((TRAPS / "traps.json").read_text())
    for exchange in spec["exchanges"]:
        exchange["body_file"] = str(TRAPS / exchange["body_file"])
    (folder / "exchanges.json").write_text(json.dumps(spec))
    return folder, DEMO


def pricing_answer(
    status: int, body: dict[str, Any], *, match: dict[str, Any] | None = None, **extra: Any
) -> dict[str, Any]:
    return {
        "match": {"method": "POST", "headers": GET_PRODUCTS, **(match or {})},
        "status": status,
        "content_type": "application/x-amz-json-1.1",
        "body": json.dumps(body),
        **extra,
    }


def ec2_throttled(region: str, **extra: Any) -> dict[str, Any]:
    return {
        "match": {
            "method": "POST",
            "form": {"Action": "DescribeSpotPriceHistory"},
            "region": region,
        },
        "status": 503,
        "content_type": "text/xml;charset=UTF-8",
        "body": EC2_THROTTLED,
        **extra,
    }


@pytest.fixture(scope="module")
def fetched_once(tmp_path_factory: pytest.TempPathFactory) -> Payloads:
    """One fetch for the tests that only parse it (boto3's clients cost a second of CPU)."""
    return fetch_once(make, *answers(tmp_path_factory.mktemp("aws")))


@pytest.fixture
def fetched(fetched_once: Payloads) -> Payloads:
    return copy.deepcopy(fetched_once)  # a test may change its payloads


@pytest.fixture
def result(fetched: Payloads, observed_at: datetime) -> ParseResult:
    return make(None).parse(fetched, observed_at=observed_at)


# -- parse, through the real fetch path --------------------------------------------------------


def test_reserved_partial_upfront_1yr_in_full(result: ParseResult) -> None:
    # 1382 upfront over 8760 h plus the 0.158/h recurring part: AWS publishes 0.315763.
    expected = six(Decimal("0.158") + Decimal("1382") / 8760)
    assert expected == Decimal("0.315763")
    assert find(
        result, instance_type="g4dn.xlarge", payment_option="partial_upfront", term_months=12
    ) == [
        PriceRecord(
            provider="aws",
            region="us-east-1",
            zone=None,
            instance_type="g4dn.xlarge",
            price_kind="reserved",
            term_months=12,
            payment_option="partial_upfront",
            offering_class="standard",
            currency="USD",
            price_per_hour=expected,
            upfront_total=Decimal("1382"),
            gpu_model="T4",
            gpu_count=1,
            gpu_memory_gib=16,
            vcpus=4.0,
            memory_gib=16.0,
            effective_at=None,
        )
    ]


def test_reserved_all_upfront_3yr_in_full(result: ParseResult) -> None:
    # All Upfront: the Hrs dimension is 0.0000000000 and the whole price is the Upfront Fee.
    expected = six(Decimal("5198") / 26280)
    assert expected == Decimal("0.197793")
    [record] = find(
        result, instance_type="g4dn.xlarge", payment_option="all_upfront", term_months=36
    )
    assert record == PriceRecord(
        provider="aws",
        region="us-east-1",
        zone=None,
        instance_type="g4dn.xlarge",
        price_kind="reserved",
        term_months=36,
        payment_option="all_upfront",
        offering_class="standard",
        currency="USD",
        price_per_hour=expected,
        upfront_total=Decimal("5198"),
        gpu_model="T4",
        gpu_count=1,
        gpu_memory_gib=16,
        vcpus=4.0,
        memory_gib=16.0,
    )


def test_on_demand_p4d_in_full(result: ParseResult) -> None:
    [record] = find(
        result, instance_type="p4d.24xlarge", region="us-east-1", price_kind="on_demand"
    )
    assert record == PriceRecord(
        provider="aws",
        region="us-east-1",
        zone=None,
        instance_type="p4d.24xlarge",
        price_kind="on_demand",
        term_months=None,
        payment_option=None,
        offering_class=None,
        currency="USD",
        price_per_hour=Decimal("21.957642"),
        upfront_total=None,
        gpu_model="A100",
        gpu_count=8,
        gpu_memory_gib=40,
        vcpus=96.0,
        memory_gib=1152.0,
        effective_at=None,
    )


def test_spot_record_in_full_keyed_by_zone_id(result: ParseResult) -> None:
    # The same item is on both spot pages; it is kept once.
    [record] = find(result, price_kind="spot", zone="use1-az6")
    assert record == PriceRecord(
        provider="aws",
        region="us-east-1",
        zone="use1-az6",
        instance_type="p4d.24xlarge",
        price_kind="spot",
        term_months=None,
        payment_option=None,
        offering_class=None,
        currency="USD",
        price_per_hour=Decimal("8.0468"),
        upfront_total=None,
        gpu_model="A100",
        gpu_count=8,
        gpu_memory_gib=40,
        vcpus=96.0,  # spot answers have no host size: taken from the price list
        memory_gib=1152.0,
        effective_at=datetime(2026, 11, 30, 3, 17, 41, tzinfo=UTC),
    )


def test_spot_without_zone_id_uses_zone_name(result: ParseResult) -> None:
    [record] = find(result, price_kind="spot", zone="us-east-1b")
    assert (record.instance_type, record.price_per_hour) == ("p4d.24xlarge", Decimal("9.1506"))
    assert record.effective_at == datetime(2026, 11, 29, 22, 5, 12, tzinfo=UTC)


def test_spot_history_keeps_each_timestamp_of_one_zone(result: ParseResult) -> None:
    found = find(result, price_kind="spot", zone="use1-az4", instance_type="g4dn.xlarge")
    assert sorted((r.effective_at, r.price_per_hour) for r in found) == [
        (datetime(2026, 11, 29, 16, 20, 44, tzinfo=UTC), Decimal("0.1812")),
        (datetime(2026, 11, 30, 4, 41, 9, tzinfo=UTC), Decimal("0.1733")),
    ]


def test_every_expected_offer_and_nothing_else(result: ParseResult) -> None:
    offers = sorted(
        (
            r.region,
            r.instance_type,
            r.price_kind,
            r.term_months or 0,
            r.payment_option or "",
            r.offering_class or "",
            str(r.price_per_hour),
        )
        for r in result.records
        if r.price_kind != "spot"
    )
    assert offers == sorted(
        [
            ("us-east-1", "g4dn.xlarge", "on_demand", 0, "", "", "0.526000"),
            ("us-east-1", "g4dn.xlarge", "reserved", 12, "no_upfront", "standard", "0.331000"),
            ("us-east-1", "g4dn.xlarge", "reserved", 12, "partial_upfront", "standard", "0.315763"),
            ("us-east-1", "g4dn.xlarge", "reserved", 12, "all_upfront", "standard", "0.309247"),
            ("us-east-1", "g4dn.xlarge", "reserved", 36, "no_upfront", "standard", "0.227000"),
            ("us-east-1", "g4dn.xlarge", "reserved", 36, "partial_upfront", "standard", "0.210213"),
            ("us-east-1", "g4dn.xlarge", "reserved", 36, "all_upfront", "standard", "0.197793"),
            # g5g: not in the GPU table, named by DescribeInstanceTypes ("T4g")
            ("us-east-1", "g5g.xlarge", "on_demand", 0, "", "", "0.420000"),
            ("us-east-1", "p3.2xlarge", "on_demand", 0, "", "", "3.060000"),
            ("us-east-1", "p4d.24xlarge", "on_demand", 0, "", "", "21.957642"),
            ("us-east-1", "p4d.24xlarge", "reserved", 12, "no_upfront", "standard", "13.921094"),
            ("us-east-1", "p4d.24xlarge", "reserved", 12, "all_upfront", "standard", "12.993037"),
            ("us-east-1", "p4d.24xlarge", "reserved", 36, "no_upfront", "standard", "9.374219"),
            ("us-east-1", "p4d.24xlarge", "reserved", 36, "all_upfront", "standard", "8.159056"),
            ("us-east-1", "p5.48xlarge", "on_demand", 0, "", "", "55.040000"),
            ("us-east-1", "p5.48xlarge", "reserved", 12, "no_upfront", "convertible", "43.344000"),
            ("us-east-1", "p5.48xlarge", "reserved", 12, "all_upfront", "convertible", "40.454452"),
            ("us-east-1", "p5.48xlarge", "reserved", 36, "no_upfront", "standard", "23.777280"),
            ("us-east-1", "p5.48xlarge", "reserved", 36, "all_upfront", "standard", "20.695053"),
            # the second page of the p4d answer
            ("us-west-2", "p4d.24xlarge", "on_demand", 0, "", "", "21.957640"),
        ]
    )
    spot = sorted(
        (r.region, r.zone, r.instance_type, str(r.price_per_hour))
        for r in result.records
        if r.price_kind == "spot"
    )
    assert spot == [
        ("us-east-1", "us-east-1b", "p4d.24xlarge", "9.150600"),
        ("us-east-1", "use1-az2", "p5.48xlarge", "13.218200"),
        ("us-east-1", "use1-az4", "g4dn.xlarge", "0.173300"),
        ("us-east-1", "use1-az4", "g4dn.xlarge", "0.181200"),
        ("us-east-1", "use1-az6", "p4d.24xlarge", "8.046800"),
        ("us-west-2", "usw2-az1", "g4dn.xlarge", "0.176400"),
        ("us-west-2", "usw2-az2", "p4d.24xlarge", "8.421900"),
    ]
    assert result.unknown_instance_types == set()
    assert result.skipped_rows == 0


def test_traps_are_absent(result: ParseResult) -> None:
    prices = {r.price_per_hour for r in result.records}
    assert Decimal("26.373642") not in prices  # the Windows p4d product
    assert Decimal("0.3573") not in prices  # the Windows spot item
    assert all(r.price_per_hour > 0 for r in result.records)  # the $0 capacity block
    # Capacity block, UnusedCapacityReservation: one on-demand price per (region, type).
    on_demand = [(r.region, r.instance_type) for r in result.records if r.price_kind == "on_demand"]
    assert len(on_demand) == len(set(on_demand)) == 6
    assert all(r.instance_type and r.region in REGIONS for r in result.records)  # free tier
    assert not find(result, region="eu-west-1")  # outside the configured regions
    assert len(result.records) == len(set(result.records)) == 27


def test_parse_keeps_only_the_configured_regions(fetched: Payloads, observed_at: datetime) -> None:
    result = make(None, regions=("us-west-2",)).parse(fetched, observed_at=observed_at)
    assert sorted((r.instance_type, r.price_kind, r.zone or "") for r in result.records) == [
        ("g4dn.xlarge", "spot", "usw2-az1"),
        ("p4d.24xlarge", "on_demand", ""),
        ("p4d.24xlarge", "spot", "usw2-az2"),
    ]


def test_payloads_are_json_and_reparse_the_same(
    fetched: Payloads, result: ParseResult, observed_at: datetime
) -> None:
    assert list(fetched) == [
        "source",  # which source answered, and why (the run summary says it)
        "pricing/p4d.24xlarge/page-1",
        "pricing/p4d.24xlarge/page-2",
        "pricing/g4dn.xlarge/page-1",
        "pricing/p5.48xlarge/page-1",
        "pricing/p3.2xlarge/page-1",
        "pricing/g5g.xlarge/page-1",
        "types/1/page-1",  # DescribeInstanceTypes, two pages
        "types/1/page-2",
        "spot/us-east-1/page-1",
        "spot/us-east-1/page-2",
        "spot/us-west-2/page-1",
    ]
    archived = json.loads(json.dumps(fetched))
    assert archived == fetched
    assert archived["spot/us-east-1/page-1"]["SpotPriceHistory"][0]["Timestamp"] == (
        "2026-11-30T03:17:41+00:00"
    )
    assert make(None).parse(archived, observed_at=observed_at) == result


def test_zero_price_is_skipped_and_counted(observed_at: datetime) -> None:
    page = page_file("pricing-p4d.24xlarge-page1.json")
    page["PriceList"] = [
        p.replace('"USD":"21.9576420000"', '"USD":"0.0000000000"') for p in page["PriceList"]
    ]
    result = make(None).parse({"pricing/p4d.24xlarge/page-1": page}, observed_at=observed_at)
    assert not find(result, price_kind="on_demand")
    assert len(find(result, price_kind="reserved")) == 4
    assert result.skipped_rows == 1


def test_only_box_usage_is_an_instance_price(observed_at: datetime) -> None:
    # The capacity-reservation row marked "Used": its UnusedBox usage type still rules it out.
    page = page_file("pricing-p4d.24xlarge-page1.json")
    [row] = [p for p in page["PriceList"] if "UnusedBox:" in p]
    marked_used = row.replace("UnusedCapacityReservation", "Used").replace("21.957642", "1.5")
    page["PriceList"].append(marked_used)
    result = make(None).parse({"pricing/p4d.24xlarge/page-1": page}, observed_at=observed_at)
    assert [r.price_per_hour for r in find(result, price_kind="on_demand")] == [
        Decimal("21.957642")
    ]


@pytest.mark.parametrize(
    ("key", "page"),
    [
        ("pricing/p4d.24xlarge/page-1", {"FormatVersion": "aws_v1"}),
        ("pricing/p4d.24xlarge/page-1", {"FormatVersion": "aws_v1", "PriceList": [{"a": 1}]}),
        ("spot/us-east-1/page-1", {"NextToken": ""}),
        ("spot/us-east-1/page-1", ["not", "a", "page"]),
        ("on-demand/p4d.24xlarge", {"PriceList": []}),
    ],
)
def test_changed_shape_raises(key: str, page: Any, observed_at: datetime) -> None:
    with pytest.raises(PayloadShapeError, match=key):
        make(None).parse({key: page}, observed_at=observed_at)


# -- fetch: requests, settings, progress -------------------------------------------------------


def test_requests_use_the_configured_types_and_filters(replay: Replay) -> None:
    server = replay(DEMO)
    # Per-API endpoints win over `endpoint` (a closed port here: using it would fail).
    options = {"pricing_endpoint": server.url, "ec2_endpoint": server.url}
    make("http://127.0.0.1:9", types=["g4dn.xlarge", "p3.2xlarge"], options=options).fetch()
    pricing = [json.loads(r.body) for r in server.requests if r.headers.get("x-amz-target")]
    # GetProducts twice, DescribeInstanceTypes in the first region asked, then
    # DescribeSpotPriceHistory: two us-east-1 pages, one us-west-2 page
    regions = ["us-east-1"] * 5 + ["us-west-2"]
    assert [r.region() for r in server.requests] == regions
    assert [{f["Field"]: f["Value"] for f in p["Filters"]} for p in pricing] == [
        {
            "instanceType": t,
            "operatingSystem": "Linux",
            "tenancy": "Shared",
            "preInstalledSw": "NA",
            "capacitystatus": "Used",
            "licenseModel": "No License required",
            "marketoption": "OnDemand",
        }
        for t in ("g4dn.xlarge", "p3.2xlarge")
    ]
    assert {f["Type"] for p in pricing for f in p["Filters"]} == {"TERM_MATCH"}
    assert {p["ServiceCode"] for p in pricing} == {"AmazonEC2"}
    (described,) = [r.form() for r in server.requests if "DescribeInstanceTypes" in r.body.decode()]
    # asked by a filter: a name EC2 does not know matches nothing rather than failing
    assert described["Filter.1.Name"] == "instance-type"
    assert (described["Filter.1.Value.1"], described["Filter.1.Value.2"]) == (
        "g4dn.xlarge",
        "p3.2xlarge",
    )
    assert described["IncludeUnsupportedInRegion"] == "true"
    spot = [r.form() for r in server.requests if "DescribeSpotPriceHistory" in r.body.decode()]
    assert [(f["InstanceType.1"], f["InstanceType.2"], "InstanceType.3" in f) for f in spot] == [
        ("g4dn.xlarge", "p3.2xlarge", False)
    ] * 3
    assert {f["ProductDescription.1"] for f in spot} == {"Linux/UNIX"}
    assert all(f["StartTime"] == f["EndTime"] for f in spot)  # no window: the price now


def test_history_window_asks_for_every_change_since(replay: Replay) -> None:
    server = replay(DEMO)
    collector = AwsCollector(
        ProviderSettings(
            endpoint=server.url,
            regions=("us-west-2",),
            credentials={"aws_access_key_id": "x", "aws_secret_access_key": "x"},
            options={"instance_types": ["g4dn.xlarge"]},
            history_window_s=5400,
        )
    )
    collector.fetch()
    (spot,) = [r.form() for r in server.requests if "DescribeSpotPriceHistory" in r.body.decode()]
    start = datetime.fromisoformat(spot["StartTime"].replace("Z", "+00:00"))
    end = datetime.fromisoformat(spot["EndTime"].replace("Z", "+00:00"))
    assert (end - start).total_seconds() == 5400


def test_defaults_are_every_gpu_type_and_the_gpu_regions() -> None:
    collector = make(None, regions=(), types=None)
    assert collector.instance_types == ()  # no restriction: every GPU type the Price List lists
    assert collector.regions == GPU_REGIONS
    assert "us-east-1" in GPU_REGIONS


def test_progress_after_every_page(replay: Replay, tmp_path: Path) -> None:
    server = replay(*answers(tmp_path))
    calls: list[tuple[int, int]] = []
    make(server.url, progress=lambda pages, items: calls.append((pages, items))).fetch()
    # PriceList 3, 3, 1, 2, 1, 1 products; instance types 6, 4; spot items 5, 2, 2
    assert calls == [
        (1, 3), (2, 6), (3, 7), (4, 9), (5, 10), (6, 11), (7, 17), (8, 21), (9, 26), (10, 28),
        (11, 30),
    ]  # fmt: skip


# -- fetch: errors -----------------------------------------------------------------------------


def test_throttling_is_retried(replay: Replay, tmp_path: Path) -> None:
    throttle = {"__type": "ThrottlingException", "message": "Rate exceeded"}
    throttled = pricing_answer(400, throttle, times=1)
    server = replay(recording(tmp_path, throttled), DEMO)
    payloads = make(server.url, types=["g4dn.xlarge"], regions=("us-west-2",)).fetch()
    assert len(payloads["pricing/g4dn.xlarge/page-1"]["PriceList"]) == 1
    assert sum(1 for r in server.requests if r.headers.get("x-amz-target")) == 2


def test_server_error_is_retried(replay: Replay, tmp_path: Path) -> None:
    failing = pricing_answer(500, INTERNAL_ERROR, times=1)
    server = replay(recording(tmp_path, failing), DEMO)
    payloads = make(server.url, types=["p3.2xlarge"], regions=("us-west-2",)).fetch()
    assert set(payloads) == {
        "source",
        "pricing/p3.2xlarge/page-1",
        "types/1/page-1",
        "spot/us-west-2/page-1",
    }


def test_page_that_keeps_failing_names_call_and_page(replay: Replay, tmp_path: Path) -> None:
    token = page_file("pricing-p4d.24xlarge-page1.json")["NextToken"]
    page_2 = {"Filters": [{"Field": "instanceType", "Value": "p4d.24xlarge"}], "NextToken": token}
    failing = pricing_answer(500, INTERNAL_ERROR, match={"json": page_2})
    server = replay(recording(tmp_path, failing), DEMO)
    with pytest.raises(
        FetchError, match=r"GetProducts p4d.24xlarge page 2: .*InternalErrorException"
    ):
        make(server.url, types=["p4d.24xlarge"], retries=2).fetch()
    asked = [json.loads(r.body).get("NextToken") for r in server.requests]
    assert asked == [None, token, token, token]  # page 1, then page 2 tried three times


def test_ec2_request_limit_is_retried(replay: Replay, tmp_path: Path) -> None:
    server = replay(recording(tmp_path, ec2_throttled("us-west-2", times=1)), DEMO)
    payloads = make(server.url, types=["p3.2xlarge"], regions=("us-west-2",)).fetch()
    assert len(payloads["spot/us-west-2/page-1"]["SpotPriceHistory"]) == 2


def test_ec2_request_limit_that_persists_names_the_region(replay: Replay, tmp_path: Path) -> None:
    server = replay(recording(tmp_path, ec2_throttled("us-west-2")), DEMO)
    with pytest.raises(
        FetchError, match=r"DescribeSpotPriceHistory us-west-2 page 1: .*RequestLimitExceeded"
    ) as err:
        make(server.url, types=["p3.2xlarge"]).fetch()
    assert isinstance(err.value.__cause__, ClientError)
    assert [r.region() for r in server.requests[-2:]] == ["us-west-2", "us-west-2"]


# -- credentials -------------------------------------------------------------------------------


def _no_aws_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_SECURITY_TOKEN",
        "AWS_PROFILE",
        "AWS_DEFAULT_PROFILE",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_ROLE_ARN",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    # Never ask the instance metadata service (a network call) in a test.
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def test_missing_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _no_aws_environment(monkeypatch, tmp_path)
    collector = AwsCollector(ProviderSettings(options={"source": "api"}))
    with pytest.raises(MissingCredentials) as err:
        collector.check_credentials()
    assert err.value.variable == "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE)"
    assert str(err.value).startswith("aws: no credentials; set AWS_ACCESS_KEY_ID")


def test_credentials_from_settings_or_the_standard_chain(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _no_aws_environment(monkeypatch, tmp_path)
    AwsCollector(ProviderSettings(credentials=dict(KEYS))).check_credentials()
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    AwsCollector(ProviderSettings()).check_credentials()


# -- the offline demo recording ----------------------------------------------------------------


def test_demo_recording_answers_every_request(replay: Replay, observed_at: datetime) -> None:
    server = replay(DEMO)
    collector = make(server.url, regions=("us-east-1", "us-west-2", "eu-west-1"), types=None)
    result = collector.parse(collector.fetch(), observed_at=observed_at)
    assert server.unmatched == []
    assert result.unknown_instance_types == set()
    assert result.skipped_rows == 0
    # on-demand: p4d in 3 regions, g4dn, p5 and p3 in us-east-1, g5, g6, g6e in 3, p5en in 2;
    # reserved: g4dn 6, p4d 4, p5 4, g5 2 in each US region; spot: 7 in the US, 8 in eu-west-1
    kinds = [r.price_kind for r in result.records]
    assert (kinds.count("on_demand"), kinds.count("reserved"), kinds.count("spot")) == (17, 18, 15)
    assert {r.instance_type for r in result.records} == {
        "p4d.24xlarge",
        "p5.48xlarge",
        "p5en.48xlarge",
        "p3.2xlarge",
        "g4dn.xlarge",
        "g5.xlarge",
        "g6.xlarge",
        "g6e.xlarge",
    }
    assert {r.region for r in result.records} == {"us-east-1", "us-west-2", "eu-west-1"}


# -- every GPU type, and its facts -------------------------------------------------------------

UNAUTHORIZED = (
    '<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error>'
    "<Code>UnauthorizedOperation</Code><Message>You are not authorized to perform this "
    "operation. User: arn:aws:iam::123456789012:user/prices is not authorized to perform: "
    "ec2:DescribeInstanceTypes because no identity-based policy allows the "
    "ec2:DescribeInstanceTypes action</Message></Error></Errors>"
    "<RequestID>3f1c2b4a-9d8e-4f7a-b6c5-2e1d0a9b8c7d</RequestID></Response>"
)


def every_type(replay: Replay, tmp_path: Path, *first: Path) -> tuple[ReplayServer, ParseResult]:
    server = replay(*first, *answers(tmp_path))
    collector = make(server.url, regions=("us-east-1",), types=None)
    result = collector.parse(collector.fetch(), observed_at=OBSERVED)
    assert server.unmatched == []
    return server, result


OBSERVED = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def test_every_gpu_type_is_asked_by_its_attributes(replay: Replay, tmp_path: Path) -> None:
    server, result = every_type(replay, tmp_path)
    pricing = [json.loads(r.body) for r in server.requests if r.headers.get("x-amz-target")]
    assert [{f["Field"]: f["Value"] for f in p["Filters"]} for p in pricing] == [
        {
            "instanceFamily": "GPU instance",
            "operatingSystem": "Linux",
            "tenancy": "Shared",
            "preInstalledSw": "NA",
            "capacitystatus": "Used",
            "licenseModel": "No License required",
            "marketoption": "OnDemand",
        }
    ] * 2  # the family's two pages
    # DescribeInstanceTypes and the spot history are asked for the GPU types priced in
    # us-east-1 (the Inferentia product and the types sold only elsewhere are not).
    forms = [r.form() for r in server.requests if not r.headers.get("x-amz-target")]
    described = next(f for f in forms if f["Action"] == "DescribeInstanceTypes")
    spot = next(f for f in forms if f["Action"] == "DescribeSpotPriceHistory")
    # (The family's first page is the recording's, its second the traps': g5g, g7e, inf2.)
    priced = sorted(
        ("g4dn.xlarge", "g5g.xlarge", "g7e.2xlarge", "p3.2xlarge", "p4d.24xlarge", "p5.48xlarge",
         "p5en.48xlarge")
    )  # fmt: skip
    for form, field in ((described, "Filter.1.Value."), (spot, "InstanceType.")):
        asked = [v for k, v in form.items() if k.startswith(field)]
        assert sorted(asked) == priced
    assert {r.instance_type for r in result.records} == set(priced)
    assert "inf2.xlarge" not in {r.instance_type for r in result.records}


def test_a_type_the_table_does_not_know_takes_the_apis_facts(
    replay: Replay, tmp_path: Path
) -> None:
    _, result = every_type(replay, tmp_path)
    # g5g.xlarge: DescribeInstanceTypes says 1 x "T4g" with 16384 MiB: the T4 of [names.aws].
    [g5g] = find(result, instance_type="g5g.xlarge")
    assert (g5g.gpu_model, g5g.gpu_count, g5g.gpu_memory_gib) == ("T4", 1, 16)
    assert g5g.price_per_hour == Decimal("0.42")  # "0.4200000000"
    # g7e.2xlarge: "RTX PRO 6000", no [names.aws] spelling but the model's alias: stored with
    # the API's count and memory (98304 MiB = 96 GiB), priced as the Price List says.
    [g7e] = find(result, instance_type="g7e.2xlarge")
    assert g7e == PriceRecord(
        provider="aws",
        region="us-east-1",
        zone=None,
        instance_type="g7e.2xlarge",
        price_kind="on_demand",
        term_months=None,
        payment_option=None,
        offering_class=None,
        currency="USD",
        price_per_hour=Decimal("2.27"),
        upfront_total=None,
        gpu_model="RTXPRO6000",
        gpu_count=1,
        gpu_memory_gib=96,
        vcpus=8.0,
        memory_gib=64.0,
    )
    # Every priced type's facts are the API's; the types the table knows agree with it, so
    # their history keeps its meaning.
    assert set(result.facts.values()) == {"api"}
    [p5en] = find(result, instance_type="p5en.48xlarge", price_kind="on_demand")
    assert (p5en.gpu_model, p5en.gpu_count, p5en.gpu_memory_gib) == ("H200", 8, 141)
    summary = result.gpu_summary()
    assert (summary.priced, summary.from_api, summary.without_facts) == (7, 7, [])


def test_without_describe_permission_the_table_and_the_price_list_stand_in(
    replay: Replay, tmp_path: Path
) -> None:
    refused = {
        "match": {"method": "POST", "form": {"Action": "DescribeInstanceTypes"}},
        "status": 403,
        "content_type": "text/xml;charset=UTF-8",
        "body": UNAUTHORIZED,
    }
    _, result = every_type(replay, tmp_path, recording(tmp_path / "refused", refused))
    # The prices are all there; g5g has the Price List's "1" GPU and "16 GB", no model.
    [g5g] = find(result, instance_type="g5g.xlarge")
    assert (g5g.gpu_model, g5g.gpu_count, g5g.gpu_memory_gib) == (None, 1, 16)
    [p4d] = find(result, instance_type="p4d.24xlarge", price_kind="on_demand")
    assert (p4d.gpu_model, p4d.gpu_count, p4d.gpu_memory_gib) == ("A100", 8, 40)
    assert result.facts["p4d.24xlarge"] == "table" and result.facts["g5g.xlarge"] == "api"
    assert any(
        "DescribeInstanceTypes was refused (UnauthorizedOperation)" in n for n in result.notes
    )
    assert result.gpu_summary().without_facts == ["g5g.xlarge", "g7e.2xlarge"]


def test_the_run_summary_counts_the_types_from_api_facts(
    replay: Replay, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from collectors import REGISTRY
    from tracker.cli import cli

    server = replay(*answers(tmp_path))
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    lines = [f'[storage]\npath = "{tmp_path / "prices.duckdb"}"', "[providers.aws]"]
    lines += [f'endpoint = "{server.url}"', 'regions = ["us-east-1"]', "timeout = 2"]
    lines += [f"[providers.{n}]\nenabled = false" for n in REGISTRY if n != "aws"]
    (tmp_path / "config.toml").write_text("\n".join(lines) + "\n")
    done = CliRunner().invoke(cli, ["--config", str(tmp_path / "config.toml"), "collect"])
    assert done.exit_code == 0, done.output
    said = " ".join(done.output.replace("│", " ").split())  # the notes cell's lines, joined
    assert "GPU not in the GPU table" not in said  # g7e's RTX PRO 6000 is in it now
    assert "GPU types: 7 priced, 7 from API facts" in said


def test_a_contradiction_of_the_table_takes_the_api_and_is_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # An answer saying p4d.24xlarge has 80 GiB A100s (the table: 40).
    said = {
        "InstanceTypes": [
            {
                "InstanceType": "p4d.24xlarge",
                "GpuInfo": {
                    "Gpus": [{"Name": "A100", "Count": 8, "MemoryInfo": {"SizeInMiB": 81920}}],
                    "TotalGpuMemoryInMiB": 655360,
                },
            }
        ]
    }
    payloads = {
        "pricing/gpu/page-1": page_file("pricing-p4d.24xlarge-page1.json"),
        "types/1/page-1": said,
    }
    for _ in range(2):
        result = make(None).parse(payloads, observed_at=OBSERVED)
    assert {r.gpu_memory_gib for r in result.records} == {80}
    warned = [r.getMessage() for r in caplog.records if "the GPU table" in r.getMessage()]
    assert warned == [
        "aws: p4d.24xlarge: the API says 8 x A100 80 GiB, the GPU table 8 x A100 40 GiB; "
        "the API's facts are used"
    ]


@pytest.mark.parametrize(
    ("info", "expected"),
    [
        # one whole GPU: 22888 MiB is the L4's 24 GB as the driver sees it
        ({"Gpus": [{"Name": "L4", "Count": 1, "MemoryInfo": {"SizeInMiB": 22888}}]}, ("L4", 1, 24)),
        # g6f.large: an eighth of an L4 (its 2861 MiB): the share, and the whole GPU's memory
        (
            {"Gpus": [{"Name": "L4", "Count": 1, "GpuPartitionSize": 0.125,
                       "MemoryInfo": {"SizeInMiB": 2861}}]},
            ("L4", 0.125, 24),
        ),
        # no per-GPU memory: the total over the count
        ({"Gpus": [{"Name": "H100", "Count": 8}], "TotalGpuMemoryInMiB": 655360}, ("H100", 8, 80)),
        # a part the table lacks: stored under the API's own name for it, with its facts
        (
            {"Gpus": [{"Name": " Gaudi ", "Count": 8, "MemoryInfo": {"SizeInMiB": 32768}}]},
            ("Gaudi", 8, 32),
        ),
        ({"Gpus": []}, None),
        ({"Gpus": [{"Name": "A100", "Count": "eight"}]}, None),
    ],
)  # fmt: skip
def test_gpu_info_to_facts(info: dict[str, Any], expected: Any) -> None:
    from collectors.aws.facts import from_gpu_info

    found = from_gpu_info(info)
    got = None if found is None else (found.gpu_model, found.gpu_count, found.gpu_memory_gib)
    assert got == expected
