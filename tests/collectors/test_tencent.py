"""TencentCollector: the official SDK against the loopback replay server, then parse.

The fixtures (tests/fixtures/tencent/README.md) are DescribeZoneInstanceConfigInfos answers in
the wire format; every expected number below is worked out by hand from the API's own fields
in those files. Retries run with a recorded (not slept) backoff unless a test says otherwise.
"""

from __future__ import annotations

import copy
import json
import logging
import os
import socket
import time
from collections.abc import Callable
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from collectors import gpus
from collectors.base import ParseResult, Payloads, PriceRecord, ProviderSettings
from collectors.common import ConfigError, FetchError, MissingCredentials, PayloadShapeError
from collectors.tencent.collector import CHARGE_TYPES, FAMILIES, GPU_REGIONS, TencentCollector
from tests.collectors.support import demo_of, fixtures_of, recording, signed_settings
from tracker.collecting.replay import ReplayServer
from tracker.config import from_dict

# The one recording, the demo's and these tests'; the trap rows and errors are kept apart.
DEMO = demo_of("tencent")
FIXTURES = fixtures_of("tencent")
KEYS = {"secret_id": "AKIDtest", "secret_key": "test-key"}
REGIONS = ("ap-guangzhou", "ap-shanghai", "ap-singapore")
ACTION = "DescribeZoneInstanceConfigInfos"

Replay = Callable[..., ReplayServer]


