"""The store's one validation of every price, on a real DuckDB file: per class of hostile row,
the row is skipped and counted under its reason, the rest of the collection lands as if it
were not there, and the bad offer's current price is neither replaced nor closed.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pytest

from collectors import collector_class
from collectors.base import ParseResult, PriceRecord
from collectors.common import ConfigError, PayloadShapeError
from storage.fx import FxRate
from storage.store import Store
from storage.writes.validate import PriceLimits, parse_limits
from tracker.cli.screen.render import _notes
from tracker.collecting import pipeline
from tracker.collecting.demo import demo_setup
from tracker.collecting.isolation import Fetched
from tracker.config import from_dict

T0 = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)
T1 = T0 + timedelta(hours=1)
# The People's Bank of China central parity the shipped config.toml carries.
CNY = FxRate.per_usd("CNY", date(2026, 1, 8), Decimal("7.0197"), None)


def offer(itype: str, price: str, **changes: Any) -> PriceRecord:
    """An on-demand price of an 8-GPU machine in us-east-1."""
    record = PriceRecord(
        provider="aws",
        region="us-east-1",
        zone=None,
        instance_type=itype,
        price_kind="on_demand",
        term_months=None,
        payment_option=None,
        offering_class=None,
        currency="USD",
        price_per_hour=Decimal(price),
        upfront_total=None,
        gpu_model="A100",
        gpu_count=8,
        gpu_memory_gib=40,
        vcpus=96,
        memory_gib=1152,
    )
    return replace(record, **changes)


GOOD = [offer("p4d.24xlarge", "32.7726"), offer("g5.48xlarge", "16.288")]
VICTIM = "p5.48xlarge"  # the offer whose row turns hostile in the second collection
BEFORE = offer(VICTIM, "98.32")
HUGE = "x" * 100_000

# (id, the victim's row in the second collection, the reason it is skipped under)
HOSTILE: list[tuple[str, dict[str, Any], str]] = [
    ("sub-cent", {"price_per_hour": Decimal("1e-9")}, "zero after rounding"),
    ("half-a-millionth", {"price_per_hour": Decimal("0.0000004")}, "zero after rounding"),
    ("zero", {"price_per_hour": Decimal(0)}, "zero after rounding"),
    ("negative", {"price_per_hour": Decimal("-98.32")}, "negative"),
    ("nan", {"price_per_hour": Decimal("NaN")}, "not a number the store can keep"),
    ("infinity", {"price_per_hour": Decimal("Infinity")}, "not a number the store can keep"),
    ("1e308", {"price_per_hour": Decimal("1e308")}, "not a number the store can keep"),
    ("float", {"price_per_hour": 98.32}, "not a number the store can keep"),
    # 99999999999999 cents: below DECIMAL(18, 6)'s limit, far above any GPU-hour.
    ("cents", {"price_per_hour": Decimal("999999999999.99")}, "above the ceiling"),
    # 8 GPUs x 1000 USD is the most an 8-GPU machine may cost per hour.
    ("above", {"price_per_hour": Decimal("8000.000001")}, "above the ceiling"),
    ("huge-region", {"region": HUGE}, "text too long"),
    ("nul-region", {"region": "us-east-1\x00"}, "control character in text"),
    ("escape-type", {"instance_type": "p5.48xlarge\x1b[2J"}, "control character in text"),
    ("newline-gpu", {"gpu_model": "H100\nforged log line"}, "control character in text"),
    ("empty-type", {"instance_type": ""}, "text missing"),
    ("number-zone", {"zone": 7}, "text missing"),
    ("unknown-currency", {"currency": "XYZ"}, "currency without a rate"),
    ("lower-currency", {"currency": "usd"}, "currency not an ISO code"),
    ("zero-gpus", {"gpu_count": 0}, "GPU count not sane"),
    ("nan-gpus", {"gpu_count": float("nan")}, "GPU count not sane"),
    ("inf-vcpus", {"vcpus": float("inf")}, "host or GPU size not a positive number"),
    ("negative-memory", {"memory_gib": -1.0}, "host or GPU size not a positive number"),
    (
        "negative-upfront",
        {"price_kind": "reserved", "term_months": 12, "upfront_total": Decimal("-1")},
        "upfront total not sane",
    ),
    (
        # More than 8 GPUs x 8760 h x 1000 USD paid upfront for one year.
        "absurd-upfront",
        {"price_kind": "reserved", "term_months": 12, "upfront_total": Decimal("70080000.01")},
        "upfront total not sane",
    ),
    ("upfront-no-term", {"upfront_total": Decimal("100")}, "upfront total not sane"),
    ("term-of-a-century", {"price_kind": "reserved", "term_months": 1200}, "term not sane"),
    ("far-future", {"effective_at": T1 + timedelta(days=2)}, "effective in the future"),
    ("naive-time", {"effective_at": datetime(2026, 11, 30)}, "effective time not readable"),
    ("text-time", {"effective_at": "2026-11-30"}, "effective time not readable"),
    ("text-available", {"available": "yes"}, "availability not a boolean"),
]


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The first collection, written once per module: each test takes a copy of the file."""
    store = Store(tmp_path_factory.mktemp("validate") / "prices.duckdb", fx_rates=[CNY])
    store.write_run("aws", [*GOOD, BEFORE], started_at=T0, observed_at=T0, regions=None)
    return store.path


