"""Lambda collector: parse on the authored wire-format answer, fetch through the real requests
stack (`responses` for request shape and error mapping, the loopback replay server for real
urllib3 retries, waits and timeouts)."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import requests
import responses

from collectors import gpus
from collectors.base import ParseResult, PriceRecord, ProviderSettings
from collectors.common import FetchError, MissingCredentials, PayloadShapeError
from collectors.lambdalabs import LambdaCollector
from tests.collectors.support import demo_of, fixtures_of, keyed, list_price, recording
from tracker.collecting.replay import Exchange, ReplayServer

# The one recording, the demo's and these tests'; the trap entries and errors are kept apart.
DEMO = demo_of("lambdalabs")
FIXTURES = fixtures_of("lambdalabs")
URL = "https://cloud.lambda.ai/api/v1/instance-types"
KEY = "lambda-test-key"


def recorded() -> dict[str, Any]:
    """The answer as recorded (and replayed by the demo)."""
    body: dict[str, Any] = json.loads((DEMO / "instance-types.json").read_text())
    return body


def answer() -> dict[str, Any]:
    """The recorded answer with the trap entries of tests/fixtures/lambdalabs/traps.json laid
    over it (an unknown GPU, a type the GPU table lacks, a price as a string)."""
    body = recorded()
    body["data"].update(json.loads((FIXTURES / "traps.json").read_text())["data"])
    return body


def collector(**settings: Any) -> LambdaCollector:
    settings.setdefault("max_retries", 2)
    settings.setdefault("credentials", {"api_key": KEY})
    return LambdaCollector(ProviderSettings(**settings))


def parse(body: Any, observed_at: datetime, **settings: Any) -> ParseResult:
    return collector(**settings).parse({"instance-types": body}, observed_at=observed_at)


def by_offer(result: ParseResult) -> dict[tuple[Any, ...], PriceRecord]:
    return keyed(result, "instance_type", "region")


def entry(
    name: str = "gpu_1x_a10", gpu: str = "A10 (24 GB PCIe)", cents: Any = 129, **changes: Any
) -> dict[str, Any]:
    """One entry (gpu_1x_a10, 1.29 USD/h, in us-east-1); `changes` replace its fields."""
    item: dict[str, Any] = {
        "instance_type": {
            "name": name,
            "description": f"1x {gpu}",
            "gpu_description": gpu,
            "price_cents_per_hour": cents,
            "specs": {"vcpus": 30, "memory_gib": 200, "storage_gib": 1400, "gpus": 1},
            "architecture": "x86_64",
        },
        "regions_with_capacity_available": [{"name": "us-east-1", "description": "Virginia, USA"}],
    }
    for key, value in changes.items():
        if key == "specs" and value is None:
            item["instance_type"]["specs"] = None
        elif key in ("specs", "gpus", "vcpus", "memory_gib"):
            specs = item["instance_type"]["specs"]
            specs.update(value if key == "specs" else {key: value})
        elif key == "regions_with_capacity_available":
            item[key] = value
        else:
            item["instance_type"][key] = value
    return item


def one(observed_at: datetime, item: Any, name: str = "gpu_1x_a10", **settings: Any) -> ParseResult:
    return parse({"data": {name: item}}, observed_at, **settings)


def lambda_record(**fields: Any) -> PriceRecord:
    return list_price("lambdalabs", **{"price_kind": "on_demand", "available": True, **fields})


# ---------------------------------------------------------------------------------------------
# parse: the fixture answer


def test_records_in_full(observed_at: datetime) -> None:
    offers = by_offer(parse(answer(), observed_at))
    # 3192 cents / 100 = 31.92 USD/h for the instance; / 8 GPUs = 3.99 per GPU-hour
    assert offers["gpu_8x_h100_sxm5", "us-east-3"] == lambda_record(
        region="us-east-3",
        instance_type="gpu_8x_h100_sxm5",
        price_per_hour=Decimal("31.920000"),
        gpu_model="H100",
        gpu_count=8,
        gpu_memory_gib=80,
        vcpus=208,
        memory_gib=1800,
    )
    assert offers["gpu_8x_h100_sxm5", "us-east-3"].price_per_hour / 8 == Decimal("3.99")
    # 229 cents = 2.29; "GH200 (96 GB)" -> GH200, 96 GB of GPU memory
    assert offers["gpu_1x_gh200", "us-west-1"] == lambda_record(
        region="us-west-1",
        instance_type="gpu_1x_gh200",
        price_per_hour=Decimal("2.290000"),
        gpu_model="GH200",
        gpu_count=1,
        gpu_memory_gib=96,
        vcpus=64,
        memory_gib=432,
    )
    # 632 cents = 6.32 = 8 x 0.79; "Tesla V100 (16 GB)" -> V100
    assert offers["gpu_8x_v100", "us-south-1"] == lambda_record(
        region="us-south-1",
        instance_type="gpu_8x_v100",
        price_per_hour=Decimal("6.320000"),
        gpu_model="V100",
        gpu_count=8,
        gpu_memory_gib=16,
        vcpus=92,
        memory_gib=448,
    )
    # not in the GPU table: placed from "B200 (180 GB SXM6)" and specs.gpus 4; 2676 = 26.76
    assert offers["gpu_4x_b200_sxm6", "us-south-2"] == lambda_record(
        region="us-south-2",
        instance_type="gpu_4x_b200_sxm6",
        price_per_hour=Decimal("26.760000"),
        gpu_model="B200",
        gpu_count=4,
        gpu_memory_gib=180,
        vcpus=104,
        memory_gib=1450,
    )
    # 109 cents = 1.09; "A6000 (48 GB)" -> the RTX A6000
    assert offers["gpu_1x_a6000", "us-west-1"] == lambda_record(
        region="us-west-1",
        instance_type="gpu_1x_a6000",
        price_per_hour=Decimal("1.090000"),
        gpu_model="A6000",
        gpu_count=1,
        gpu_memory_gib=48,
        vcpus=14,
        memory_gib=100,
    )


def test_every_offer_and_price(observed_at: datetime) -> None:
    """The whole result: CPU-only and unreadable entries are absent; a type sold out
    everywhere is one record in no region; a GPU the table does not know keeps its own name."""
    result = parse(answer(), observed_at)
    prices = {key: r.price_per_hour for key, r in by_offer(result).items()}
    # cents / 100, one record per region with capacity (tracker/demo_data/lambdalabs/README.md)
    assert prices == {
        ("gpu_2x_b200_sxm6", None): Decimal("13.78"),  # sold out everywhere: 1378 cents
        ("gpu_8x_a100", None): Decimal("15.92"),
        ("gpu_1x_rtx6000", None): Decimal("0.69"),
        ("gpu_8x_b300_sxm6", "us-south-2"): Decimal("71.92"),  # "B300": gpu_model NULL
        ("gpu_8x_h100_sxm5", "us-east-3"): Decimal("31.92"),
        ("gpu_8x_h100_sxm5", "us-south-2"): Decimal("31.92"),
        ("gpu_8x_h100_sxm5", "us-west-1"): Decimal("31.92"),
        ("gpu_2x_h100_sxm5", "us-south-2"): Decimal("8.38"),
        ("gpu_2x_h100_sxm5", "us-west-3"): Decimal("8.38"),
        ("gpu_1x_h100_sxm5", "us-east-3"): Decimal("4.29"),
        ("gpu_1x_h100_pcie", "us-west-3"): Decimal("3.29"),
        ("gpu_1x_h100_pcie", "us-south-1"): Decimal("3.29"),
        ("gpu_8x_b200_sxm6", "us-south-2"): Decimal("53.52"),  # 6.69 per GPU
        ("gpu_4x_b200_sxm6", "us-south-2"): Decimal("26.76"),
        ("gpu_1x_b200_sxm6", "us-east-3"): Decimal("6.99"),
        ("gpu_1x_gh200", "us-east-3"): Decimal("2.29"),
        ("gpu_1x_gh200", "us-west-1"): Decimal("2.29"),
        ("gpu_1x_gh200", "us-south-1"): Decimal("2.29"),
        ("gpu_8x_a100_80gb_sxm4", "us-midwest-1"): Decimal("22.32"),  # 2.79 per GPU
        ("gpu_8x_a100_80gb_sxm4", "us-east-1"): Decimal("22.32"),
        ("gpu_1x_a100_sxm4", "us-east-1"): Decimal("1.99"),
        ("gpu_1x_a100_sxm4", "us-west-2"): Decimal("1.99"),
        ("gpu_1x_a10", "us-east-1"): Decimal("1.29"),
        ("gpu_1x_a10", "us-west-1"): Decimal("1.29"),
        ("gpu_1x_a10", "us-west-2"): Decimal("1.29"),
        ("gpu_1x_a6000", "us-west-1"): Decimal("1.09"),
        ("gpu_2x_a6000", "us-west-1"): Decimal("2.18"),
        ("gpu_8x_v100", "us-south-1"): Decimal("6.32"),
    }
    assert {r.price_per_hour.as_tuple().exponent for r in result.records} == {-6}
    assert {(r.currency, r.price_kind, r.zone) for r in result.records} == {
        ("USD", "on_demand", None)
    }
    # available: a region with capacity now; the region-less records are the sold-out ones
    assert {r.available for r in result.records if r.region} == {True}
    assert {r.available for r in result.records if r.region is None} == {False}
    assert result.unknown_instance_types == set()
    assert result.sold_out == set()  # every region covered: nothing closes without a record
    # only the string price; sold-out, CPU-only and unknown-GPU types are not skipped rows
    assert result.skipped_rows == 1
    # every priced type's GPU facts are the API's own (gpu_description and specs.gpus)
    assert result.facts == dict.fromkeys({r.instance_type for r in result.records}, "api")
    assert result.gpu_summary().without_facts == []  # the B300 is in the GPU table


def test_cents_become_exact_dollars() -> None:
    # Hand check: integer cents / 100, no float anywhere.
    assert Decimal(3192) / 100 == Decimal("31.92")
    assert Decimal("31.92") / 8 == Decimal("3.99")
    assert Decimal(5352) / 100 / 8 == Decimal("6.69")


def test_sold_out_types_are_logged_not_skipped(
    observed_at: datetime, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="collectors.lambdalabs"):
        parse(answer(), observed_at)
    messages = [(r.levelno, r.getMessage()) for r in caplog.records]
    assert (
        logging.INFO,
        "lambdalabs: 3 instance types with capacity in no region, kept as sold out: "
        "gpu_1x_rtx6000, gpu_2x_b200_sxm6, gpu_8x_a100",
    ) in messages
    assert [m for level, m in messages if level == logging.WARNING] == [
        "lambdalabs: gpu_4x_h100_sxm5 skipped: price_cents_per_hour is '1636'",
    ]
    assert all(m.startswith("lambdalabs: ") for _, m in messages)


def test_a_type_with_no_capacity_keeps_its_list_price(observed_at: datetime) -> None:
    """Sold out everywhere: one record, region NULL, available false, the API's own facts."""
    result = parse(answer(), observed_at)
    assert by_offer(result)["gpu_8x_a100", None] == lambda_record(
        region=None,
        instance_type="gpu_8x_a100",
        price_per_hour=Decimal("15.920000"),  # 1592 cents / 100 = 8 x 1.99
        gpu_model="A100",
        gpu_count=8,
        gpu_memory_gib=40,  # "A100 (40 GB SXM4)"
        vcpus=124,
        memory_gib=1800,
        available=False,
    )
    assert result.facts["gpu_8x_a100"] == "api"