def make(
    endpoint: str | None = None,
    *,
    regions: tuple[str, ...] = REGIONS,
    retries: int = 2,
    timeout: float = 2.0,
    options: dict[str, Any] | None = None,
    credentials: dict[str, str] | None = None,
    backoff_s: float = 0.5,
    sleeps: list[float] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> TencentCollector:
    keys = KEYS if credentials is None else credentials
    settings = signed_settings(
        endpoint, keys, regions=regions, retries=retries, timeout=timeout, options=options
    )
    sleep = (sleeps if sleeps is not None else []).append
    return TencentCollector(settings, progress, backoff_s=backoff_s, sleep=sleep)


def answer(name: str) -> Any:
    """A region's recorded answer with its trap rows in (each replaces the recording's row of the
    same zone, type and charge type, or is added), or an error file."""
    if name.startswith("error-"):
        return json.loads((FIXTURES / name).read_text())
    body = json.loads((DEMO / name).read_text())
    rows = body["Response"]["InstanceTypeQuotaSet"]
    for trap in json.loads((FIXTURES / "traps.json").read_text()).get(
        name.removesuffix(".json"), []
    ):
        same = [i for i, row in enumerate(rows) if _row_key(row) == _row_key(trap)]
        if same:
            rows[same[0]] = trap
        else:
            rows.append(trap)
    return body


def _row_key(row: dict[str, Any]) -> tuple[str, str, str]:
    return row["Zone"], row["InstanceType"], row["InstanceChargeType"]


def payloads_of(*regions: str) -> Payloads:
    """What fetch returns for these regions, read straight from the files, traps in."""
    return {f"{ACTION}/{r}": answer(f"{r}.json") for r in regions}


def parse(payloads: Payloads, observed_at: datetime, **kwargs: Any) -> ParseResult:
    kwargs.setdefault("regions", tuple(p.split("/")[1] for p in payloads))
    return make(**kwargs).parse(payloads, observed_at=observed_at)


def find(result: ParseResult, **fields: Any) -> PriceRecord:
    found = [r for r in result.records if all(getattr(r, k) == v for k, v in fields.items())]
    assert len(found) == 1, found
    return found[0]


def error_answer(region: str, body_file: str, **extra: Any) -> dict[str, Any]:
    """An error the way Tencent sends it: HTTP 200, JSON, `Response.Error`."""
    return {
        "match": {"method": "POST", "headers": {"X-TC-Action": ACTION, "X-TC-Region": region}},
        "body": (FIXTURES / body_file).read_text(),
        **extra,
    }


def asked(server: ReplayServer) -> list[str]:
    return [r.headers["x-tc-region"] for r in server.requests]


def with_traps(folder: Path) -> Path:
    """A recording that answers Guangzhou with its trap rows in, served ahead of the demo's."""
    headers = {"X-TC-Action": ACTION, "X-TC-Region": "ap-guangzhou"}
    guangzhou = json.dumps(answer("ap-guangzhou.json"))
    return recording(folder, {"match": {"method": "POST", "headers": headers}, "body": guangzhou})


@pytest.fixture
def fetched(replay: Replay, tmp_path: Path) -> Payloads:
    server = replay(with_traps(tmp_path), DEMO)
    payloads = make(server.url).fetch()
    assert server.unmatched == []
    return payloads


@pytest.fixture
def result(fetched: Payloads, observed_at: datetime) -> ParseResult:
    return make().parse(fetched, observed_at=observed_at)


# -- parse: records in full, checked by hand -----------------------------------------------


def test_on_demand_is_one_regional_record_when_zones_agree(result: ParseResult) -> None:
    # ap-guangzhou-3 and -4 both: UnitPrice 8.68, UnitPriceDiscount 8.68, ChargeUnit HOUR; the
    # cheaper steps 2 and 3 (4.34, 2.95 after 96 / 360 h) are not the list price.
    on_demand = find(result, region="ap-guangzhou", instance_type="GN7.2XLARGE32",
                     price_kind="on_demand")  # fmt: skip
    assert on_demand == (
        PriceRecord(
            provider="tencent",
            region="ap-guangzhou",
            zone=None,
            instance_type="GN7.2XLARGE32",
            price_kind="on_demand",
            term_months=None,
            payment_option=None,
            offering_class=None,
            currency="CNY",
            price_per_hour=Decimal("8.680000"),
            upfront_total=None,
            gpu_model="T4",
            gpu_count=1,
            gpu_memory_gib=16,
            vcpus=8,
            memory_gib=32,
            available=True,
        )
    )


def test_spot_is_the_discounted_price_per_zone(result: ParseResult) -> None:
    # ap-guangzhou-3, all strings: UnitPrice "8.680000", UnitPriceDiscount "1.736000",
    # Discount "20.000000" (20 % of list: 8.68 x 0.2 = 1.736). The price paid is 1.736.
    spot = find(result, zone="ap-guangzhou-3", instance_type="GN7.2XLARGE32", price_kind="spot")
    assert spot == PriceRecord(
        provider="tencent",
        region="ap-guangzhou",
        zone="ap-guangzhou-3",
        instance_type="GN7.2XLARGE32",
        price_kind="spot",
        term_months=None,
        payment_option=None,
        offering_class=None,
        currency="CNY",
        price_per_hour=Decimal("1.736000"),
        upfront_total=None,
        gpu_model="T4",
        gpu_count=1,
        gpu_memory_gib=16,
        vcpus=8,
        memory_gib=32,
        available=True,
    )
    # ap-guangzhou-4: Discount 22.0 would make 8.68 x 0.22 = 1.9096, but the API says
    # UnitPriceDiscount 1.91, and that is what is billed: nothing is derived from Discount.
    other = find(result, zone="ap-guangzhou-4", instance_type="GN7.2XLARGE32", price_kind="spot")
    assert other.price_per_hour == Decimal("1.910000")
    # GT4 in ap-guangzhou-6: UnitPrice 227.54, Discount 20.0 (= 45.508), UnitPriceDiscount 45.51.
    gt4 = find(result, instance_type="GT4.41XLARGE948", price_kind="spot")
    assert (gt4.zone, gt4.price_per_hour) == ("ap-guangzhou-6", Decimal("45.510000"))


def test_prepaid_one_year_is_the_total_over_8760_hours(result: ParseResult) -> None:
    # GN7.2XLARGE32 PREPAID in ap-guangzhou-3 and -4: DiscountPriceOneYear 47736.0
    # (OriginalPriceOneYear 56160.0, DiscountOneYear 85.0).
    # 47736 / 8760 = 5 + 3936/8760 = 5.449315068... -> 5.449315; recurring 0, upfront the total.
    assert find(
        result, instance_type="GN7.2XLARGE32", price_kind="reserved", term_months=12
    ) == PriceRecord(
        provider="tencent",
        region="ap-guangzhou",
        zone=None,
        instance_type="GN7.2XLARGE32",
        price_kind="reserved",
        term_months=12,
        payment_option=None,
        offering_class=None,
        currency="CNY",
        price_per_hour=Decimal("5.449315"),
        upfront_total=Decimal("47736.000000"),
        gpu_model="T4",
        gpu_count=1,
        gpu_memory_gib=16,
        vcpus=8,
        memory_gib=32,
        available=True,
    )


def test_every_prepaid_term_of_gt4(result: ParseResult) -> None:
    # GT4.41XLARGE948 PREPAID (ap-guangzhou-4 SELL, -6 SOLD_OUT, same prices):
    #   DiscountPrice 114300.0 (one month):  114300 / 730   = 156 + 420/730     = 156.575342...
    #   DiscountPriceOneYear 1143000.0:      1143000 / 8760 = 130 + 4200/8760   = 130.479452...
    #   DiscountPriceThreeYear 2743200.0:    2743200 / 26280 = 104 + 10080/26280 = 104.3835616...
    #   DiscountPriceFiveYear null: not offered, no record.
    got = {
        r.term_months: (r.price_per_hour, r.upfront_total, r.zone, r.available)
        for r in result.records
        if r.instance_type == "GT4.41XLARGE948" and r.price_kind == "reserved"
    }
    # one zone still sells it, so the regional offer is available
    assert got == {
        1: (Decimal("156.575342"), Decimal("114300.000000"), None, True),
        12: (Decimal("130.479452"), Decimal("1143000.000000"), None, True),
        36: (Decimal("104.383562"), Decimal("2743200.000000"), None, True),
    }
    full = find(result, instance_type="GT4.41XLARGE948", price_kind="reserved", term_months=36)
    assert (full.gpu_model, full.gpu_count, full.gpu_memory_gib) == ("A100", 8, 40)
    assert (full.vcpus, full.memory_gib) == (164, 948)


def test_one_month_and_three_years_and_zero_five_years(result: ParseResult) -> None:
    # GN7.2XLARGE32: DiscountPrice 4680.0 -> 4680 / 730 = 6 + 300/730 = 6.410958904... ;
    # DiscountPriceThreeYear 101088.0 -> 101088 / 26280 = 3 + 22248/26280 = 3.846575342... ;
    # DiscountPriceFiveYear 0.0 -> not offered.
    terms = {
        r.term_months: r.price_per_hour
        for r in result.records
        if r.instance_type == "GN7.2XLARGE32" and r.region == "ap-guangzhou"
        if r.price_kind == "reserved"
    }
    assert terms == {1: Decimal("6.410959"), 12: Decimal("5.449315"), 36: Decimal("3.846575")}


def test_sold_out_is_kept_as_unavailable(result: ParseResult) -> None:
    # PNV4.7XLARGE116 in ap-guangzhou-7: Status SOLD_OUT, UnitPriceDiscount 11.92.
    pnv4 = find(result, instance_type="PNV4.7XLARGE116")
    assert (pnv4.price_kind, pnv4.price_per_hour, pnv4.available) == (
        "on_demand",
        Decimal("11.920000"),
        False,
    )
    assert (pnv4.gpu_model, pnv4.gpu_count, pnv4.gpu_memory_gib) == ("A10", 1, 24)
    # ap-shanghai-4's spot GN7 is sold out but priced (1.96): kept, per zone, unavailable.
    sold_out = find(result, zone="ap-shanghai-4", price_kind="spot")
    assert (sold_out.price_per_hour, sold_out.available) == (Decimal("1.960000"), False)


def test_a_quarter_of_a_t4(result: ParseResult) -> None:
    # GN7.LARGE20 is a 1/4 T4 vGPU (GpuCount 0.25): count from the GPU table, memory of one T4.
    quarter = find(result, instance_type="GN7.LARGE20")
    assert (quarter.gpu_count, quarter.gpu_memory_gib, quarter.price_per_hour) == (
        0.25,
        16,
        Decimal("2.370000"),
    )


def test_zones_that_disagree_keep_their_own_prices(
    observed_at: datetime, caplog: pytest.LogCaptureFixture
) -> None:
    # GN10Xp.2XLARGE40 pay-as-you-go: 21.34 in ap-guangzhou-3, 21.56 in -4.
    with caplog.at_level(logging.WARNING, logger="collectors.tencent"):
        result = parse(payloads_of("ap-guangzhou"), observed_at)
    assert [r.getMessage() for r in caplog.records if "per zone" in r.getMessage()] == [
        "tencent: GN10Xp.2XLARGE40 on_demand in ap-guangzhou is priced differently per zone "
        "(ap-guangzhou-3 21.340000, ap-guangzhou-4 21.560000); stored per zone"
    ]
    got = {
        r.zone: r.price_per_hour
        for r in result.records
        if r.instance_type == "GN10Xp.2XLARGE40" and r.price_kind == "on_demand"
    }
    assert got == {"ap-guangzhou-3": Decimal("21.340000"), "ap-guangzhou-4": Decimal("21.560000")}


def test_every_offer_and_nothing_else(result: ParseResult) -> None:
    offers = {
        (r.region, r.zone, r.instance_type, r.price_kind, r.term_months): r.price_per_hour
        for r in result.records
    }
    assert len(offers) == len(result.records)
    gz, sh, sg = "ap-guangzhou", "ap-shanghai", "ap-singapore"
    assert offers == {
        (gz, None, "GN7.2XLARGE32", "on_demand", None): Decimal("8.680000"),
        (gz, "ap-guangzhou-3", "GN7.2XLARGE32", "spot", None): Decimal("1.736000"),
        (gz, "ap-guangzhou-4", "GN7.2XLARGE32", "spot", None): Decimal("1.910000"),
        (gz, None, "GN7.2XLARGE32", "reserved", 1): Decimal("6.410959"),
        (gz, None, "GN7.2XLARGE32", "reserved", 12): Decimal("5.449315"),
        (gz, None, "GN7.2XLARGE32", "reserved", 36): Decimal("3.846575"),
        (gz, None, "GN7.LARGE20", "on_demand", None): Decimal("2.370000"),
        (gz, None, "GT4.41XLARGE948", "on_demand", None): Decimal("227.540000"),
        (gz, "ap-guangzhou-6", "GT4.41XLARGE948", "spot", None): Decimal("45.510000"),
        (gz, None, "GT4.41XLARGE948", "reserved", 1): Decimal("156.575342"),
        (gz, None, "GT4.41XLARGE948", "reserved", 12): Decimal("130.479452"),
        (gz, None, "GT4.41XLARGE948", "reserved", 36): Decimal("104.383562"),
        (gz, None, "PNV4.7XLARGE116", "on_demand", None): Decimal("11.920000"),
        (gz, "ap-guangzhou-3", "GN10Xp.2XLARGE40", "on_demand", None): Decimal("21.340000"),
        (gz, "ap-guangzhou-4", "GN10Xp.2XLARGE40", "on_demand", None): Decimal("21.560000"),
        (sh, None, "GN7.2XLARGE32", "on_demand", None): Decimal("8.680000"),
        (sh, "ap-shanghai-2", "GN7.2XLARGE32", "spot", None): Decimal("2.040000"),
        (sh, "ap-shanghai-4", "GN7.2XLARGE32", "spot", None): Decimal("1.960000"),
        (sh, None, "GT4.4XLARGE96", "on_demand", None): Decimal("28.440000"),
        # 14290 / 730 = 19.575342...; 142900 / 8760 = 16.312785...; 342960 / 26280 = 13.050228...
        (sh, None, "GT4.4XLARGE96", "reserved", 1): Decimal("19.575342"),
        (sh, None, "GT4.4XLARGE96", "reserved", 12): Decimal("16.312785"),
        (sh, None, "GT4.4XLARGE96", "reserved", 36): Decimal("13.050228"),
        (sh, None, "PNV4.14XLARGE232", "on_demand", None): Decimal("23.840000"),
        (sg, None, "GN7.2XLARGE32", "on_demand", None): Decimal("9.120000"),
        (sg, "ap-singapore-1", "GN7.2XLARGE32", "spot", None): Decimal("2.740000"),
        (sg, None, "GN10X.2XLARGE40", "on_demand", None): Decimal("19.800000"),
        # 9900 / 730 = 13.561643...; 99000 / 8760 = 11.301369...; three years 0.0: not sold
        (sg, None, "GN10X.2XLARGE40", "reserved", 1): Decimal("13.561644"),
        (sg, None, "GN10X.2XLARGE40", "reserved", 12): Decimal("11.301370"),
    }
    # PNV4.7XLARGE116 spot answers UnitPriceDiscount 0.0: not offered, no record, one skip.
    assert result.skipped_rows == 1
    assert result.unknown_instance_types == {"HCCPNV4h.48XLARGE1024"}


def test_currency_is_the_configured_site(fetched: Payloads, observed_at: datetime) -> None:
    usd = make(options={"currency": "USD"}).parse(fetched, observed_at=observed_at)
    assert {r.currency for r in usd.records} == {"USD"}
    assert {r.currency for r in make().parse(fetched, observed_at=observed_at).records} == {"CNY"}


@pytest.mark.parametrize("currency", ["EUR", "cny", "", 7])
def test_any_other_currency_is_a_config_error(currency: Any) -> None:
    with pytest.raises(ConfigError, match=r"^providers\.tencent\.currency: .*CNY, USD"):
        make(options={"currency": currency})


def test_config_toml_checks_the_currency_when_loaded() -> None:
    # A bad value is a usage error (exit 2, nothing written), found before any collection.
    with pytest.raises(
        ConfigError, match=r"^providers\.tencent\.currency: expected one of CNY, USD, got 'EUR'$"
    ):
        from_dict({"providers": {"tencent": {"currency": "EUR"}}}, source=None)
    config = from_dict({"providers": {"tencent": {"currency": "USD"}}}, source=None)
    settings, missing = config.providers["tencent"].settings({})
    assert settings.options == {"currency": "USD"}
    assert missing == ["TENCENTCLOUD_SECRET_ID", "TENCENTCLOUD_SECRET_KEY"]
    assert TencentCollector(settings).currency == "USD"


def test_numbers_as_strings_give_the_same_records(observed_at: datetime) -> None:
    payloads = payloads_of("ap-guangzhou")
    as_text = copy.deepcopy(payloads)
    for row in as_text[f"{ACTION}/ap-guangzhou"]["Response"]["InstanceTypeQuotaSet"]:
        row["Price"] = {
            k: f"{v:.6f}" if isinstance(v, float) else v for k, v in row["Price"].items()
        }
        row["Cpu"], row["GpuCount"] = str(row["Cpu"]), str(row["GpuCount"])
    assert parse(as_text, observed_at).records == parse(payloads, observed_at).records


def test_payloads_are_json_and_reparse_the_same(fetched: Payloads, observed_at: datetime) -> None:
    assert set(fetched) == {f"{ACTION}/{r}" for r in REGIONS}
    again = json.loads(json.dumps(fetched))
    assert make().parse(again, observed_at=observed_at) == make().parse(
        fetched, observed_at=observed_at
    )


def test_parse_keeps_only_the_configured_regions(fetched: Payloads, observed_at: datetime) -> None:
    only = make(regions=("ap-shanghai",)).parse(fetched, observed_at=observed_at)
    assert {r.region for r in only.records} == {"ap-shanghai"}
    assert len(only.records) == 8


# -- parse: rows not understood, shapes not known ------------------------------------------


def _guangzhou_with(change: Callable[[list[dict[str, Any]]], None]) -> Payloads:
    payloads = payloads_of("ap-guangzhou")
    change(payloads[f"{ACTION}/ap-guangzhou"]["Response"]["InstanceTypeQuotaSet"])
    return payloads


def _first_on_demand(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return rows[0]  # GN7.2XLARGE32, ap-guangzhou-3, POSTPAID_BY_HOUR


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda row: row["Price"].update(ChargeUnit="GB"), "ChargeUnit 'GB', not HOUR"),
        (lambda row: row["Price"].update(UnitPriceDiscount="8,68"), "UnitPriceDiscount is '8,68'"),
        (lambda row: row["Price"].update(UnitPriceDiscount=-1), "UnitPriceDiscount is -1"),
        (lambda row: row["Price"].update(UnitPriceDiscount=9.5), "UnitPriceDiscount 9.5 above"),
        (lambda row: row.update(InstanceChargeType="CDHPAID"), "charge type CDHPAID"),
        (lambda row: row.update(Zone="ap-shanghai-2"), "zone ap-shanghai-2 is not in"),
        (lambda row: row.pop("Price"), "no Price object"),
        (lambda row: row.pop("InstanceType"), "lacks one of Zone, InstanceType"),
    ],
)
def test_a_row_not_understood_is_logged_and_skipped(
    change: Callable[[dict[str, Any]], Any],
    reason: str,
    observed_at: datetime,
    caplog: pytest.LogCaptureFixture,
) -> None:
    payloads = _guangzhou_with(lambda rows: change(_first_on_demand(rows)))
    with caplog.at_level(logging.WARNING, logger="collectors.tencent"):
        result = parse(payloads, observed_at)
    assert result.skipped_rows == 2  # this row, and PNV4's spot row that is not offered
    warnings = [r.getMessage() for r in caplog.records if "skipped" in r.getMessage()]
    assert len(warnings) == 1
    assert warnings[0].startswith("tencent: DescribeZoneInstanceConfigInfos/ap-guangzhou item 0:")
    assert reason in warnings[0]
    # ap-guangzhou-4's row still gives the regional pay-as-you-go price: no guess from -3
    on_demand = find(result, instance_type="GN7.2XLARGE32", price_kind="on_demand")
    assert on_demand.price_per_hour == Decimal("8.680000")


