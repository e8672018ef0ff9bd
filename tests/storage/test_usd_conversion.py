"""The `prices` view converts to USD by joining a small table of daily rates; the values must be
exactly those of the rule it replaced, two correlated lookups per row (kept here, and only here,
as the reference): the newest rate dated on or before the interval's end (today, in UTC, for a
current price), else the oldest; USD at 1; no rate, NULL."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storage import migrations
from storage.connection import connect

# The view as it was before the join: the reference the new one must equal, value for value.
OLD_PRICES = """
WITH rated AS (
    SELECT p.*,
           CASE WHEN p.currency = 'USD' THEN 1 ELSE coalesce(
               (SELECT arg_max(f.usd_per_unit, f.as_of) FROM fx_rates f
                WHERE f.currency = p.currency
                  AND f.as_of <= CAST(timezone('UTC', coalesce(p.valid_to, now())) AS DATE)),
               (SELECT arg_min(f.usd_per_unit, f.as_of) FROM fx_rates f
                WHERE f.currency = p.currency)) END AS usd_rate
    FROM price_intervals p
)
SELECT provider, region, zone, instance_type, price_kind, term_months,
       payment_option, offering_class, currency,
       CAST(price_per_hour AS DOUBLE) AS price_per_hour,
       CAST(upfront_total AS DOUBLE) AS upfront_total,
       round(CAST(price_per_hour AS DOUBLE) / gpu_count, 6) AS price_per_gpu_hour,
       gpu_model, gpu_count, gpu_memory_gib, vcpus, memory_gib,
       valid_from, valid_to, last_seen, available,
       round(CAST(price_per_hour * usd_rate AS DOUBLE), 6) AS price_per_hour_usd,
       round(CAST(price_per_hour * usd_rate AS DOUBLE) / gpu_count, 6) AS price_per_gpu_hour_usd
