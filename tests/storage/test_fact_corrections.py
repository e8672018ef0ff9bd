"""GPU and host facts corrected while a price stays the same (a [gpus] entry added or changed, a
fixed GPU table, the API's own answer): the open interval takes them in place, with its
computed columns derived again; no interval opens and closed intervals keep what they had."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from collectors.base import PriceRecord
from storage.fx import GpuFact
from storage.query import query
from storage.store import Store
from storage.writes import corrections

T0 = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)
H = timedelta(hours=1)
COLUMNS = """gpu_model, gpu_count, gpu_memory_gib, vcpus, memory_gib, price_per_hour,
    price_per_gpu_hour, gpu_tflops_fp16, round(pflop_per_usd, 4), valid_from, valid_to,
    last_seen"""

NDV2 = PriceRecord(
    provider="azure",
    region="eastus",
    zone=None,
    instance_type="Standard_ND40rs_v2",
    price_kind="on_demand",
    term_months=None,
    payment_option=None,
    offering_class=None,
    currency="USD",
    price_per_hour=Decimal("22.032"),
    upfront_total=None,
    gpu_model="V100",
    gpu_count=1.0,
    gpu_memory_gib=16.0,
)


def history(store: Store) -> list[tuple[Any, ...]]:
    return query(store.path, f"SELECT {COLUMNS} FROM prices ORDER BY valid_from").rows


def write(store: Store, at: datetime, *records: PriceRecord) -> None:
    store.write_run("azure", list(records), started_at=at, observed_at=at, regions=None)


def test_a_correction_at_the_same_price_changes_the_open_interval_in_place(
    tmp_path: Path,
) -> None:
    store = Store(tmp_path / "prices.duckdb", gpu_facts=[GpuFact("V100", 125.0)])
    write(store, T0, NDV2)
    # The user's entry says what the SKU is: 8x V100 32 GB, 40 vCPUs, 672 GiB.
    fixed = replace(NDV2, gpu_count=8.0, gpu_memory_gib=32.0, vcpus=40.0, memory_gib=672.0)
    write(store, T0 + H, fixed)
    # 22.032 / 8 = 2.754 USD per GPU-hour; 125 TFLOPS x 8 x 3.6 / 22.032 = 163.3987 PFLOP/$.
    assert history(store) == [
        ("V100", 8.0, 32.0, 40.0, 672.0, 22.032, 2.754, 125.0, 163.3987, T0, None, T0 + H)
    ]


def test_closed_intervals_keep_the_facts_they_had(tmp_path: Path) -> None:
    store = Store(tmp_path / "prices.duckdb", gpu_facts=[GpuFact("V100", 125.0)])
    write(store, T0, NDV2)
    cheaper = replace(NDV2, price_per_hour=Decimal("20.0"))
    write(store, T0 + H, cheaper)
    write(store, T0 + 2 * H, replace(cheaper, gpu_count=8.0, gpu_memory_gib=32.0))
    # The first price's interval as it was; the current one corrected: 20 / 8 = 2.5 per GPU,
    # 125 x 8 x 3.6 / 20 = 180 PFLOP/$.
    assert history(store) == [
        ("V100", 1.0, 16.0, None, None, 22.032, 22.032, 125.0, 20.4248, T0, T0 + H, T0),
        ("V100", 8.0, 32.0, None, None, 20.0, 2.5, 125.0, 180.0, T0 + H, None, T0 + 2 * H),
    ]


def test_the_same_facts_again_change_nothing_but_last_seen(tmp_path: Path) -> None:
    store = Store(tmp_path / "prices.duckdb", gpu_facts=[GpuFact("V100", 125.0)])
    write(store, T0, NDV2)
    first = history(store)
    write(store, T0 + H, NDV2)
    assert history(store) == [(*first[0][:-1], T0 + H)]


def test_a_fact_the_collection_does_not_give_is_not_erased(tmp_path: Path) -> None:
    """AWS answers from its public files when credentials go: a model only DescribeInstanceTypes
    named, and a host size, are not known then; the stored ones stay."""
    store = Store(tmp_path / "prices.duckdb", gpu_facts=[GpuFact("V100", 125.0)])
    named = replace(NDV2, vcpus=40.0, memory_gib=672.0)
    write(store, T0, named)
    write(store, T0 + H, replace(NDV2, gpu_model=None, gpu_count=8.0, gpu_memory_gib=32.0))
    # 125 x 8 x 3.6 / 22.032 = 163.3987 PFLOP/$: the model kept, the count taken.
    assert history(store) == [
        ("V100", 8.0, 32.0, 40.0, 672.0, 22.032, 2.754, 125.0, 163.3987, T0, None, T0 + H)
    ]


def test_facts_differing_only_where_the_collection_gives_none_are_not_rewritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """AWS answering from its public files every hour: the stored model and host size stand, so
    nothing is corrected, and nothing derived again, run after run."""
    store = Store(tmp_path / "prices.duckdb", gpu_facts=[GpuFact("V100", 125.0)])
    named = replace(NDV2, vcpus=40.0, memory_gib=672.0)
    write(store, T0, named)
    first = history(store)
    derived: list[str] = []
    real = corrections.rederive
    monkeypatch.setattr(
        corrections,
        "rederive",
        lambda con, forget, *a: (derived.append(forget), real(con, forget, *a)),
    )
    public = replace(NDV2, gpu_model=None, vcpus=None, memory_gib=None)
    write(store, T0 + H, public)
    write(store, T0 + 2 * H, public)
    assert derived == []
    assert history(store) == [(*first[0][:-1], T0 + 2 * H)]
    # A fact it does give, corrected, still is: 8 GPUs now, derived again.
    write(store, T0 + 3 * H, replace(public, gpu_count=8.0))
    assert derived == ["p.rowid IN (SELECT row FROM refacts)"]
    assert history(store)[0][:7] == ("V100", 8.0, 16.0, 40.0, 672.0, 22.032, 2.754)