def test_a_row_that_is_not_an_object_is_skipped(observed_at: datetime) -> None:
    result = parse(_guangzhou_with(lambda rows: rows.insert(0, "GN7.2XLARGE32")), observed_at)
    assert result.skipped_rows == 2
    assert len(result.records) == 15


def test_zero_pay_as_you_go_price_is_no_record(observed_at: datetime) -> None:
    def zero(rows: list[dict[str, Any]]) -> None:
        for row in rows[:2]:  # GN7.2XLARGE32 on-demand in both zones
            row["Price"].update(UnitPrice=0.0, UnitPriceDiscount=0.0)

    result = parse(_guangzhou_with(zero), observed_at)
    # no pay-as-you-go record, and nothing put in its place; spot and prepaid stay as they were
    kinds = [r.price_kind for r in result.records if r.instance_type == "GN7.2XLARGE32"]
    assert sorted(kinds) == ["reserved", "reserved", "reserved", "spot", "spot"]
    assert result.skipped_rows == 3


def test_repeated_rows(observed_at: datetime, caplog: pytest.LogCaptureFixture) -> None:
    def repeat(rows: list[dict[str, Any]]) -> None:
        rows.append(copy.deepcopy(rows[2]))  # the same spot row again
        rows.append(copy.deepcopy(rows[4]))  # a prepaid row again: three terms, one row
        dearer = copy.deepcopy(rows[3])
        dearer["Price"]["UnitPriceDiscount"] = 2.5
        rows.append(dearer)  # a second, different spot price for ap-guangzhou-4

    with caplog.at_level(logging.WARNING, logger="collectors.tencent"):
        result = parse(_guangzhou_with(repeat), observed_at)
    assert find(result, zone="ap-guangzhou-4", price_kind="spot").price_per_hour == Decimal("1.91")
    assert result.skipped_rows == 4  # the three repeats and PNV4's spot row (not offered)
    assert len(result.records) == 15
    assert [r.getMessage() for r in caplog.records if "second price" in r.getMessage()] == [
        "tencent: DescribeZoneInstanceConfigInfos/ap-guangzhou item 19: second price 2.500000 "
        "for GN7.2XLARGE32 spot; keeping 1.910000"
    ]


