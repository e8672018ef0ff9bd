"""Migration 2 on a real file: availability as part of an offer's state, dated FX rates and the
USD columns of the views, and an old store upgraded in place."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from collectors.base import PriceRecord
from storage import migrations
from storage.connection import connect
from storage.fx import FxRate
from storage.query import query
from storage.store import Store
from tests.storage import old_schema

T0 = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)
H = timedelta(hours=1)

LAMBDA = PriceRecord(
    provider="lambdalabs",
    region="us-east-1",
    zone=None,
    instance_type="gpu_8x_h100_sxm5",
    price_kind="on_demand",
    term_months=None,
    payment_option=None,
    offering_class=None,
    currency="USD",
    price_per_hour=Decimal("31.92"),
    upfront_total=None,
    gpu_model="H100",
    gpu_count=8,
    gpu_memory_gib=80,
    available=True,
)
TENCENT = replace(
    LAMBDA,
    provider="tencent",
    region="ap-guangzhou",
    instance_type="GT4.41XLARGE948",
    currency="CNY",
    price_per_hour=Decimal("100.5"),
    gpu_model="A100",
    gpu_memory_gib=40,
    available=None,
)


def write(store: Store, records: list[PriceRecord], at: datetime) -> Any:
    provider = records[0].provider
    return store.write_run(provider, records, started_at=at, observed_at=at, regions=None)


def prices(store: Store, columns: str, where: str = "true") -> list[tuple[Any, ...]]:
    sql = f"SELECT {columns} FROM prices WHERE {where} ORDER BY valid_from"
    return query(store.path, sql).rows


def test_a_change_of_availability_opens_a_new_interval(tmp_path: Path) -> None:
    store = Store(tmp_path / "p.duckdb")
    write(store, [LAMBDA], T0)
    write(store, [LAMBDA], T0 + H)  # confirmed: extends
    result = write(store, [replace(LAMBDA, available=False)], T0 + 2 * H)
    write(store, [replace(LAMBDA, available=False)], T0 + 3 * H)
    assert result.changed == 1
    assert prices(store, "available, price_per_hour, valid_from, valid_to, last_seen") == [
        (True, 31.92, T0, T0 + 2 * H, T0 + H),
        (False, 31.92, T0 + 2 * H, None, T0 + 3 * H),
    ]


def test_usd_columns_convert_with_the_configured_rate(tmp_path: Path) -> None:
    # 7.0197 CNY per USD -> 1 / 7.0197 = 0.142456230 USD per CNY (9 places, half-even);
    # 100.5 CNY/h x 0.142456230 = 14.316851115 -> 14.316851 USD/h; / 8 GPUs = 1.789606.
    rate = FxRate.per_usd("CNY", date(2026, 1, 8), Decimal("7.0197"), "PBOC central parity")
    assert rate.usd_per_unit == Decimal("0.142456230")
    store = Store(tmp_path / "p.duckdb", fx_rates=[rate])
    write(store, [TENCENT], T0)
    write(store, [LAMBDA], T0)
    got = query(
        store.path,
        "SELECT provider, currency, price_per_hour, price_per_hour_usd, price_per_gpu_hour_usd"
        " FROM latest_prices ORDER BY provider",
    ).rows
    assert got == [
        ("lambdalabs", "USD", 31.92, 31.92, 3.99),  # USD needs no rate
        ("tencent", "CNY", 100.5, 14.316851, 1.789606),
    ]
    assert query(store.path, "SELECT * FROM exchange_rates").rows == [
        ("CNY", date(2026, 1, 8), 0.14245623, "PBOC central parity")
    ]


def test_no_rate_means_no_usd_price_not_a_guess(tmp_path: Path) -> None:
    store = Store(tmp_path / "p.duckdb")
    write(store, [TENCENT], T0)
    assert prices(store, "price_per_hour, price_per_hour_usd, price_per_gpu_hour_usd") == [
        (100.5, None, None)
    ]


def test_each_interval_uses_the_newest_rate_dated_by_its_end(tmp_path: Path) -> None:
    rates = [
        FxRate("CNY", date(2026, 6, 1), Decimal("0.14")),
        FxRate("CNY", date(2026, 9, 1), Decimal("0.15")),
    ]
    store = Store(tmp_path / "p.duckdb", fx_rates=rates)
    march, july = datetime(2026, 3, 1, tzinfo=UTC), datetime(2026, 7, 15, tzinfo=UTC)
    # 28.8 CNY from March to mid-July, then 30 CNY until now.
    write(store, [replace(TENCENT, price_per_hour=Decimal("28.8"))], march)
    write(store, [replace(TENCENT, price_per_hour=Decimal("30"))], july)
    assert prices(store, "price_per_hour, price_per_hour_usd") == [
        (28.8, 4.032),  # ended 2026-07-15: the June rate, 28.8 x 0.14
        (30.0, 4.5),  # current: the September rate, 30 x 0.15
    ]


def test_a_rate_dated_after_every_price_still_converts_them(tmp_path: Path) -> None:
    # The only rate is newer than the interval: it is the best the user gave, so it is used.
    rates = [FxRate("CNY", date(2026, 9, 1), Decimal("0.15"))]
    store = Store(tmp_path / "p.duckdb", fx_rates=rates)
    march, july = datetime(2026, 3, 1, tzinfo=UTC), datetime(2026, 7, 15, tzinfo=UTC)
    write(store, [replace(TENCENT, price_per_hour=Decimal("28.8"))], march)
    write(store, [replace(TENCENT, price_per_hour=Decimal("30"))], july)
    assert prices(store, "price_per_hour_usd") == [(4.32,), (4.5,)]


def test_config_is_the_truth_for_rates(tmp_path: Path) -> None:
    path = tmp_path / "p.duckdb"
    write(Store(path, fx_rates=[FxRate("CNY", date(2026, 1, 8), Decimal("0.14"))]), [TENCENT], T0)
    write(Store(path), [TENCENT], T0 + H)  # None: rates left as they are
    assert len(query(path, "SELECT * FROM exchange_rates").rows) == 1
    write(Store(path, fx_rates=()), [TENCENT], T0 + 2 * H)  # [fx] emptied: rates gone
    assert query(path, "SELECT * FROM exchange_rates").rows == []
    assert prices(Store(path), "price_per_hour_usd") == [(None,)]


def test_a_store_from_before_migration_2_is_upgraded_in_place(tmp_path: Path) -> None:
    path = tmp_path / "p.duckdb"
    with connect(path, read_only=False) as con:  # a store as version 1 left it
        old_schema.build(con, 1)
        con.execute(
            "INSERT INTO price_intervals VALUES ($k, 'lambdalabs', 'us-east-1', NULL,"
            " 'gpu_8x_h100_sxm5', 'on_demand', NULL, NULL, NULL, 'USD', 31.92, NULL, 'H100',"
            " 8, 80, NULL, NULL, $t, NULL, $t, nextval('run_ids'))",
            {"t": T0, "k": "lambdalabs|us-east-1||gpu_8x_h100_sxm5|on_demand||||USD"},
        )
        con.execute(
            "INSERT INTO runs (run_id, provider, started_at, finished_at, status, records,"
            " changed, error, interval_seconds, observed_at) VALUES"
            " (currval('run_ids'), 'lambdalabs', $t, $t, 'ok', 1, 1, NULL, 3600, $t)",
            {"t": T0},
        )

    write(Store(path), [LAMBDA], T0 + H)  # the next collection migrates first
    versions = query(path, "SELECT version FROM schema_migrations ORDER BY version").rows
    assert versions == [(v,) for v, _, _ in migrations.MIGRATIONS]
    assert prices(Store(path), "available, valid_from, valid_to, price_per_hour_usd") == [
        (None, T0, T0 + H, 31.92),  # the old row kept, closed when availability became known
        (True, T0 + H, None, 31.92),
    ]


def test_the_rate_of_an_interval_does_not_depend_on_the_readers_time_zone(tmp_path: Path) -> None:
    rates = [
        FxRate("CNY", date(2026, 1, 1), Decimal("0.125")),
        FxRate("CNY", date(2026, 2, 1), Decimal("0.1")),
    ]
    store = Store(tmp_path / "p.duckdb", fx_rates=rates)
    jan, feb_utc = datetime(2026, 1, 10, tzinfo=UTC), datetime(2026, 1, 31, 20, tzinfo=UTC)
    write(store, [replace(TENCENT, price_per_hour=Decimal("80"))], jan)
    write(store, [replace(TENCENT, price_per_hour=Decimal("90"))], feb_utc)
    # The first interval ends 2026-01-31 20:00 UTC (2026-02-01 04:00 in Shanghai): January's
    # rate, 80 x 0.125 = 10.0, for every reader.
    sql = "SELECT price_per_hour_usd FROM prices ORDER BY valid_from LIMIT 1"
    for zone in ("UTC", "Asia/Shanghai", "America/Los_Angeles"):
        # A user's own DuckDB session, in the zone of their choice (the tracker's readers are
        # always in UTC and cannot change it).
        with connect(store.path, read_only=True, outside=True) as con:
            con.execute(f"SET TimeZone = '{zone}'")
            assert con.execute(sql).fetchall() == [(10.0,)], zone
