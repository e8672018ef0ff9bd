"""The write's one-pass screening (`storage.writes.screened_batch`) gives exactly what the
record-by-record rule gives (`screen`, then `to_arrow`): the same records kept, the same skips
by reason, the same unreadable types, the same Arrow table, for clean collections (which take
the fast way) and for seeded-random ones with hostile and borderline rows mixed in.
"""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from collectors.base import PriceRecord
from storage.writes.batch import to_arrow
from storage.writes.screened_batch import _all_fit, screen_batch
from storage.writes.validate import PriceLimits, screen

NOW = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)
LIMITS = PriceLimits()


def _record(n: int, rng: random.Random) -> PriceRecord:
    kind = rng.choice(["on_demand", "spot", "reserved"])
    reserved = kind == "reserved"
    return PriceRecord(
        provider="aws",
        region=rng.choice(["us-east-1", "eu-west-1", None]),
        zone=rng.choice(["us-east-1a", None]) if kind == "spot" else None,
        instance_type=f"type{n % 40}.xlarge",
        price_kind=kind,
        term_months=rng.choice([12, 36]) if reserved else None,
        payment_option="All Upfront" if reserved else None,
        offering_class="standard" if reserved else None,
        currency=rng.choice(["USD", "USD", "EUR", "CNY"]),
        price_per_hour=Decimal(rng.randint(1, 90_000_000)) / 1_000_000,
        upfront_total=Decimal(rng.randint(0, 10_000_000)) / 100 if reserved else None,
        gpu_model=rng.choice(["A100", "H100", None]),
        gpu_count=rng.choice([1, 2, 4, 8, 0.5]),
        gpu_memory_gib=rng.choice([24.0, 80]),
        vcpus=rng.choice([8, 96, None]),
        memory_gib=rng.choice([64.0, None]),
        effective_at=NOW - timedelta(minutes=n) if kind == "spot" else None,
        available=rng.choice([None, True, False]),
    )


# Rows the rule skips or changes, and rows at its edges that it keeps.
HOSTILE: list[dict[str, Any]] = [
    {"price_per_hour": Decimal("1.2345675")},  # rounded to six places, kept
    {"price_per_hour": Decimal("0.0000004")},
    {"price_per_hour": Decimal("-1")},
    {"price_per_hour": Decimal("NaN")},
    {"price_per_hour": Decimal("Infinity")},
    {"price_per_hour": Decimal("1E+13")},
    {"price_per_hour": 3},
    {"price_per_hour": 2.5},
    {"price_per_hour": Decimal("8000"), "gpu_count": 8, "currency": "USD"},  # at the ceiling
    {"price_per_hour": Decimal("8000.000001"), "gpu_count": 8, "currency": "USD"},
    {"region": ""},
    {"region": " "},
    {"instance_type": " "},
    {"instance_type": None},
    {"zone": "a\x1bb"},
    {"gpu_model": "x" * 201},
    {"currency": "usd"},
    {"currency": "XYZ"},
    {"gpu_count": 0},
    {"gpu_count": 2048},
    {"gpu_count": float("nan")},
    {"vcpus": -1},
    {"term_months": 0},
    {"term_months": 12, "upfront_total": Decimal("-5")},
    {"term_months": None, "upfront_total": Decimal("0")},
    {"term_months": None, "upfront_total": Decimal("5")},
    {"term_months": 12, "upfront_total": Decimal("99999999")},
    {"effective_at": datetime(2026, 11, 30, 6, 0)},  # naive
    {"effective_at": NOW + timedelta(days=2)},
    {"effective_at": NOW + timedelta(hours=23)},  # skew, kept
    {"available": 1},
    {"available": "yes"},
    {"provider": 7},
]


def _same(records: list[PriceRecord]) -> None:
    expected = screen(records, LIMITS, observed_at=NOW)
    screened, batch = screen_batch(records, LIMITS, observed_at=NOW)
    assert screened.records == expected.records
    assert screened.skipped == expected.skipped
    assert screened.unreadable == expected.unreadable
    assert batch.equals(to_arrow(expected.records))


@pytest.mark.parametrize("seed", range(4))
def test_a_clean_collection_takes_the_fast_way_and_gives_the_same(seed: int) -> None:
    rng = random.Random(seed)
    records = [_record(n, rng) for n in range(500)]
    assert _all_fit(records, LIMITS, NOW) is not None
    _same(records)


@pytest.mark.parametrize("hostile", range(len(HOSTILE)))
def test_each_hostile_or_borderline_row_gives_what_the_rule_gives(hostile: int) -> None:
    rng = random.Random(hostile)
    records = [_record(n, rng) for n in range(60)]
    records[17] = replace(records[17], **HOSTILE[hostile])
    _same(records)


@pytest.mark.parametrize("seed", range(20))
def test_seeded_random_mixtures_give_what_the_rule_gives(seed: int) -> None:
    rng = random.Random(seed)
    records = [_record(n, rng) for n in range(200)]
    for _ in range(rng.randint(0, 4)):
        at = rng.randrange(len(records))
        records[at] = replace(records[at], **rng.choice(HOSTILE))
    _same(records)


def test_an_empty_collection_gives_an_empty_table() -> None:
    _same([])