def test_unknown_status_is_not_a_guess(observed_at: datetime) -> None:
    result = parse(_guangzhou_with(lambda rows: rows[6].update(Status="PRESALE")), observed_at)
    assert find(result, instance_type="GN7.LARGE20").available is None


def test_gpu_count_the_api_contradicts(
    observed_at: datetime, caplog: pytest.LogCaptureFixture
) -> None:
    # GpuCount is the answer's own fact (physical GPUs, below 1 for a vGPU share): it wins
    # over the table, and the contradiction is logged once for the type.
    with caplog.at_level(logging.WARNING, logger="collectors.tencent"):
        result = parse(_guangzhou_with(lambda rows: rows[6].update(GpuCount=0.5)), observed_at)
    assert find(result, instance_type="GN7.LARGE20").gpu_count == 0.5
    assert result.facts["GN7.LARGE20"] == "api"
    assert [r.getMessage() for r in caplog.records if "GN7.LARGE20" in r.getMessage()] == [
        "tencent: GN7.LARGE20: the API says 0.5 x T4 16 GiB, the GPU table 0.25 x T4 16 GiB; "
        "using the API's"
    ]


def test_every_priced_type_has_its_facts_from_the_answer(result: ParseResult) -> None:
    assert result.facts == {
        t: "api"
        for t in (
            "GN7.2XLARGE32", "GN7.LARGE20", "GT4.41XLARGE948", "PNV4.7XLARGE116",
            "GN10Xp.2XLARGE40", "GT4.4XLARGE96", "PNV4.14XLARGE232", "GN10X.2XLARGE40",
        )
    }  # fmt: skip
    summary = result.gpu_summary()
    assert (summary.priced, summary.from_api) == (8, 8)
    assert summary.without_facts == ["HCCPNV4h.48XLARGE1024"]


