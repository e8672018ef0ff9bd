"""The GPU types a run saw without a GPU count: noted in the run's transaction, kept with their
first and last sighting, forgotten once a run of their provider prices them; and the read that
lists them beside the offers stored under a model the table lacks."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from collectors.base import PriceRecord
from collectors.common import StoreError
from storage.connection import connect
from storage.reads.gpu_types import UnknownType, unknown_types
from storage.store import Store

T0 = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)
T1, T2 = T0 + timedelta(hours=1), T0 + timedelta(hours=2)


def offer(provider: str, itype: str, **kw: Any) -> PriceRecord:
    fields: dict[str, Any] = {
        "provider": provider,
        "region": "r1",
        "zone": None,
        "instance_type": itype,
        "price_kind": "on_demand",
        "term_months": None,
        "payment_option": None,
        "offering_class": None,
        "currency": "USD",
        "price_per_hour": Decimal("2.5"),
        "upfront_total": None,
        "gpu_model": "L4",
        "gpu_count": 1.0,
        "gpu_memory_gib": 24.0,
    }
    return PriceRecord(**{**fields, **kw})


def write(store: Store, provider: str, at: datetime, types: list[str], unknown: set[str]) -> None:
    records = [offer(provider, t) for t in types]
    store.write_run(provider, records, started_at=at, observed_at=at, regions=None, unknown=unknown)


def not_stored(path: Path) -> list[tuple[str, str, datetime, datetime]]:
    return [
        (t.provider, t.instance_type, t.first_seen, t.last_seen)
        for t in unknown_types(path, timeout_s=None)
        if not t.stored
    ]


def test_a_type_is_kept_from_its_first_sighting_until_it_is_priced(tmp_path: Path) -> None:
    path = tmp_path / "prices.duckdb"
    store = Store(path)
    write(store, "azure", T0, ["known"], {"X", "Y"})
    write(store, "aws", T0, ["known"], {"X"})
    write(store, "azure", T1, ["known"], {"X", "Y"})
    assert not_stored(path) == [
        ("aws", "X", T0, T0),
        ("azure", "X", T0, T1),
        ("azure", "Y", T0, T1),
    ]
    # azure's X is priced now (an entry was added): gone; Y is no longer listed: kept as seen.
    write(store, "azure", T2, ["known", "X"], set())
    assert not_stored(path) == [("aws", "X", T0, T0), ("azure", "Y", T0, T1)]


def test_a_refused_run_notes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "prices.duckdb"
    store = Store(path)
    write(store, "azure", T1, ["known"], set())
    with pytest.raises(StoreError, match="newer collection"):
        write(store, "azure", T0, ["known"], {"X"})
    assert not_stored(path) == []


def test_offers_without_a_model_are_listed_with_what_is_known(tmp_path: Path) -> None:
    path = tmp_path / "prices.duckdb"
    unnamed = {"gpu_model": None, "gpu_count": 2.0, "gpu_memory_gib": 94.0}
    Store(path).write_run(
        "vultr",
        [
            offer("vultr", "vcg-x", region="ewr", **unnamed),
            offer("vultr", "vcg-x", region="ams", price_kind="spot", **unnamed),
            offer("vultr", "vcg-known"),
            offer("vultr", "vcg-b400", region="ewr", gpu_model="B400", gpu_count=8.0),
        ],
        started_at=T0,
        observed_at=T0,
        regions=None,
    )
    x = UnknownType(
        "vultr", "vcg-x", "GPU model unknown", True, None, 2.0, 94.0, ("ams", "ewr"), T0, T0
    )
    assert unknown_types(path, timeout_s=None) == [x]
    # A GPU stored under the provider's own name is unknown to a table that lacks it.
    b400 = UnknownType(
        "vultr", "vcg-b400", "GPU not in the GPU table", True, "B400", 8.0, 24.0, ("ewr",), T0, T0
    )
    assert unknown_types(path, known=["L4", "A100"], timeout_s=None) == [b400, x]
    assert unknown_types(path, "aws", timeout_s=None) == []


def test_a_store_from_before_the_table_reads_without_it(tmp_path: Path) -> None:
    path = tmp_path / "prices.duckdb"
    write(Store(path), "azure", T0, ["known"], {"X"})
    with connect(path, read_only=False) as con:
        con.execute("DROP TABLE unknown_gpu_types")
    assert unknown_types(path, timeout_s=None) == []


def test_a_stored_offer_takes_its_model_once_a_collection_names_it(tmp_path: Path) -> None:
    """The same price named with a model later (a [gpus] entry added) fills the open interval
    in: no new interval, the history shows no change, and the FLOPs columns are computed."""
    from storage.fx import GpuFact

    path = tmp_path / "prices.duckdb"
    store = Store(path, gpu_facts=[GpuFact("L4", 121.0)])
    unnamed = offer("vultr", "vcg-x", gpu_model=None)
    store.write_run("vultr", [unnamed], started_at=T0, observed_at=T0, regions=None)
    named = offer("vultr", "vcg-x")
    store.write_run("vultr", [named], started_at=T1, observed_at=T1, regions=None)
    with connect(path, read_only=True) as con:
        rows = con.execute(
            "SELECT gpu_model, valid_from, valid_to, last_seen, gpu_tflops_fp16, pflop_per_usd "
            "FROM prices WHERE instance_type = 'vcg-x'"
        ).fetchall()
    # 121 TFLOPS x 1 GPU x 3.6 / 2.5 USD an hour = 174.24 PFLOP per USD
    assert rows == [("L4", T0, None, T1, 121.0, pytest.approx(174.24))]
    assert unknown_types(path, timeout_s=None) == []