def test_a_gpu_new_to_the_table_is_read_from_the_description(observed_at: datetime) -> None:
    result = parse(answer(), observed_at)
    assert by_offer(result)["gpu_8x_b300_sxm6", "us-south-2"] == lambda_record(
        region="us-south-2",
        instance_type="gpu_8x_b300_sxm6",
        price_per_hour=Decimal("71.920000"),  # 7192 cents; 8.99 per GPU
        gpu_model="B300",  # "B300 (288 GB SXM6)": the model's own name
        gpu_count=8,
        gpu_memory_gib=288,
        vcpus=208,
        memory_gib=2900,
    )
    assert "gpu_8x_b300_sxm6" not in result.unknown_instance_types


def test_a_users_model_names_the_unknown_gpu(observed_at: datetime) -> None:
    b300 = gpus.parse_model(
        "B300", {"vendor": "nvidia", "fp16_tflops": 2500.0}, "gpus.models.B300."
    )
    overrides = gpus.Overrides(models={"B300": b300})
    result = parse(answer(), observed_at, gpus=overrides)
    record = by_offer(result)["gpu_8x_b300_sxm6", "us-south-2"]
    assert (record.gpu_model, record.gpu_count, record.gpu_memory_gib) == ("B300", 8, 288)
    assert result.facts["gpu_8x_b300_sxm6"] == "api"  # the API named it; the user knows it


