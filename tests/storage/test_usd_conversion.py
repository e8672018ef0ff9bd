"""The `prices` view converts to USD by joining a small table of daily rates, and reads the
computed columns the writes stored with each interval; the values must be exactly those of the
rule it replaced, two correlated lookups per row (kept here, and only here, as the reference):
the newest rate dated on or before the interval's end (today, in UTC, for a current price), else
the oldest; USD at 1; no rate, NULL. Stored or computed at read time, closed by a later write,
after the rates or the GPU facts are replaced, or in a store migrated from an older schema: the
same values."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collectors.base import PriceRecord
from storage import migrations
from storage.connection import connect, transaction
from storage.fx import FxRate, GpuFact, replace_gpu_facts, replace_rates
from storage.store import Store
from storage.writes import derived
from tests.storage import old_schema

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
# With the FLOPs-per-dollar columns, as docs/sql.md defines them.
OLD_PRICES_FLOPS = f"""
SELECT o.*, g.fp16_tflops AS gpu_tflops_fp16,
       g.fp16_tflops * o.gpu_count * 3.6 / o.price_per_hour_usd AS pflop_per_usd
FROM ({OLD_PRICES}) o LEFT JOIN gpu_facts g USING (gpu_model)
"""
COLUMNS = """provider, region, zone, instance_type, price_kind, term_months, payment_option,
    offering_class, currency, price_per_hour, upfront_total, price_per_gpu_hour, gpu_model,
    gpu_count, gpu_memory_gib, vcpus, memory_gib, valid_from, valid_to, last_seen, available,
    price_per_hour_usd, price_per_gpu_hour_usd, gpu_tflops_fp16, pflop_per_usd"""
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
INTERVAL = """
INSERT INTO price_intervals BY NAME
SELECT 'k' || $n AS offer_key, 'tencent' AS provider, 'ap-guangzhou' AS region, 'GT4'
       AS instance_type, 'spot' AS price_kind, $currency AS currency, $price AS price_per_hour,
       $model AS gpu_model, $gpus AS gpu_count, 40 AS gpu_memory_gib, $start AS valid_from,
       $end AS valid_to, coalesce($end, $start) AS last_seen, 1 AS run_id