def test_a_size_the_table_lacks_is_placed_by_its_family(observed_at: datetime) -> None:
    # The recorded PNV4.7XLARGE116 row as a size the table does not list (its name invented):
    # GpuCount 16.0, Cpu 448, Memory 1864, UnitPriceDiscount 190.72, InstanceFamily PNV4, which
    # [names.tencent] names the A10; every listed PNV4 size has 24 GiB per GPU.
    def bigger(rows: list[dict[str, Any]]) -> None:
        [pnv4] = [r for r in rows if r["InstanceType"] == "PNV4.7XLARGE116"
                  and r["InstanceChargeType"] == "POSTPAID_BY_HOUR"]  # fmt: skip
        row = copy.deepcopy(pnv4)
        row.update(InstanceType="PNV4.112XLARGE1864", GpuCount=16.0, Gpu=16, Cpu=448,
                   Memory=1864, Status="SELL")  # fmt: skip
        row["Price"].update(UnitPrice=190.72, UnitPriceDiscount=190.72)
        rows.append(row)

    assert gpus.lookup("tencent", "PNV4.112XLARGE1864") is None
    result = parse(_guangzhou_with(bigger), observed_at)
    assert result.facts["PNV4.112XLARGE1864"] == "api"
    record = find(result, instance_type="PNV4.112XLARGE1864")
    assert (record.gpu_model, record.gpu_count, record.gpu_memory_gib) == ("A10", 16, 24)
    assert (record.vcpus, record.memory_gib, record.price_per_hour) == (
        448,
        1864,
        Decimal("190.720000"),
    )