@pytest.mark.parametrize(
    ("regions", "expected"),
    [
        (
            ("us-east-3",),
            {
                ("gpu_8x_h100_sxm5", "us-east-3"),
                ("gpu_1x_h100_sxm5", "us-east-3"),
                ("gpu_1x_b200_sxm6", "us-east-3"),
                ("gpu_1x_gh200", "us-east-3"),
            },
        ),
        (
            ("us-west-3", "eu-central-1"),
            {("gpu_1x_h100_pcie", "us-west-3"), ("gpu_2x_h100_sxm5", "us-west-3")},
        ),
    ],
)
def test_configured_regions_restrict(
    observed_at: datetime, regions: tuple[str, ...], expected: set[tuple[str, str]]
) -> None:
    # The three types sold out everywhere keep their list price whatever regions are asked.
    sold_out = {(t, None) for t in ("gpu_1x_rtx6000", "gpu_2x_b200_sxm6", "gpu_8x_a100")}
    assert set(by_offer(parse(answer(), observed_at, regions=regions))) == expected | sold_out


def test_a_type_without_capacity_in_the_asked_regions_counts_as_sold_out(
    observed_at: datetime, caplog: pytest.LogCaptureFixture
) -> None:
    """With `regions` configured, a type with capacity only elsewhere makes no record (its
    offers in the asked regions close); a type with capacity nowhere keeps its list price in
    one record of no region, as without `regions`: the store looks for it in every collection."""
    with caplog.at_level(logging.INFO, logger="collectors.lambdalabs"):
        result = parse(answer(), observed_at, regions=("us-west-3",))
    assert result.skipped_rows == 1
    assert {r.region for r in result.records} == {"us-west-3", None}
    nowhere = by_offer(result)["gpu_8x_a100", None]
    assert (nowhere.available, nowhere.price_per_hour) == (False, Decimal("15.92"))
    # 18 GPU types placed, two of them (gpu_1x_h100_pcie, gpu_2x_h100_sxm5) with capacity in
    # us-west-3, three with capacity nowhere; the 13 others have capacity elsewhere only
    assert len(result.sold_out) == 13 and "gpu_8x_a100" not in result.sold_out
    assert "13 instance types without capacity in the asked regions, no record" in caplog.text