"""
MODELS = ["A100", "H100", None]
# Rows derived (stored) that are closed, rows derived that are open, rows computed live.
STORED = "SELECT count(*) FILTER (WHERE price_per_gpu_hour IS NOT NULL) FROM price_intervals"

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
        st.sampled_from(MODELS),
    ),
    min_size=1,
    max_size=30,
)
facts = st.dictionaries(
    st.sampled_from(MODELS[:2]), st.sampled_from([312.0, 989.4, 0.5]), max_size=2
)
# Which intervals the writes stored: none (a store just migrated), some, or every one they can.
stored = st.sampled_from(["false", "hash(p.offer_key) % 2 = 0", "true"])


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    path: Path = tmp_path_factory.mktemp("fx") / "p.duckdb"
    with connect(path, read_only=False) as con:
        migrations.migrate(con)
        con.execute(f"CREATE TEMP VIEW old_prices AS {OLD_PRICES_FLOPS}")
        yield con


def fill(
    con: Any,
    rates: dict[str, dict[date, Decimal]],
    rows: list[Any],
    gpus: dict[str, float] | None = None,
    derive: str = "false",
) -> None:
    """The intervals `rows`, the `rates` and GPU facts; then the writes' derivation of the
    intervals `derive` selects."""
    con.execute("DELETE FROM price_intervals")
    con.execute("DELETE FROM fx_rates")
    con.execute("DELETE FROM gpu_facts")
    for currency, dated in rates.items():
        for as_of, rate in dated.items():
            con.execute("INSERT INTO fx_rates VALUES (?, ?, ?, NULL)", [currency, as_of, rate])
    for model, tflops in (gpus or {}).items():
        con.execute("INSERT INTO gpu_facts (gpu_model, fp16_tflops) VALUES (?, ?)", [model, tflops])
    for n, (currency, price, count, end, hours, *model) in enumerate(rows):
        start = end - timedelta(hours=hours or 24)
        params = {"n": n, "currency": currency, "price": price, "gpus": count}
        params |= {"model": model[0] if model else "A100"}
        con.execute(INTERVAL, {**params, "start": start, "end": None if hours is None else end})
    derived.derive(con, derive)


def as_config(rates: dict[str, dict[date, Decimal]]) -> list[FxRate]:
    return [FxRate(c, d, r) for c, dated in rates.items() for d, r in dated.items()]


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(
    rates=rates,
    rows=intervals,
    gpus=facts,
    derive=stored,
    zone=st.sampled_from(["UTC", "Asia/Shanghai", "Etc/GMT+11"]),
)
def test_the_join_converts_exactly_as_the_lookups_did(
    store: Any,
    rates: dict[str, dict[date, Decimal]],
    rows: list[Any],
    gpus: dict[str, float],
    derive: str,
    zone: str,
) -> None:
    fill(store, rates, rows, gpus, derive)
    store.execute(f"SET TimeZone = '{zone}'")  # the day is UTC's whatever the reader's zone
    try:
        assert store.execute(DIFFERENCE).fetchall() == [(0,)]
    finally:
        store.execute("SET TimeZone = 'UTC'")


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(
    rates=rates,
    added=rates,
    new_rates=rates,
    rows=intervals,
    gpus=facts,
    new_gpus=facts,
    derive=stored,
)
def test_replacing_the_rates_or_the_facts_computes_the_stored_rows_again(
    store: Any,
    rates: dict[str, dict[date, Decimal]],
    added: dict[str, dict[date, Decimal]],
    new_rates: dict[str, dict[date, Decimal]],
    rows: list[Any],
    gpus: dict[str, float],
    new_gpus: dict[str, float],
    derive: str,
) -> None:
    fill(store, rates, rows, gpus, derive)
    # Rates added to those there (or correcting some of them): only the later rows move.
    grown = {c: {**rates.get(c, {}), **added.get(c, {})} for c in {*rates, *added}}
    with transaction(store):
        replace_rates(store, as_config(grown))
    assert store.execute(DIFFERENCE).fetchall() == [(0,)]
    with transaction(store):
        replace_rates(store, as_config(new_rates))
    assert store.execute(DIFFERENCE).fetchall() == [(0,)]
    with transaction(store):
        replace_gpu_facts(store, [GpuFact(m, t) for m, t in new_gpus.items()])
    assert store.execute(DIFFERENCE).fetchall() == [(0,)]


def test_every_interval_is_stored_unless_a_rate_is_dated_after_today(store: Any) -> None:
    """The open intervals too (their rate is the newest while the rates stand), except where
    a rate dated later than today would become theirs at midnight."""
    day = FIRST + timedelta(days=20)
    rows = [("CNY", Decimal(10), 1.0, FIRST_NOON, 2), ("CNY", Decimal(10), 1.0, FIRST_NOON, None)]
    fill(store, {"CNY": {day: Decimal("0.2")}}, rows, derive="true")
    assert store.execute(STORED).fetchall() == [(2,)]
    tomorrow = TODAY + timedelta(days=1)
    fill(store, {"CNY": {day: Decimal("0.2")}, "EUR": {tomorrow: Decimal("1.1")}}, rows)
    derived.derive(store)
    assert store.execute(STORED).fetchall() == [(1,)]  # the closed one
    assert store.execute(DIFFERENCE).fetchall() == [(0,)]
    # A stored open price whose currency gets a rate dated tomorrow: live again, else it would
    # keep today's rate after midnight.
    fill(store, {"CNY": {day: Decimal("0.2")}}, rows, derive="true")
    with transaction(store):
        replace_rates(store, as_config({"CNY": {day: Decimal("0.2"), tomorrow: Decimal("0.3")}}))
    assert store.execute(STORED).fetchall() == [(1,)]
    assert store.execute(DIFFERENCE).fetchall() == [(0,)]


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


def spot_point(price: str, since: datetime, zone: str = "ap-guangzhou-3") -> PriceRecord:
    return PriceRecord(
        provider="tencent",
        region="ap-guangzhou",
        zone=zone,
        instance_type="GT4.4XLARGE96",
        price_kind="spot",
        term_months=None,
        payment_option=None,
        offering_class=None,
        currency="CNY",
        price_per_hour=Decimal(price),
        upfront_total=None,
        gpu_model="A100",
        gpu_count=1,
        gpu_memory_gib=40,
        effective_at=since,
    )


def test_a_write_stores_what_it_opens_and_computes_again_what_it_closes(tmp_path: Path) -> None:
    """An interval stored open with the newest rate, then closed by a later write at a provider
    timestamp before that rate's date, takes the older rate its end dates."""
    rates = [
        FxRate("CNY", TODAY - timedelta(days=10), Decimal("0.1")),
        FxRate("CNY", TODAY - timedelta(days=2), Decimal("0.2")),
    ]
    store = Store(tmp_path / "p.duckdb", fx_rates=rates, gpu_facts=[GpuFact("A100", 312.0)])
    now = datetime.now(UTC).replace(microsecond=0)
    first, second = now - timedelta(hours=2), now - timedelta(hours=1)
    since = datetime.combine(TODAY - timedelta(days=20), time(6), tzinfo=UTC)
    changed = datetime.combine(TODAY - timedelta(days=5), time(6), tzinfo=UTC)
    points = [spot_point("10", since), spot_point("30", since, zone="ap-guangzhou-4")]
    store.write_run("tencent", points, started_at=first, observed_at=first, regions=None)
    # The second zone is withdrawn (closed at `second`), the first changes at `changed`.
    later = [spot_point("10", since), spot_point("12", changed)]
    store.write_run("tencent", later, started_at=second, observed_at=second, regions=None)
    with connect(store.path, read_only=False) as con:
        con.execute(f"CREATE TEMP VIEW old_prices AS {OLD_PRICES_FLOPS}")
        assert con.execute(STORED).fetchall() == [(3,)]  # every interval
        got = con.execute(
            "SELECT zone, valid_to IS NULL, price_per_hour_usd, pflop_per_usd FROM prices"
            " ORDER BY zone, valid_from"
        ).fetchall()
        # 10 CNY at 0.1 until `changed`; 12 CNY at today's 0.2; 30 CNY at 0.2 until `second`.
        assert got == [
            ("ap-guangzhou-3", False, 1.0, 312 * 3.6 / 1.0),
            ("ap-guangzhou-3", True, 2.4, 312 * 3.6 / 2.4),
            ("ap-guangzhou-4", False, 6.0, 312 * 3.6 / 6.0),
        ]
        assert con.execute(DIFFERENCE).fetchall() == [(0,)]


