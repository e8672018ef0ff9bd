"""A small store with hand-worked market index values, written through the real Store write
path (all times UTC, rates: 0.14 USD per CNY as of 2026-10-01).

H100 (80 GiB) on-demand, per GPU-hour in USD, first collected 2026-11-01 10:00:

    aws         three offers, 8 GPUs each: 16, 32, 72 USD/h -> 2.0, 4.0, 9.0; median 4.0
    lambdalabs  one offer, 2.5 (2.0 from 2026-11-03 06:00)
    tencent     one offer of 8 GPUs at 160 CNY/h -> 20 CNY per GPU -> 2.8 USD
    vastai      1.6, and a sold-out offer at 1.0 (left out)

So at the end of 2026-11-01 and 11-02 (an even count of providers):
all = lower middle of [1.6, 2.5, 2.8, 4.0] = 2.5 (4 providers, no interval);
hyperscaler = lower middle of [2.8, 4.0] = 2.8 (low confidence); neocloud 2.5; marketplace 1.6.
Today (2026-11-03, now 12:00): lambdalabs is at 2.0, so all = 2.0; a lambdalabs change at 18:00,
after now, is not counted.

L40S (48 GiB) on-demand: runpod's community offer 0.8 (marketplace) and its secure offer 1.2
(neocloud), vastai 0.5. all: runpod votes 0.8 (the lower middle of 0.8, 1.2), so the lower
middle of 0.5 and 0.8 is 0.5; marketplace: 0.5 and 0.8 -> 0.5; neocloud: 1.2.

The interval's order statistics: A10 offered by five providers p1..p5 at 1..5 USD, L4 by six
at 1..6, A100 by nine at 1..9 (one GPU each, on-demand, from 2026-11-01 10:00).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path

from collectors.base import PriceRecord
from storage.fx import FxRate
from storage.store import Store

NOW = datetime(2026, 11, 3, 12, tzinfo=UTC)
RATES = [FxRate("CNY", date(2026, 10, 1), Decimal("0.14"))]

BASE = PriceRecord(
    provider="aws",
    region="us-east-1",
    zone=None,
    instance_type="p5.48xlarge",
    price_kind="on_demand",
    term_months=None,
    payment_option=None,
    offering_class=None,
    currency="USD",
    price_per_hour=Decimal("32"),
    upfront_total=None,
    gpu_model="H100",
    gpu_count=8,
    gpu_memory_gib=80,
)


def at(day: int, hour: int) -> datetime:
    return datetime(2026, 11, day, hour, tzinfo=UTC)


def offer(provider: str, instance_type: str, price: str, **more: object) -> PriceRecord:
    return replace(
        BASE,
        provider=provider,
        instance_type=instance_type,
        price_per_hour=Decimal(price),
        **more,  # type: ignore[arg-type]
    )


def build(path: Path) -> Path:
    """The store described above, at `path`."""
    store = Store(path, fx_rates=RATES)

    def write(provider: str, records: list[PriceRecord], when: datetime) -> None:
        store.write_run(provider, records, started_at=when, observed_at=when, regions=None)

    start = at(1, 10)
    write(
        "aws",
        [offer("aws", "a", "16"), offer("aws", "b", "32"), offer("aws", "c", "72")],
        start,
    )
    write("tencent", [offer("tencent", "t", "160", currency="CNY")], start)
    vast = {"gpu_count": 1, "region": None}
    write(
        "vastai",
        [
            offer("vastai", "v1", "1.6", **vast),
            offer("vastai", "v2", "1.0", available=False, **vast),
            offer("vastai", "v3", "0.5", gpu_model="L40S", gpu_memory_gib=48, **vast),
        ],
        start,
    )
    pod = {"gpu_count": 1, "region": None, "gpu_model": "L40S", "gpu_memory_gib": 48}
    runpod = [
        offer("runpod", "community/L40S", "0.8", **pod),
        offer("runpod", "secure/L40S", "1.2", **pod),
    ]
    write("runpod", runpod, start)
    lambda_ = {"gpu_count": 1, "region": "us-west-1"}
    write("lambdalabs", [offer("lambdalabs", "l", "2.5", **lambda_)], start)
    write("lambdalabs", [offer("lambdalabs", "l", "2.0", **lambda_)], at(3, 6))
    write("lambdalabs", [offer("lambdalabs", "l", "1.0", **lambda_)], at(3, 18))
    counts = {"A10": 5, "L4": 6, "A100": 9}
    for i in range(1, 10):
        records = [
            offer(f"p{i}", model, str(i), gpu_model=model, gpu_count=1, gpu_memory_gib=24)
            for model, count in counts.items()
            if i <= count
        ]
        write(f"p{i}", records, start)
    return path