@pytest.mark.parametrize("cents", [129.0, Decimal("129"), Decimal("129.00")])
def test_cents_as_float_or_decimal_give_the_same_record(observed_at: datetime, cents: Any) -> None:
    assert one(observed_at, entry(cents=cents)).records == one(observed_at, entry()).records


# ---------------------------------------------------------------------------------------------
# parse: single entries


def test_the_base_entry_is_stored(observed_at: datetime) -> None:
    [record] = one(observed_at, entry()).records
    assert record == lambda_record(
        region="us-east-1",
        instance_type="gpu_1x_a10",
        price_per_hour=Decimal("1.29"),
        gpu_model="A10",
        gpu_count=1,
        gpu_memory_gib=24,
        vcpus=30,
        memory_gib=200,
    )


@pytest.mark.parametrize(
    "item",
    [
        "not an object",
        {"regions_with_capacity_available": []},
        entry(specs=None),
        entry(gpus="1"),
        entry(gpus=-1),
        entry(cents=0),
        entry(cents=-129),
        entry(cents=None),
        entry(cents="129"),
        entry(cents=True),
        entry(regions_with_capacity_available=None),
        entry(regions_with_capacity_available=[{"description": "Virginia, USA"}]),
        entry(regions_with_capacity_available=["us-east-1"]),
    ],
)
def test_entries_not_understood_are_skipped(observed_at: datetime, item: Any) -> None:
    result = parse({"data": {"gpu_1x_a10": entry(), "gpu_1x_a10_bad": item}}, observed_at)
    assert [r.instance_type for r in result.records] == ["gpu_1x_a10"]
    assert result.skipped_rows == 1
    assert result.unknown_instance_types == set()
    # Its offers stay open (stale) in the store rather than recorded as withdrawn.
    assert result.unreadable == {"gpu_1x_a10_bad"}


