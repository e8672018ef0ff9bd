"""GPU facts per memory variant (migration 10): the views take a variant's own throughput where
an interval's per-GPU memory is that variant's (H100 NVL, 94 GiB: 835.5 dense FP16 TFLOPS),
else the model's (H100 80 GiB: 989.4). A store of an older schema upgrades with every other
row's values unchanged; replacing the facts computes again exactly the models they changed."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from collectors.base import PriceRecord
from storage import migrations
from storage.connection import connect, transaction
from storage.fx import GpuFact, replace_gpu_facts
from storage.migrations import runner
from storage.store import Store
from tests.storage import old_schema
from tracker.config import Config

NOW = datetime.now(UTC).replace(microsecond=0)
FACTS = Config(source=None, store_path=Path("unused"), providers={}).gpu_facts


def offer(provider: str, itype: str, model: str, count: float, gib: float, price: str) -> Any:
    return PriceRecord(
        provider=provider,
        region="eastus" if provider == "azure" else "us-east-1",
        zone=None,
        instance_type=itype,
        price_kind="on_demand",
        term_months=None,
        payment_option=None,
        offering_class=None,
        currency="USD",
        price_per_hour=Decimal(price),
        upfront_total=None,
        gpu_model=model,
        gpu_count=count,
        gpu_memory_gib=gib,
    )


NVL = offer("azure", "Standard_NC40ads_H100_v5", "H100", 1, 94, "6.98")
AZURE = [NVL, offer("azure", "Standard_ND96isr_H100_v5", "H100", 8, 80, "98.32")]


def flops(path: Path) -> dict[str, tuple[float, float]]:
    with connect(path, read_only=True) as con:
        rows = con.execute(
            "SELECT instance_type, gpu_tflops_fp16, pflop_per_usd FROM prices"
        ).fetchall()
    return {itype: (tflops, pflop) for itype, tflops, pflop in rows}


def test_the_config_gives_the_nvl_its_own_row() -> None:
    assert GpuFact("H100", 835.5, 94.0) in FACTS
    # The model's row is the lowest of its boards' (PCIe), each board has its own.
    assert GpuFact("H100", 756.0) in FACTS
    assert GpuFact("H100", 989.4, form_factor="SXM") in FACTS
    # One row per model, one more per variant with its own FP16 figure: none for the A100s.
    assert [f for f in FACTS if f.gpu_model == "A100"] == [GpuFact("A100", 312.0)]


def test_an_nvl_offer_gets_the_nvl_figures(tmp_path: Path) -> None:
    store = Store(tmp_path / "p.duckdb", gpu_facts=FACTS)
    store.write_run("azure", AZURE, started_at=NOW, observed_at=NOW, regions=None)
    got = flops(store.path)
    # 1 x 835.5 TFLOPS x 3.6 / 6.98 USD; 8 x 989.4 x 3.6 / 98.32 USD.
    assert got["Standard_NC40ads_H100_v5"] == (835.5, 835.5 * 1 * 3.6 / 6.98)
    assert got["Standard_ND96isr_H100_v5"] == (989.4, 989.4 * 8 * 3.6 / 98.32)


def test_replacing_the_facts_computes_again_the_models_they_change(tmp_path: Path) -> None:
    store = Store(tmp_path / "p.duckdb", gpu_facts=FACTS)
    a100 = offer("aws", "p4d.24xlarge", "A100", 8, 40, "32.77")
    store.write_run("azure", AZURE, started_at=NOW, observed_at=NOW, regions=None)
    store.write_run("aws", [a100], started_at=NOW, observed_at=NOW, regions=None)
    with connect(store.path, read_only=False) as con, transaction(con):
        # The NVL figure corrected, the A100's left alone.
        facts = [f for f in FACTS if f.gpu_memory_gib is None or f.gpu_model != "H100"]
        replace_gpu_facts(con, [*facts, GpuFact("H100", 800.0, 94.0)])
        stored = con.execute(
            "SELECT instance_type, gpu_tflops_fp16 FROM price_intervals ORDER BY 1"
        ).fetchall()
    assert stored == [
        ("Standard_NC40ads_H100_v5", 800.0),
        ("Standard_ND96isr_H100_v5", 989.4),
        ("p4d.24xlarge", 312.0),
    ]
    with connect(store.path, read_only=False) as con, transaction(con):
        replace_gpu_facts(con, [f for f in FACTS if f.gpu_memory_gib is None])  # variant gone
    # The board its type says (NC H100 v5: the NVL) then gives its figure.
    assert flops(store.path)["Standard_NC40ads_H100_v5"][0] == 835.5


def test_an_old_store_upgrades_with_every_other_value_unchanged(tmp_path: Path) -> None:
    """A store left by the release before migration 10, its facts one row per model: after the
    upgrade and the next write's facts, only the 94 GiB H100 moves."""
    path = tmp_path / "old.duckdb"
    intervals = [
        ("azure", "Standard_NC40ads_H100_v5", "H100", 1, 94, 6.98),
        ("azure", "Standard_ND96isr_H100_v5", "H100", 8, 80, 98.32),
        ("aws", "p4d.24xlarge", "A100", 8, 40, 32.77),
        ("aws", "p4de.24xlarge", "A100", 8, 80, 40.96),
        ("aws", "g4dn.xlarge", "T4", 1, 16, 0.526),
        ("vastai", "1x Mystery", None, 1, 24, 0.3),
    ]
    with connect(path, read_only=False) as con:
        old_schema.build(con, 3)
        for version, name, statements in migrations.MIGRATIONS:
            if 3 < version < 10:  # the release before: its tables, no views of this one
                with transaction(con):
                    runner._apply(con, version, name, statements)
        with transaction(con):
            for provider, itype, model, count, gib, price in intervals:
                con.execute(
                    "INSERT INTO price_intervals (offer_key, provider, region, instance_type,"
                    " price_kind, currency, price_per_hour, gpu_model, gpu_count,"
                    " gpu_memory_gib, valid_from, last_seen, run_id)"
                    " VALUES (?, ?, 'r', ?, 'on_demand', 'USD', ?, ?, ?, ?, ?, ?, 1)",
                    [itype, provider, itype, price, model, count, gib, NOW, NOW],
                )
            for model, tflops in (("H100", 989.4), ("A100", 312.0), ("T4", 65.0)):
                con.execute("INSERT INTO gpu_facts VALUES (?, ?)", [model, tflops])
        # What the old view gave: the model's figure for every memory.
        before = {
            itype: (tflops, tflops * count * 3.6 / price if tflops else None)
            for _, itype, model, count, gib, price in intervals
            for tflops in [{"H100": 989.4, "A100": 312.0, "T4": 65.0}.get(model or "")]
        }
        assert 10 in migrations.migrate(con)
        facts = "SELECT gpu_model, gpu_memory_gib, fp16_tflops FROM gpu_facts ORDER BY 1"
        assert con.execute(facts).fetchall() == [
            ("A100", None, 312.0),
            ("H100", None, 989.4),
            ("T4", None, 65.0),
        ]
        with transaction(con):  # as the next write does
            replace_gpu_facts(con, FACTS)
    after = flops(path)
    nvl = "Standard_NC40ads_H100_v5"
    assert after[nvl] == (835.5, 835.5 * 3.6 / 6.98)
    assert {k: v for k, v in after.items() if k != nvl} == {
        k: v for k, v in before.items() if k != nvl
    }