def test_a_count_without_a_model_is_stored_with_the_model_unknown(
    observed_at: datetime,
) -> None:
    # HCCPNV4h.48XLARGE1024: GpuCount 8.0, a family nobody names. With the user's per-GPU
    # memory (and no model) it is priced with gpu_model None and named in the summary.
    mine = gpus.Overrides(
        {"HCCPNV4h.48XLARGE1024": gpus.TypeOverride(provider="tencent", gpu_memory_gib=80)}
    )
    try:
        collector = TencentCollector(ProviderSettings(regions=("ap-guangzhou",), gpus=mine))
        result = collector.parse(payloads_of("ap-guangzhou"), observed_at=observed_at)
    finally:
        gpus.install(None)
    record = find(result, instance_type="HCCPNV4h.48XLARGE1024")
    assert (record.gpu_model, record.gpu_count, record.gpu_memory_gib) == (None, 8, 80)
    assert result.facts["HCCPNV4h.48XLARGE1024"] == "config"
    assert result.unknown_instance_types == set()
    assert result.gpu_summary().without_facts == ["HCCPNV4h.48XLARGE1024"]


def test_unknown_types_are_reported(
    observed_at: datetime, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="collectors.tencent"):
        result = parse(payloads_of("ap-guangzhou"), observed_at)
    assert result.unknown_instance_types == {"HCCPNV4h.48XLARGE1024"}
    assert not [r for r in result.records if r.instance_type.startswith("HCC")]
    assert (
        "tencent: instance types without GPU facts (neither the GPU table nor their family "
        "names the GPU): HCCPNV4h.48XLARGE1024" in [r.getMessage() for r in caplog.records]
    )


@pytest.mark.parametrize(
    ("payloads", "message"),
    [
        ({"ap-guangzhou": {}}, "unexpected payload key 'ap-guangzhou'"),
        ({f"{ACTION}/ap-guangzhou": {"Response": {}}}, "no Response.InstanceTypeQuotaSet list"),
        ({f"{ACTION}/ap-guangzhou": []}, "no Response.InstanceTypeQuotaSet list"),
        (
            {f"{ACTION}/ap-guangzhou": {"Response": {"InstanceTypeQuotaSet": {"Zone": "x"}}}},
            "no Response.InstanceTypeQuotaSet list",
        ),
        (
            {f"{ACTION}/ap-guangzhou": answer("error-internal.json")},
            "an error answer: InternalError",
        ),
    ],
)
def test_a_changed_shape_fails_loudly(
    payloads: Payloads, message: str, observed_at: datetime
) -> None:
    with pytest.raises(PayloadShapeError, match=message):
        make(regions=("ap-guangzhou",)).parse(payloads, observed_at=observed_at)


# -- fetch: requests and regions -----------------------------------------------------------


def test_one_signed_request_per_region(replay: Replay) -> None:
    server = replay(DEMO)
    make(server.url).fetch()
    assert asked(server) == list(REGIONS)
    for request in server.requests:
        assert request.method == "POST" and request.path == "/"
        assert request.headers["x-tc-action"] == ACTION
        assert request.headers["x-tc-version"] == "2017-03-12"
        assert request.headers["x-tc-language"] == "en-US"
        assert request.headers["content-type"] == "application/json"
        assert request.headers["authorization"].startswith("TC3-HMAC-SHA256 Credential=AKIDtest/")
        assert (
            "/cvm/tc3_request, SignedHeaders=content-type;host,"
            in (request.headers["authorization"])
        )
        assert request.json() == {
            "Filters": [
                {"Name": "instance-family", "Values": list(FAMILIES)},
                {"Name": "instance-charge-type", "Values": list(CHARGE_TYPES)},
            ]
        }
    assert set(CHARGE_TYPES) == {"POSTPAID_BY_HOUR", "SPOTPAID", "PREPAID"}