@pytest.mark.parametrize(
    "item",
    [
        entry(gpu="A10"),  # no memory
        entry(gpu="A10 (24 GiB of fast memory)"),
        entry(gpu=None),
    ],
)
def test_a_description_not_understood_falls_back_to_the_table(
    observed_at: datetime, item: Any
) -> None:
    result = one(observed_at, item)
    [record] = result.records
    assert (record.gpu_model, record.gpu_count, record.gpu_memory_gib) == ("A10", 1, 24)
    assert (record.vcpus, record.memory_gib) == (30, 200)  # the host is still the API's
    assert result.facts == {"gpu_1x_a10": "table"}


def test_a_description_not_understood_on_a_type_the_table_lacks_is_reported(
    observed_at: datetime,
) -> None:
    result = one(observed_at, entry("gpu_1x_x9", gpu="X9"), name="gpu_1x_x9")
    assert result.records == []
    assert result.unknown_instance_types == {"gpu_1x_x9"}
    assert result.skipped_rows == 0


def test_an_unknown_spelling_on_a_known_type_keeps_the_tables_model(
    observed_at: datetime,
) -> None:
    """The type's history keeps its meaning when Lambda spells its GPU anew."""
    result = one(observed_at, entry(gpu="NVIDIA A10 (24 GB PCIe)"))
    [record] = result.records
    assert (record.gpu_model, record.gpu_count, record.gpu_memory_gib) == ("A10", 1, 24)
    assert result.facts == {"gpu_1x_a10": "table"}


@pytest.mark.parametrize(
    ("item", "facts"),
    [
        # a model the table lacks, other memory: stored under Lambda's name for it
        (entry(gpu="Quadro RTX 8000 (48 GB)"), ("Quadro RTX 8000", 1, 48)),
        (entry(gpu="A10 (48 GB PCIe)"), ("A10", 1, 48)),  # the table says 24 GB
        (entry(gpu="A100 (24 GB PCIe)"), ("A100", 1, 24)),  # the table says A10
        (entry(gpus=2), ("A10", 2, 24)),  # the table says 1 GPU
    ],
)
def test_the_apis_facts_are_stored_over_the_table(
    observed_at: datetime, item: Any, facts: tuple[Any, ...]
) -> None:
    result = one(observed_at, item)
    [record] = result.records
    assert (record.gpu_model, record.gpu_count, record.gpu_memory_gib) == facts
    assert result.facts == {"gpu_1x_a10": "api"}
    assert result.unknown_instance_types == set()


def test_a_users_entry_is_taken_over_the_api(observed_at: datetime) -> None:
    entry_ = gpus.TypeOverride(provider="lambdalabs", gpu_memory_gib=23)
    overrides = gpus.Overrides(instance_types={"gpu_1x_a10": entry_})
    result = one(observed_at, entry(), gpus=overrides)
    [record] = result.records
    assert (record.gpu_model, record.gpu_count, record.gpu_memory_gib) == ("A10", 1, 23)
    assert result.facts == {"gpu_1x_a10": "config"}


def test_a_disagreement_with_the_table_says_both_sides(
    observed_at: datetime, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="collectors.lambdalabs"):
        one(observed_at, entry(gpu="A10 (48 GB PCIe)"))
    assert caplog.records[0].getMessage() == (
        "lambdalabs: gpu_1x_a10: the API says 1 x A10 48 GB, the GPU table 1 x A10 24 GB; "
        "the API's facts are stored"
    )


