"""The SQL statistics against a plain-Python reading of the contract's definitions, on random
series: intervals with gaps, overlapping the window's edges, open or closed, repeated prices."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storage.reads.series import KEY, SeriesFilters, Window, statistics_sql

BASE = datetime(2026, 11, 1, tzinfo=UTC)
SINCE, UNTIL = BASE + timedelta(hours=10), BASE + timedelta(hours=60)
H = 3_600_000_000  # microseconds per hour

# One series: (hours after BASE it starts, hours it lasts or None while open, price), back to
# back with gaps; prices from a short list so that ties and repeats happen.
_interval = st.tuples(
    st.integers(0, 12), st.integers(1, 20), st.sampled_from([1.5, 2.0, 2.5, 7.25])
)
_series = st.lists(_interval, min_size=1, max_size=8)


def laid_out(raw: list[tuple[int, int, float]], open_last: bool) -> Iterator[tuple[Any, ...]]:
    at = BASE
    for n, (gap, hours, price) in enumerate(raw):
        start = at + timedelta(hours=gap)
        end = start + timedelta(hours=hours)
        last = n == len(raw) - 1
        yield start, None if (last and open_last) else end, price
        at = end


def reference(rows: list[tuple[Any, ...]], below: float) -> dict[str, Any] | None:
    held = []  # (price, microseconds inside the window)
    for start, end, price in rows:
        lo, hi = max(start, SINCE), min(end or UNTIL, UNTIL)
        if hi > lo:
            held.append((price, (hi - lo) // timedelta(microseconds=1)))
    total = sum(us for _, us in held)
    if not total:
        return None

    def quantile(share_num: int, share_den: int) -> float:
        for price in sorted({p for p, _ in held}):
            if share_den * sum(us for p, us in held if p <= price) >= share_num * total:
                return price
        raise AssertionError

    return {
        "covered_hours": round(total / H, 6),
        "min": min(p for p, _ in held),
        "max": max(p for p, _ in held),
        "mean": round(sum(p * us for p, us in held) / total, 6),
        "p50": quantile(1, 2),
        "p95": quantile(19, 20),
        "changes": sum(1 for start, _, _ in rows if SINCE < start < UNTIL),
        "current": next((p for _, end, p in rows if end is None), None),
        "below_share": round(sum(us for p, us in held if p < below) / total, 6),
    }


@pytest.fixture(scope="module")
def con() -> Iterator[Any]:
    connection = duckdb.connect()
    connection.execute(
        "CREATE TABLE prices (provider VARCHAR, region VARCHAR, zone VARCHAR,"
        " instance_type VARCHAR, price_kind VARCHAR, term_months INTEGER,"
        " payment_option VARCHAR, offering_class VARCHAR, currency VARCHAR,"
        " price_per_hour DOUBLE, price_per_hour_usd DOUBLE, gpu_model VARCHAR,"
        " valid_from TIMESTAMPTZ, valid_to TIMESTAMPTZ)"
    )
    yield connection
    connection.close()


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=_series, open_last=st.booleans(), below=st.sampled_from([1.0, 2.1, 3.0, 8.0]))
def test_sql_statistics_match_the_definitions(
    con: Any, raw: list[tuple[int, int, float]], open_last: bool, below: float
) -> None:
    rows = list(laid_out(raw, open_last))
    con.execute("DELETE FROM prices")
    con.executemany(
        "INSERT INTO prices VALUES ('aws', 'us-east-1', NULL, 'p4d.24xlarge', 'spot', NULL,"
        " NULL, NULL, 'USD', ?, ?, 'A100', ?, ?)",
        [[price, price, start, end] for start, end, price in rows],
    )
    sql, params = statistics_sql(SeriesFilters(), Window(SINCE, UNTIL), below=below)
    found = con.execute(sql, params).fetchall()
    expected = reference(rows, below)
    if expected is None:
        assert found == []
        return
    assert len(found) == 1
    names = [
        *KEY,
        "currency",
        "covered_hours",
        "min",
        "max",
        "mean",
        "p50",
        "p95",
        "changes",
        "current",
        "below_share",
        "mean_usd",
    ]
    got = dict(zip(names, found[0], strict=True))
    # Both sides round to 6 places; DuckDB rounds a half away from zero, Python to even.
    assert {k: got[k] for k in expected} == pytest.approx(expected, abs=1.1e-6)
    assert got["mean_usd"] == got["mean"]


def test_two_series_sharing_a_hash_fail_rather_than_mix(con: Any) -> None:
    con.execute("DELETE FROM prices")
    for zone, price in (("a", 1.0), ("b", 9.0)):
        con.execute(
            "INSERT INTO prices VALUES ('aws', 'us-east-1', ?, 'p4d.24xlarge', 'spot', NULL, NULL,"
            " NULL, 'USD', ?, ?, 'A100', ?, NULL)",
            [zone, price, price, SINCE],
        )
    sql, params = statistics_sql(SeriesFilters(), Window(SINCE, UNTIL))
    assert len(con.execute(sql, params).fetchall()) == 2
    collided = sql.replace("hash(", "0 * hash(", 1)  # every series hashed alike
    assert collided != sql
    with pytest.raises(duckdb.Error, match="share a hash"):
        con.execute(collided, params).fetchall()