def test_every_family_of_the_gpu_table_is_asked_for() -> None:
    families = {name.split(".")[0] for name in gpus.instance_types("tencent")}
    assert families <= set(FAMILIES)
    assert {"GN7", "GN10X", "GN10Xp", "GT4", "PNV4", "GN7vw"} <= families


def test_defaults_are_the_gpu_regions() -> None:
    assert make(regions=()).regions == GPU_REGIONS
    assert {"ap-guangzhou", "ap-shanghai", "ap-beijing", "na-siliconvalley"} <= set(GPU_REGIONS)


def test_progress_after_every_region(replay: Replay, tmp_path: Path) -> None:
    server = replay(with_traps(tmp_path), DEMO)
    calls: list[tuple[int, int]] = []
    make(server.url, progress=lambda regions, items: calls.append((regions, items))).fetch()
    assert calls == [(1, 17), (2, 24), (3, 28)]  # 17, 7 and 4 rows


def test_endpoint_must_be_the_root_of_a_host() -> None:
    with pytest.raises(ConfigError, match=r"^providers\.tencent\.endpoint: .*root"):
        make("https://cvm.tencentcloudapi.com/v3")


def test_missing_credentials_name_both_variables() -> None:
    collector = make(credentials={"secret_id": "AKIDonly"})
    with pytest.raises(MissingCredentials) as err:
        collector.check_credentials()
    assert err.value.variable == "TENCENTCLOUD_SECRET_ID and TENCENTCLOUD_SECRET_KEY"
    with pytest.raises(MissingCredentials):
        collector.fetch()


# -- fetch: errors inside HTTP 200, throttling, failures -----------------------------------


def test_auth_failure_in_http_200_fails_the_run(replay: Replay, tmp_path: Path) -> None:
    server = replay(recording(tmp_path, error_answer("ap-guangzhou", "error-authfailure.json")))
    sleeps: list[float] = []
    with pytest.raises(FetchError) as err:
        make(server.url, sleeps=sleeps).fetch()
    message = str(err.value)
    assert message.startswith(
        "tencent: DescribeZoneInstanceConfigInfos ap-guangzhou: AuthFailure.SignatureFailure: "
        "The provided credentials could not be validated."
    )
    assert "RequestId f1c2b3a4-0d9e-4f8a-9b7c-6e5d4c3b2a10" in message
    assert "check the key pair in TENCENTCLOUD_SECRET_ID and TENCENTCLOUD_SECRET_KEY" in message
    assert (asked(server), sleeps) == (["ap-guangzhou"], [])  # never retried


def test_error_with_a_charset_in_content_type_is_still_an_error(
    replay: Replay, tmp_path: Path
) -> None:
    # The SDK only looks for Response.Error under exactly "application/json".
    error = error_answer(
        "ap-guangzhou", "error-authfailure.json", content_type="application/json; charset=utf-8"
    )
    server = replay(recording(tmp_path, error))
    with pytest.raises(FetchError, match=r"ap-guangzhou: AuthFailure\.SignatureFailure"):
        make(server.url).fetch()


def test_throttling_then_success(replay: Replay, tmp_path: Path) -> None:
    throttled = error_answer("ap-shanghai", "error-throttled.json", times=2)
    server = replay(recording(tmp_path, throttled), DEMO)
    sleeps: list[float] = []
    payloads = make(server.url, sleeps=sleeps, backoff_s=0.5).fetch()
    assert asked(server) == ["ap-guangzhou", *["ap-shanghai"] * 3, "ap-singapore"]
    assert sleeps == [0.5, 1.0]  # exponential backoff
    assert payloads[f"{ACTION}/ap-shanghai"] == answer("ap-shanghai.json")


def test_throttling_until_it_gives_up(replay: Replay, tmp_path: Path) -> None:
    server = replay(recording(tmp_path, error_answer("ap-guangzhou", "error-throttled.json")))
    sleeps: list[float] = []
    with pytest.raises(FetchError) as err:
        make(server.url, retries=3, backoff_s=0.25, sleeps=sleeps).fetch()
    assert str(err.value).startswith(
        "tencent: DescribeZoneInstanceConfigInfos ap-guangzhou: RequestLimitExceeded: "
        "Your current request times equals to `41` in a second"
    )
    assert str(err.value).endswith("; gave up after 4 attempts")
    assert sleeps == [0.25, 0.5, 1.0]
    assert asked(server) == ["ap-guangzhou"] * 4


def test_backoff_is_capped(replay: Replay, tmp_path: Path) -> None:
    server = replay(recording(tmp_path, error_answer("ap-guangzhou", "error-throttled.json")))
    sleeps: list[float] = []
    with pytest.raises(FetchError):
        make(server.url, retries=3, backoff_s=8, sleeps=sleeps).fetch()
    assert sleeps == [8, 16, 20]


def test_backoff_really_waits(replay: Replay, tmp_path: Path) -> None:
    throttled = error_answer("ap-guangzhou", "error-throttled.json", times=2)
    server = replay(recording(tmp_path, throttled), DEMO)
    settings = ProviderSettings(
        endpoint=server.url, regions=("ap-guangzhou",), credentials=dict(KEYS), max_retries=2
    )
    start = time.monotonic()
    payloads = TencentCollector(settings, backoff_s=0.05).fetch()  # the real time.sleep
    assert time.monotonic() - start >= 0.05 + 0.1
    assert list(payloads) == [f"{ACTION}/ap-guangzhou"]