def test_a_store_of_an_older_schema_is_filled_by_the_migration(tmp_path: Path) -> None:
    with connect(tmp_path / "p.duckdb", read_only=False) as con:
        old_schema.build(con, 3)
        interval = (
            "INSERT INTO price_intervals VALUES ('k' || $n, 'tencent', 'ap-guangzhou', NULL,"
            " 'GT4', 'spot', NULL, NULL, NULL, $currency, $price, NULL, 'A100', 1, 40, NULL,"
            " NULL, $start, $end, coalesce($end, $start), 1, NULL)"
        )
        for n, (currency, end) in enumerate([("CNY", FIRST_NOON), ("USD", None), ("EUR", None)]):
            start = FIRST_NOON - timedelta(days=1)
            con.execute(
                interval, {"n": n, "currency": currency, "price": 10, "start": start, "end": end}
            )
        con.execute("INSERT INTO fx_rates VALUES ('CNY', ?, 0.14, NULL)", [FIRST])
        migrations.migrate(con)
        con.execute(f"CREATE TEMP VIEW old_prices AS {OLD_PRICES_FLOPS}")
        assert con.execute(STORED).fetchall() == [(3,)]
        assert con.execute(
            "SELECT currency, price_per_hour_usd FROM prices ORDER BY currency"
        ).fetchall() == [("CNY", 1.4), ("EUR", None), ("USD", 10.0)]
        assert con.execute(DIFFERENCE).fetchall() == [(0,)]
