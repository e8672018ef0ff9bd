"""A store with known price series for the `history` statistics, written through the real
Store write path: an AWS spot series across the window's edges with a gap and an open interval,
and a Tencent series in CNY converted with dated [fx] rates.

The window the tests use is [2026-11-01, 2026-11-11) UTC (240 h). Spot intervals (USD/h):

    10  2026-10-31 12:00 -> 11-02 00:00   (starts before the window: 24 h inside)
    14  11-02 00:00 -> 11-03 00:00        (24 h)
    --  11-03 00:00 -> 11-04 00:00        a gap: the offer was withdrawn
    12  11-04 00:00 -> 11-08 00:00        (96 h)
     8  11-08 00:00 -> open               (72 h to the window's end)

Tencent (CNY/h, collections dated by the run): 100 from 11-01 00:00 to 11-06 00:00, then 120
open. Rates: 0.14 USD per CNY as of 2026-10-01, 0.15 as of 2026-11-07, so the closed interval
(ending 11-06) converts at 0.14 and the open one (dated today) at 0.15.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path

from collectors.base import PriceRecord
from storage.fx import FxRate
from storage.store import Store

SINCE = datetime(2026, 11, 1, tzinfo=UTC)
UNTIL = datetime(2026, 11, 11, tzinfo=UTC)
RATES = [
    FxRate("CNY", date(2026, 10, 1), Decimal("0.14")),
    FxRate("CNY", date(2026, 11, 7), Decimal("0.15")),
]

SPOT = PriceRecord(
    provider="aws",
    region="us-east-1",
    zone="us-east-1a",
    instance_type="p4d.24xlarge",
    price_kind="spot",
    term_months=None,
    payment_option=None,
    offering_class=None,
    currency="USD",
    price_per_hour=Decimal("10"),
    upfront_total=None,
    gpu_model="A100",
    gpu_count=8,
    gpu_memory_gib=40,
    effective_at=datetime(2026, 10, 31, 12, tzinfo=UTC),
)
TENCENT = PriceRecord(
    provider="tencent",
    region="ap-guangzhou",
    zone=None,
    instance_type="GT4.41XLARGE948",
    price_kind="on_demand",
    term_months=None,
    payment_option=None,
    offering_class=None,
    currency="CNY",
    price_per_hour=Decimal("100"),
    upfront_total=None,
    gpu_model="A100",
    gpu_count=8,
    gpu_memory_gib=40,
)


def day(d: int, hour: int = 0) -> datetime:
    return datetime(2026, 11, d, hour, tzinfo=UTC)


def spot(price: str, at: datetime) -> PriceRecord:
    return replace(SPOT, price_per_hour=Decimal(price), effective_at=at)


def build(path: Path) -> Path:
    """The store described above, at `path`."""
    store = Store(path, fx_rates=RATES)

    def aws(records: list[PriceRecord], at: datetime) -> None:
        store.write_run("aws", records, started_at=at, observed_at=at, regions=("us-east-1",))

    def tencent(price: str, at: datetime) -> None:
        record = replace(TENCENT, price_per_hour=Decimal(price))
        store.write_run("tencent", [record], started_at=at, observed_at=at, regions=None)

    aws([SPOT], day(1))
    tencent("100", day(1))
    aws([spot("14", day(2))], day(2, 1))
    aws([], day(3))  # withdrawn: the interval closes at this collection
    aws([spot("12", day(4))], day(4, 1))
    tencent("120", day(6))
    aws([spot("8", day(8))], day(8, 1))
    return path