def test_a_region_that_fails_fails_the_whole_run(replay: Replay, tmp_path: Path) -> None:
    failing = error_answer("ap-shanghai", "error-internal.json")
    server = replay(recording(tmp_path, failing), DEMO)
    calls: list[tuple[int, int]] = []
    sleeps: list[float] = []
    collector = make(server.url, sleeps=sleeps, progress=lambda *a: calls.append(a))
    with pytest.raises(FetchError, match=r"ap-shanghai: InternalError: An internal error"):
        collector.fetch()
    # guangzhou was fetched, but nothing of it is returned; singapore is never asked
    assert asked(server) == ["ap-guangzhou", "ap-shanghai"]
    assert (calls, sleeps) == ([(1, 16)], [])  # the recording's 16 Guangzhou rows


def test_http_errors_are_retried_then_fail(replay: Replay, tmp_path: Path) -> None:
    bad_gateway = {
        "status": 502,
        "content_type": "text/html",
        "body": "<html>502 Bad Gateway</html>",
    }
    down = {"match": {"method": "POST"}, **bad_gateway}
    server = replay(recording(tmp_path, {**down, "times": 1}), DEMO)
    make(server.url, regions=("ap-singapore",)).fetch()
    assert asked(server) == ["ap-singapore", "ap-singapore"]

    server = replay(recording(tmp_path / "down", down))
    with pytest.raises(FetchError) as err:
        make(server.url, regions=("ap-singapore",), retries=1).fetch()
    assert str(err.value) == (
        "tencent: DescribeZoneInstanceConfigInfos ap-singapore: ServerNetworkError: "
        "<html>502 Bad Gateway</html>; gave up after 2 attempts"
    )


def test_an_answer_that_is_not_json(replay: Replay, tmp_path: Path) -> None:
    page = {"match": {"method": "POST"}, "content_type": "text/html", "body": "<html>login</html>"}
    server = replay(recording(tmp_path, page))
    with pytest.raises(FetchError, match=r"ap-singapore: InvalidAnswer: the answer is not JSON"):
        make(server.url, regions=("ap-singapore",)).fetch()


def test_an_answer_without_the_quota_set(replay: Replay, tmp_path: Path) -> None:
    odd = {"match": {"method": "POST"}, "body": json.dumps({"Response": {"RequestId": "r"}})}
    server = replay(recording(tmp_path, odd))
    with pytest.raises(PayloadShapeError, match=r"ap-singapore: the answer has no Response\."):
        make(server.url, regions=("ap-singapore",)).fetch()


def test_unreachable_endpoint_becomes_fetch_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    sleeps: list[float] = []
    collector = make(f"http://127.0.0.1:{closed_port}", regions=("ap-singapore",), retries=1,
                     sleeps=sleeps)  # fmt: skip
    with pytest.raises(FetchError, match=r"ap-singapore: ClientNetworkError: .*gave up after 2"):
        collector.fetch()
    assert sleeps == [0.5]


# -- the offline demo recording ------------------------------------------------------------


def test_demo_recording_answers_every_request(replay: Replay, observed_at: datetime) -> None:
    server = replay(DEMO)
    meta = json.loads((DEMO / "demo.json").read_text())
    collector = make(server.url, regions=tuple(meta["regions"]))
    result = collector.parse(collector.fetch(), observed_at=observed_at)
    assert server.unmatched == []
    assert (result.unknown_instance_types, result.skipped_rows) == (set(), 1)
    kinds = [r.price_kind for r in result.records]
    assert (kinds.count("on_demand"), kinds.count("spot"), kinds.count("reserved")) == (10, 6, 11)
    assert {r.gpu_model for r in result.records} == {"T4", "A100", "A10", "V100"}


# -- the real API (opt-in: pytest --live) --------------------------------------------------


@pytest.mark.live
@pytest.mark.skipif(
    not (os.environ.get("TENCENTCLOUD_SECRET_ID") and os.environ.get("TENCENTCLOUD_SECRET_KEY")),
    reason="needs TENCENTCLOUD_SECRET_ID and TENCENTCLOUD_SECRET_KEY",
)
def test_live_guangzhou(observed_at: datetime) -> None:
    """What the fixtures cannot tell: the real answer's shape and the fields' meaning."""
    keys = {
        "secret_id": os.environ["TENCENTCLOUD_SECRET_ID"],
        "secret_key": os.environ["TENCENTCLOUD_SECRET_KEY"],
    }
    collector = make(regions=("ap-guangzhou",), credentials=keys, timeout=60, backoff_s=1)
    result = collector.parse(collector.fetch(), observed_at=observed_at)
    assert {"on_demand", "spot", "reserved"} <= {r.price_kind for r in result.records}
    assert {r.term_months for r in result.records if r.term_months} <= {1, 12, 36, 60}
    on_demand = {
        (r.instance_type, r.zone): r.price_per_hour
        for r in result.records
        if r.price_kind == "on_demand"
    }
    for r in result.records:
        if r.price_kind == "spot":
            assert r.zone and r.zone.startswith("ap-guangzhou-")
            assert r.price_per_hour < on_demand.get((r.instance_type, None), Decimal("1e9"))
