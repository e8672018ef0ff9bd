"""Transfer prices kept change-only beside the prices, in the collection's transaction
(`storage.writes.transfer`), read through the `transfer_prices` view in USD by the dated FX
rates, and priced with their tiers (`storage.reads.transfer`)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from collectors.base import TransferRate
from storage.connection import connect
from storage.fx import FxRate
from storage.reads import transfer
from storage.store import Store
from tests.storage.test_store import rec

T0 = datetime(2026, 11, 1, tzinfo=UTC)
H = timedelta(hours=1)
FX = [FxRate("CNY", date(2026, 1, 1), Decimal("0.14")), FxRate("CNY", date(2026, 11, 1),
      Decimal("0.125"))]  # fmt: skip


def tier(start: str, end: str | None, price: str, region: str | None = "us-east-1",
         direction: str = "out_internet", currency: str = "USD") -> TransferRate:  # fmt: skip
    return TransferRate(region, direction, Decimal(start), None if end is None else Decimal(end),
                        currency, Decimal(price))  # fmt: skip


AWS = [tier("0", "10240", "0.09"), tier("10240", None, "0.085")]


def write(store: Store, at: datetime, rates: list[TransferRate] | None, **more: Any) -> None:
    store.write_run("aws", [rec("21.957642")], started_at=at, observed_at=at,
                    regions=["us-east-1"], transfer=rates, **more)  # fmt: skip


def rows(store: Store, sql: str = "") -> list[tuple[Any, ...]]:
    with connect(store.path, read_only=True) as con:
        found: list[tuple[Any, ...]] = con.execute(
            "SELECT region, from_gib, to_gib, usd_per_gib, valid_from, valid_to, last_seen "
            f"FROM transfer_prices {sql} ORDER BY valid_from, region, from_gib"
        ).fetchall()
    return found


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "prices.duckdb", fx_rates=FX)


def test_an_unchanged_tier_is_confirmed_a_changed_one_replaced(store: Store) -> None:
    write(store, T0, AWS)
    write(store, T0 + H, AWS)  # the same: last_seen moves, nothing opens
    assert [(r[1], r[5], r[6]) for r in rows(store)] == [
        (0.0, None, T0 + H),
        (10240.0, None, T0 + H),
    ]
    write(store, T0 + 2 * H, [tier("0", "10240", "0.08"), AWS[1]])  # the first tier repriced
    found = rows(store)
    assert [(r[1], r[3], r[5]) for r in found] == [
        (0.0, 0.09, T0 + 2 * H), (10240.0, 0.085, None), (0.0, 0.08, None),
    ]  # fmt: skip
    write(store, T0 + 3 * H, None)  # a run without transfer prices leaves them be
    assert len(rows(store, "WHERE valid_to IS NULL")) == 2
    write(store, T0 + 4 * H, [AWS[1]])  # a tier no longer priced closes
    assert [r[1] for r in rows(store, "WHERE valid_to IS NULL")] == [10240.0]


def test_a_held_run_changes_no_transfer_price(store: Store) -> None:
    from storage.writes.suspect import Suspicion

    records = [rec(str(20 + i), itype=f"p{i}.x") for i in range(10)]
    store.write_run("aws", records, started_at=T0, observed_at=T0, regions=None, transfer=AWS)
    store.write_run("aws", records[:1], started_at=T0 + H, observed_at=T0 + H, regions=None,
                    transfer=[], suspicion=Suspicion())  # fmt: skip
    assert len(rows(store, "WHERE valid_to IS NULL")) == 2  # held: nothing of it written


def test_rates_the_store_cannot_hold_are_dropped_not_the_run(store: Store) -> None:
    hostile = [
        tier("0", "10", "-1"), tier("0", "10", "1e300"), tier("10", "5", "0.1"),
        tier("0", None, "0.1", direction="sideways"), tier("NaN", None, "0.1"),
        tier("0", None, "0.1", currency="dollars"), tier("0", None, "0.1", region="x" * 200),
        tier("0", None, "0.0000004"),
    ]  # fmt: skip
    write(store, T0, hostile)
    assert [(r[1], r[3]) for r in rows(store)] == [(0.0, 0.0)]  # the last, at six places


def test_usd_through_the_dated_rates_and_tiers_applied(store: Store) -> None:
    cny = [tier("0", "100", "0", region=None, currency="CNY"),
           tier("100", None, "0.8", region=None, currency="CNY")]  # fmt: skip
    write(store, T0, [*AWS, *cny])
    write(store, T0 + 24 * H, [*AWS, cny[0], tier("100", None, "0.6", None, currency="CNY")])
    # The closed CNY tier is priced at the rate of its last day (2026-11-02: 0.125), the open
    # one at today's (the newest): 0.8 x 0.125 = 0.1, 0.6 x 0.125 = 0.075.
    assert [r[3] for r in rows(store, "WHERE region IS NULL AND from_gib = 100")] == [0.1, 0.075]
    with connect(store.path, read_only=True) as con:
        # 20,000 GiB out of us-east-1: 10,240 x 0.09 + 9,760 x 0.085 = 921.60 + 829.60.
        aws = transfer.cost(con, "aws", "us-east-1", 20000)
        assert [(m.region, m.usd) for m in aws] == [("us-east-1", 1751.2)]
        # No region asked: each region's own tiers and the flat rate, dearest first;
        # the flat CNY rate: (20,000 - 100) x 0.6 x 0.125 = 1,492.50 USD.
        both = transfer.cost(con, "aws", None, 20000)
        assert [(m.region, m.usd) for m in both] == [("us-east-1", 1751.2), (None, 1492.5)]
        # A region without tiers of its own takes the flat rate; at a past moment, the then.
        assert [m.usd for m in transfer.cost(con, "aws", "eu-west-1", 20000)] == [1492.5]
        then = transfer.cost(con, "aws", "eu-west-1", 20000, T0 + H)
        assert [m.usd for m in then] == [1990.0]  # 19,900 x 0.8 x 0.125
        assert transfer.cost(con, "gcp", None, 20000) == []