@pytest.fixture
def store(written: Path, tmp_path: Path) -> Store:
    return Store(shutil.copy(written, tmp_path / "prices.duckdb"), fx_rates=[CNY])


def prices(store: Store) -> list[tuple[Any, ...]]:
    with duckdb.connect(str(store.path), read_only=True) as con:
        return con.execute(
            "SELECT instance_type, price_per_hour, valid_from, valid_to, last_seen FROM prices"
            " ORDER BY instance_type, valid_from"
        ).fetchall()


def last_run(store: Store) -> tuple[Any, ...]:
    with duckdb.connect(str(store.path), read_only=True) as con:
        row = con.execute(
            "SELECT status, records, changed, prices_skipped, skip_reasons FROM collection_runs"
            " ORDER BY run_id DESC LIMIT 1"
        ).fetchone()
    assert row is not None
    return tuple(row)


@pytest.mark.parametrize(
    ("changes", "reason"), [h[1:] for h in HOSTILE], ids=[h[0] for h in HOSTILE]
)
def test_a_hostile_row_is_skipped_counted_and_changes_nothing(
    store: Store, changes: dict[str, Any], reason: str
) -> None:
    before = prices(store)
    hostile = replace(BEFORE, **changes)
    # A row whose instance type is garbled is no longer the victim's: it comes beside it.
    good = [*GOOD, *([BEFORE] if hostile.instance_type != VICTIM else [])]
    result = store.write_run("aws", [*good, hostile], started_at=T1, observed_at=T1, regions=None)
    assert dict(result.skipped) == {reason: 1}
    assert (result.records, result.changed) == (len(good), 0)
    assert last_run(store) == ("ok", len(good), 0, 1, f"1 {reason}")
    # The good offers are confirmed; the victim keeps its price, open (unconfirmed, not gone).
    stored = {row.instance_type for row in good}
    confirmed = {(t, p, f, to, T1 if t in stored else seen) for t, p, f, to, seen in before}
    assert set(prices(store)) == confirmed
    assert [row[:4] for row in prices(store) if row[0] == VICTIM] == [(VICTIM, 98.32, T0, None)]


def test_the_reasons_are_counted_together_most_frequent_first(store: Store) -> None:
    rows = [
        offer("a", "0.0000001"),
        offer("b", "0"),
        offer("c", "9000"),
        offer("d", "1", region="\x00"),
    ]
    result = store.write_run("aws", [*GOOD, *rows], started_at=T1, observed_at=T1, regions=None)
    assert sum(result.skipped.values()) == 4
    assert last_run(store)[3:] == (
        4,
        "2 zero after rounding, 1 above the ceiling, 1 control character in text",
    )


@pytest.mark.parametrize(
    ("currency", "price", "stored"),
    [
        ("USD", "8000", True),  # exactly 1000 USD per GPU-hour
        ("USD", "8000.000001", False),
        # [fx] says 7.0197 CNY per USD: 1000 USD per GPU-hour is 7019.7 CNY (8 GPUs: 56157.6;
        # the rate is kept as USD per CNY to nine places, so not to the last cent).
        ("CNY", "56157.5", True),
        ("CNY", "56157.7", False),
        # Without an [fx] rate, JPY's built-in one (170 per USD, rounded up): 1,360,000 JPY.
        ("JPY", "1360000", True),
        ("JPY", "1360000.000001", False),
    ],
)
def test_the_ceiling_is_per_gpu_hour_in_the_price_s_own_currency(
    store: Store, currency: str, price: str, stored: bool
) -> None:
    row = offer(VICTIM, price, currency=currency)
    result = store.write_run("aws", [*GOOD, row], started_at=T1, observed_at=T1, regions=None)
    assert result.records == (3 if stored else 2)
    assert dict(result.skipped) == ({} if stored else {"above the ceiling": 1})


def test_the_ceiling_is_configurable(tmp_path: Path) -> None:
    store = Store(tmp_path / "p.duckdb", limits=parse_limits({"max_price_per_gpu_hour": 2}))
    rows = [offer("a", "16"), offer("b", "16.000001")]  # 8 GPUs: 2 USD per GPU-hour and above
    result = store.write_run("aws", rows, started_at=T0, observed_at=T0, regions=None)
    assert (result.records, dict(result.skipped)) == (1, {"above the ceiling": 1})