def test_cpu_only_types_are_ignored(observed_at: datetime) -> None:
    result = one(observed_at, entry(gpu="N/A", gpus=0), name="cpu_4x_general")
    assert (result.records, result.unknown_instance_types, result.skipped_rows) == ([], set(), 0)


def test_a_region_listed_twice_is_one_record(observed_at: datetime) -> None:
    east = {"name": "us-east-1", "description": "Virginia, USA"}
    result = one(observed_at, entry(regions_with_capacity_available=[east, east]))
    assert len(result.records) == 1


def test_missing_host_sizes_stay_unknown(observed_at: datetime) -> None:
    [record] = one(observed_at, entry(specs={"vcpus": None, "memory_gib": "200"})).records
    assert (record.vcpus, record.memory_gib) == (None, None)


@pytest.mark.parametrize(
    ("payloads", "message"),
    [
        ({}, "instance-types: answer has no data object"),
        ({"instance-types": {"data": []}}, "instance-types: answer has no data object"),
        ({"instance-types": []}, "instance-types: answer has no data object"),
        (
            {"instance-types": json.loads((FIXTURES / "error-401.json").read_text())},
            "the answer is an error: global/invalid-api-key: API key was invalid",
        ),
        (
            {"instance-types": {"data": {"a": entry(cents=None), "b": "?"}}},
            "none of the 2 instance types could be read",
        ),
    ],
)
def test_a_changed_shape_fails_loudly(
    observed_at: datetime, payloads: dict[str, Any], message: str
) -> None:
    with pytest.raises(PayloadShapeError, match=r"^lambdalabs: ") as caught:
        collector().parse(payloads, observed_at=observed_at)
    assert message in str(caught.value)


def test_an_empty_answer_is_no_records_not_an_error(observed_at: datetime) -> None:
    assert parse({"data": {}}, observed_at).records == []


# ---------------------------------------------------------------------------------------------
# fetch through `responses`


def test_fetch_sends_the_key_and_returns_the_answer(rsps: responses.RequestsMock) -> None:
    rsps.get(URL, json=answer())
    progress: list[tuple[int, int]] = []
    settings = ProviderSettings(credentials={"api_key": KEY})
    got = LambdaCollector(settings, progress=lambda *a: progress.append(a)).fetch()
    assert got == {"instance-types": answer()}
    request = rsps.calls[0].request
    assert request.headers["Authorization"] == f"Bearer {KEY}"
    assert request.headers["User-Agent"].startswith("gpu-price-tracker/")
    assert progress == [(1, 20)]  # 18 recorded entries and 2 trap entries


def test_fetch_uses_the_configured_endpoint(rsps: responses.RequestsMock) -> None:
    rsps.get("http://mirror.internal:8080/lambda/api/v1/instance-types", json={"data": {}})
    got = collector(endpoint="http://mirror.internal:8080/lambda/").fetch()
    assert got == {"instance-types": {"data": {}}}


@pytest.mark.parametrize(
    ("status", "code"), [(401, "global/invalid-api-key"), (403, "global/account-inactive")]
)
def test_fetch_auth_errors_name_the_variable(
    rsps: responses.RequestsMock, status: int, code: str
) -> None:
    body = json.loads((FIXTURES / f"error-{status}.json").read_text())
    rsps.get(URL, status=status, json=body)
    with pytest.raises(FetchError, match=rf"^lambdalabs: instance types: HTTP {status} ") as e:
        collector().fetch()
    assert "LAMBDA_API_KEY" in str(e.value) and code in str(e.value)
    assert len(rsps.calls) == 1  # a bad key is not retried


def test_fetch_without_a_key_names_the_variable() -> None:
    bare = LambdaCollector(ProviderSettings())
    with pytest.raises(MissingCredentials, match="set LAMBDA_API_KEY"):
        bare.check_credentials()
    with pytest.raises(MissingCredentials, match="set LAMBDA_API_KEY"):
        bare.fetch()


