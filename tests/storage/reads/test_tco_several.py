"""storage.reads.tco.several (the review's 3-year strategies, every GPU model of a side in one
read) on a real store written through the store: each model's answer is the one `tco` gives for
that model alone, and the totals are the formula's, worked out by hand."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from decimal import Decimal
from pathlib import Path

import pytest

from storage.connection import connect
from storage.reads.tco import Need, Tco, several, tco
from storage.store import Store
from tests.storage.test_tco_reads import ON_DEMAND, SPOT, T0, TENCENT, H, write

H100 = replace(ON_DEMAND, instance_type="p5.48xlarge", gpu_model="H100", gpu_memory_gib=80)
RESERVED = replace(
    ON_DEMAND, price_kind="reserved", term_months=12, payment_option="all_upfront",
    offering_class="standard", price_per_hour=Decimal("12.993037"),
    upfront_total=Decimal("113819"),
)  # fmt: skip
# "a100" asks for the same offers as "A100"; nobody sells a V100 here; "A100" twice is once.
MODELS = ["A100", "H100", "V100", "a100", "A100"]
YEAR = Need("", months=12)  # 8 GPUs, 8,760 hours


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """At T0 A100 on-demand 30 and spot 10, H100 98.32 and spot 7 (instance prices, 8 GPUs
    each); two hours later A100 on-demand 21.957642, spot 10, a 1-year reserved term, H100 55.04
    and spot 5 (cheaper than A100's: a blend of A100 must not take it), and Tencent's A100
    priced in CNY with no rate."""
    kept = Store(tmp_path_factory.mktemp("several") / "p.duckdb")
    a100_then = replace(ON_DEMAND, price_per_hour=Decimal("30"))
    h100_spot = replace(H100, price_kind="spot", zone="use1-az6", price_per_hour=Decimal("7"))
    then = [a100_then, SPOT, replace(H100, price_per_hour=Decimal("98.32")), h100_spot]
    write(kept, then, T0, ["us-east-1"])
    h100_spot = replace(h100_spot, price_per_hour=Decimal("5"))
    now = [ON_DEMAND, SPOT, RESERVED, replace(H100, price_per_hour=Decimal("55.04")), h100_spot]
    write(kept, now, T0 + 2 * H, ["us-east-1"])
    write(kept, [TENCENT], T0 + 2 * H, ["ap-guangzhou"])
    return kept.path


def alone(path: Path, need: Need, as_of: datetime | None, baseline: int | None) -> dict[str, Tco]:
    with connect(path, read_only=True) as con:
        return {m: tco(con, replace(need, gpu=m), as_of=as_of, baseline=baseline) for m in MODELS}


def together(
    path: Path, need: Need, as_of: datetime | None, baseline: int | None
) -> dict[str, Tco]:
    with connect(path, read_only=True) as con:
        return several(con, MODELS, need, as_of=as_of, baseline=baseline)


@pytest.mark.parametrize("as_of", [None, T0 + H, T0 + 3 * H], ids=["now", "then", "after"])
@pytest.mark.parametrize(
    ("need", "baseline"),
    [
        (YEAR, None),
        (replace(YEAR, gpus=16), 8),  # blends: A100 has a reserved term, H100 none
        (replace(YEAR, spot_basis="mean", spot_window_s=86400), None),  # statistics per model
        (replace(YEAR, providers=("aws",), migration_usd=500.0, current_provider="aws"), None),
    ],
    ids=["defaults", "blend", "spot-mean", "filters"],
)
def test_each_model_gets_the_answer_it_gets_alone(
    store: Path, need: Need, baseline: int | None, as_of: datetime | None
) -> None:
    found = together(store, need, as_of, baseline)
    assert found == alone(store, need, as_of, baseline)
    assert list(found) == ["A100", "H100", "V100", "a100"]
    assert found["A100"].rows and found["H100"].rows and found["V100"].offers == 0


def totals(answer: Tco) -> dict[str, float]:
    return {f"{r['provider']} {r['price_kind']}": r["total_usd"] for r in answer.rows}


def test_totals_now_and_then_by_hand(store: Path) -> None:
    now, then = together(store, YEAR, None, None), together(store, YEAR, T0 + H, None)
    # One instance of 8 GPUs for 8,760 hours: on-demand 21.957642 x 8760 = 192,348.94; spot
    # 10 x 8760 x 1.10 = 96,360; reserved 1 term x 12.993037 x 730 x 12 = 113,819.00.
    assert totals(now["A100"]) == {
        "aws spot": 96360.0, "aws reserved": 113819.0, "aws on_demand": 192348.94,
    }  # fmt: skip
    assert now["a100"].rows == now["A100"].rows
    # H100: on-demand 55.04 x 8760 = 482,150.40; spot 5 x 8760 x 1.10 = 48,180.
    assert totals(now["H100"]) == {"aws spot": 48180.0, "aws on_demand": 482150.4}
    # Then (an hour after T0): on-demand 30 x 8760 = 262,800, no reserved term yet; H100 98.32
    # x 8760 = 861,283.20, spot 7 x 8760 x 1.10 = 67,452.
    assert totals(then["A100"]) == {"aws spot": 96360.0, "aws on_demand": 262800.0}
    assert totals(then["H100"]) == {"aws spot": 67452.0, "aws on_demand": 861283.2}
    # Tencent's A100 has no USD rate: counted for A100 only, on the side where it is in force.
    assert now["A100"].excluded == {"no USD rate for CNY": 1} and now["A100"].offers == 4
    assert now["H100"].excluded == {} and now["H100"].offers == 2
    assert then["A100"].excluded == {} and then["A100"].offers == 2
    assert then["H100"].offers == 2


def test_spot_at_each_models_own_series_mean(store: Path) -> None:
    # Over the day to T0 + 3 h: H100's spot 7 for two hours, 5 for one: mean 19 / 3, x 8760 x
    # 1.10 = 61,028; A100's spot 10 all along: 96,360.
    need = replace(YEAR, spot_basis="mean", spot_window_s=86400)
    found = together(store, need, T0 + 3 * H, None)
    assert totals(found["H100"])["aws spot"] == 61028.0
    assert totals(found["A100"])["aws spot"] == 96360.0


def test_no_models_no_answers(store: Path) -> None:
    with connect(store, read_only=True) as con:
        assert several(con, [], YEAR) == {}