@pytest.mark.parametrize("value", [0, -1, float("nan"), float("inf"), "1000", True, 1e12])
def test_a_bad_ceiling_is_a_config_error_naming_the_key(value: Any) -> None:
    with pytest.raises(ConfigError, match=r"^collect\.max_price_per_gpu_hour: "):
        from_dict({"collect": {"max_price_per_gpu_hour": value}}, source=None)


def test_the_ceiling_comes_from_the_config_file() -> None:
    config = from_dict({"collect": {"max_price_per_gpu_hour": 250.5}}, source=None)
    assert config.limits == PriceLimits(max_per_gpu_hour_usd=Decimal("250.5"))
    assert from_dict({}, source=None).limits == PriceLimits()


def test_prices_are_kept_as_the_store_rounds_them(store: Store) -> None:
    row = offer(VICTIM, "98.3200004")  # seven places: rounded half-even to six
    store.write_run("aws", [*GOOD, row], started_at=T1, observed_at=T1, regions=None)
    assert [r[1] for r in prices(store) if r[0] == VICTIM] == [98.32]


def test_a_collection_of_only_invalid_prices_stores_nothing(store: Store) -> None:
    before = prices(store)
    rows = [offer(VICTIM, "0.0000001"), offer("g5.48xlarge", "NaN")]
    with pytest.raises(PayloadShapeError, match=r"^aws: no valid price in the answer: 2 prices"):
        store.write_run("aws", rows, started_at=T1, observed_at=T1, regions=None)
    assert prices(store) == before


def test_the_run_summary_says_how_many_were_skipped_and_why(tmp_path: Path) -> None:
    config = from_dict({"storage": {"path": str(tmp_path / "p.duckdb")}}, source=None)
    rows = [*GOOD, offer("a", "1e-9"), offer("b", "0"), offer("c", "9000")]
    rows = [replace(row, provider="lambdalabs") for row in rows]

    def fetcher(name: str, settings: Any, observed_at: datetime) -> Fetched:
        return Fetched(ParseResult(records=rows), None)

    [outcome] = pipeline.collect(
        config, ("lambdalabs",), env={"LAMBDA_API_KEY": "k"}, fetcher=fetcher, now=T0
    )
    assert (outcome.status, outcome.records) == ("ok", 2)
    assert _notes(outcome) == (
        "3 prices skipped: 2 zero after rounding, 1 above the ceiling (not stored); "
        "GPU types: 5 priced, 0 from API facts"
    )


def test_lambda_s_sub_cent_and_absurd_prices_never_reach_the_store(tmp_path: Path) -> None:
    """The probe's rows through the real Lambda parser, from its recording on loopback."""
    with demo_setup(tmp_path / "demo.duckdb") as setup:
        settings, _ = setup.config.providers["lambdalabs"].settings(setup.env)
        collector = collector_class("lambdalabs")(settings)
        answer = collector.fetch()
    data = answer["instance-types"]["data"]
    # One record per region with capacity: as many skipped as the recording lists.
    regions = {t: len(data[t]["regions_with_capacity_available"]) for t in data}
    data["gpu_8x_h100_sxm5"]["instance_type"]["price_cents_per_hour"] = 1e-9
    data["gpu_4x_h100_sxm5"]["instance_type"]["price_cents_per_hour"] = 99999999999999
    data["gpu_2x_h100_sxm5"]["regions_with_capacity_available"] = [{"name": "x" * 100_000}]
    parsed = collector.parse(answer, observed_at=T0)
    store = Store(tmp_path / "prices.duckdb")
    result = store.write_run(
        "lambdalabs", parsed.records, started_at=T0, observed_at=T0, regions=None
    )
    assert dict(result.skipped) == {
        "zero after rounding": regions["gpu_8x_h100_sxm5"],
        "above the ceiling": regions["gpu_4x_h100_sxm5"],
        "text too long": 1,
    }
    with duckdb.connect(str(store.path), read_only=True) as con:
        stored = con.execute(
            "SELECT instance_type, min(price_per_hour), coalesce(max(length(region)), 0)"
            " FROM prices GROUP BY ALL ORDER BY ALL"  # a sold-out type's offer has no region
        ).fetchall()
    assert {row[0] for row in stored} == {r.instance_type for r in parsed.records} - {
        "gpu_8x_h100_sxm5",
        "gpu_4x_h100_sxm5",
        "gpu_2x_h100_sxm5",
    }
    assert all(row[1] > 0 and row[2] < 100 for row in stored)