@pytest.mark.parametrize(("status", "headers"), [(429, {"Retry-After": "0"}), (503, {})])
def test_fetch_retries_then_succeeds(
    rsps: responses.RequestsMock, status: int, headers: dict[str, str]
) -> None:
    rsps.get(URL, status=status, headers=headers, json={"error": {"code": "global/x"}})
    rsps.get(URL, json={"data": {"gpu_1x_a10": entry()}})
    assert collector().fetch() == {"instance-types": {"data": {"gpu_1x_a10": entry()}}}
    assert len(rsps.calls) == 2


def test_fetch_fails_when_429_persists(rsps: responses.RequestsMock) -> None:
    rsps.get(URL, status=429, headers={"Retry-After": "0"}, body="Too Many Requests")
    with pytest.raises(FetchError, match=r"^lambdalabs: instance types: HTTP 429: Too Many"):
        collector(max_retries=1).fetch()
    assert len(rsps.calls) == 2


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"body": requests.ConnectionError("reset")}, "ConnectionError"),
        ({"body": "<html>Bad Gateway</html>"}, "answer is not JSON"),
        ({"json": {"error": {"code": "global/internal-error", "message": "x"}}}, "is an error"),
        ({"json": {"types": []}}, "answer has no data object"),
    ],
)
def test_fetch_failures(rsps: responses.RequestsMock, kwargs: dict[str, Any], message: str) -> None:
    rsps.get(URL, **kwargs)
    with pytest.raises((FetchError, PayloadShapeError), match=r"^lambdalabs: ") as caught:
        collector().fetch()
    assert message in str(caught.value)


# ---------------------------------------------------------------------------------------------
# fetch through the real urllib3 stack (loopback replay server)


def reply(body: Any = None, *, status: int = 200, **kwargs: Any) -> Exchange:
    text = json.dumps(body) if body is not None else "busy"
    return Exchange(
        match={"method": "GET", "path": "/api/v1/instance-types"},
        status=status,
        body=text.encode(),
        **kwargs,
    )


def test_replay_retry_after_is_honoured(
    serve: Callable[..., ReplayServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    small = {"data": {"gpu_1x_a10": entry()}}
    server = serve(reply(status=429, headers={"Retry-After": "1"}, times=1), reply(small))
    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)  # the wait asked for, not waited
    got = collector(endpoint=server.url).fetch()
    assert slept == [1]  # urllib3 slept as asked
    assert got == {"instance-types": small}
    assert len(server.requests) == 2


def test_replay_fixture_fetch_then_parse(
    replay: Callable[..., ReplayServer], observed_at: datetime
) -> None:
    server = replay(DEMO)
    lam = collector(endpoint=server.url, credentials={"api_key": "demo"})
    fetched = lam.parse(lam.fetch(), observed_at=observed_at)
    assert server.unmatched == []
    assert fetched.records == parse(recorded(), observed_at).records
    # 24 in regions with capacity, 3 sold out everywhere (region NULL)
    assert len(fetched.records) == 27


def test_replay_wrong_key(replay: Callable[..., ReplayServer], tmp_path: Path) -> None:
    refused = {
        "match": {"method": "GET", "path": "/api/v1/instance-types"},
        "status": 401,
        "body_file": str(FIXTURES / "error-401.json"),
    }
    recording(tmp_path, refused)
    server = replay(DEMO, tmp_path)  # the recording answers its own key only
    with pytest.raises(FetchError, match=r"HTTP 401 \(check the API key in LAMBDA_API_KEY"):
        collector(endpoint=server.url, credentials={"api_key": "stale"}).fetch()


def test_demo_recording_replays_cleanly(
    replay: Callable[..., ReplayServer], observed_at: datetime
) -> None:
    server = replay(DEMO)
    meta = json.loads((DEMO / "demo.json").read_text())
    demo = collector(endpoint=server.url, credentials={"api_key": meta["env"]["LAMBDA_API_KEY"]})
    result = demo.parse(demo.fetch(), observed_at=observed_at)
    assert server.unmatched == []
    assert result.unknown_instance_types == set() and result.skipped_rows == 0
    assert {r.gpu_model for r in result.records} >= {"H100", "B200", "GH200", "A100", "A10"}
    assert by_offer(result)["gpu_8x_h100_sxm5", "us-east-3"].price_per_hour == Decimal("31.92")