FROM rated
"""
COLUMNS = """provider, region, zone, instance_type, price_kind, term_months, payment_option,
    offering_class, currency, price_per_hour, upfront_total, price_per_gpu_hour, gpu_model,
    gpu_count, gpu_memory_gib, vcpus, memory_gib, valid_from, valid_to, last_seen, available,
    price_per_hour_usd, price_per_gpu_hour_usd"""
# The old rule multiplied in 18 digits: a product above 9,223 USD an hour overflowed, so the
# prices and rates drawn stay below it (the new view multiplies in 38).
# Rows one view has and the other lacks (EXCEPT ALL compares NULLs as equal values).
DIFFERENCE = f"""
SELECT count(*) FROM (
    (SELECT {COLUMNS} FROM prices EXCEPT ALL SELECT * FROM old_prices)
    UNION ALL
    (SELECT * FROM old_prices EXCEPT ALL SELECT {COLUMNS} FROM prices)
)"""
TODAY = datetime.now(UTC).date()
FIRST = TODAY - timedelta(days=60)
FIRST_NOON = datetime.combine(FIRST, time(12), tzinfo=UTC)
INTERVAL = (
    "INSERT INTO price_intervals VALUES ('k' || $n, 'tencent', 'ap-guangzhou', NULL, 'GT4',"
    " 'spot', NULL, NULL, NULL, $currency, $price, NULL, 'A100', $gpus, 40, NULL, NULL,"
    " $start, $end, coalesce($end, $start), 1, NULL)"
)

days = st.integers(min_value=0, max_value=70).map(lambda n: FIRST + timedelta(days=n))
# Interval ends right on midnight UTC (the day a rate is dated), a microsecond before it, or
# anywhere in a day.
ends = st.tuples(days, st.sampled_from([time(0), time(23, 59, 59, 999999), time(12, 30)])).map(
    lambda dt: datetime.combine(*dt, tzinfo=UTC)
)
rates = st.dictionaries(
    st.sampled_from(["CNY", "EUR", "USD"]),  # JPY never has one; a USD rate is ignored
    st.dictionaries(
        days, st.decimals(Decimal("0.001"), Decimal("0.9"), places=9), min_size=1, max_size=6
    ),
)
intervals = st.lists(
    st.tuples(
        st.sampled_from(["CNY", "EUR", "JPY", "USD"]),
        st.decimals(Decimal("0.01"), Decimal("9999"), places=6),
        st.sampled_from([1.0, 0.25, 8.0]),
        ends,
        st.one_of(st.none(), st.integers(min_value=1, max_value=40 * 24)),  # hours; None: open
    ),
    min_size=1,
    max_size=30,
)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    path: Path = tmp_path_factory.mktemp("fx") / "p.duckdb"
    with connect(path, read_only=False) as con:
        migrations.migrate(con)
        con.execute(f"CREATE TEMP VIEW old_prices AS {OLD_PRICES}")
        yield con


def fill(con: Any, rates: dict[str, dict[date, Decimal]], rows: list[Any]) -> None:
    con.execute("DELETE FROM price_intervals")
    con.execute("DELETE FROM fx_rates")
    for currency, dated in rates.items():
        for as_of, rate in dated.items():
            con.execute("INSERT INTO fx_rates VALUES (?, ?, ?, NULL)", [currency, as_of, rate])
    for n, (currency, price, gpus, end, hours) in enumerate(rows):
        start = end - timedelta(hours=hours or 24)
        params = {"n": n, "currency": currency, "price": price, "gpus": gpus}
        con.execute(INTERVAL, {**params, "start": start, "end": None if hours is None else end})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rates=rates, rows=intervals, zone=st.sampled_from(["UTC", "Asia/Shanghai", "Etc/GMT+11"]))
def test_the_join_converts_exactly_as_the_lookups_did(
    store: Any, rates: dict[str, dict[date, Decimal]], rows: list[Any], zone: str
) -> None:
    fill(store, rates, rows)
    store.execute(f"SET TimeZone = '{zone}'")  # the day is UTC's whatever the reader's zone
    try:
        assert store.execute(DIFFERENCE).fetchall() == [(0,)]
    finally:
        store.execute("SET TimeZone = 'UTC'")


def test_the_edges_by_hand(store: Any) -> None:
    """CNY rated 0.10 from FIRST + 10 days, 0.20 from FIRST + 20 days; EUR has none."""
    day = FIRST + timedelta(days=20)
    rates = {"CNY": {FIRST + timedelta(days=10): Decimal("0.1"), day: Decimal("0.2")}}
    midnight = datetime.combine(day, time(0), tzinfo=UTC)
    rows = [
        ("CNY", Decimal(10), 1.0, midnight, 2),  # ends on the rate's date: that rate
        ("CNY", Decimal(10), 1.0, midnight - timedelta(microseconds=1), 2),  # the day before
        ("CNY", Decimal(10), 1.0, datetime.combine(FIRST, time(6), tzinfo=UTC), 2),  # oldest
        ("CNY", Decimal(10), 4.0, midnight, None),  # open: today's rate, the newest
        ("EUR", Decimal(10), 1.0, midnight, 2),  # no rate: NULL
        ("USD", Decimal(10), 1.0, midnight, 2),
    ]
    fill(store, rates, rows)
    got = store.execute(
        "SELECT price_per_hour_usd, price_per_gpu_hour_usd FROM prices"
        " ORDER BY instance_type, valid_to NULLS LAST, gpu_count"
    ).fetchall()
    assert sorted(got, key=str) == sorted(
        [(2.0, 2.0), (1.0, 1.0), (1.0, 1.0), (2.0, 0.5), (None, None), (10.0, 10.0)], key=str
    )
    assert store.execute(DIFFERENCE).fetchall() == [(0,)]


def test_a_price_above_what_18_digits_hold_converts(store: Any) -> None:
    fill(store, {"CNY": {FIRST: Decimal("1.5")}}, [("CNY", Decimal(20_000), 8.0, FIRST_NOON, 2)])
    assert store.execute("SELECT price_per_hour_usd FROM prices").fetchall() == [(30_000.0,)]
