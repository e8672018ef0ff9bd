"""Compute by form factor (docs/gpus.md, "Form factors"): an offer's TFLOPS are its board's
(H100 SXM 989.4, PCIe 756, NVL 835.5) where its instance type or GPU name says the board, else
the model's lowest figure, never an overstatement; in the store's views as in the GPU table."""

from __future__ import annotations

import dataclasses
import json
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner

from collectors import gpus
from collectors.base import PriceRecord
from collectors.common import ConfigError
from collectors.gpus import GPU_MODELS, form_factor
from collectors.gpus.forms import FORM_FACTORS
from storage.connection import connect
from storage.fx import GpuFact
from storage.store import Store
from tests.collectors.support import NOW, demo_json, list_price
from tracker.cli import cli
from tracker.config import Config, from_dict

FACTS = Config(source=None, store_path=Path("unused"), providers={}).gpu_facts


def _sql(store: Path, query: str) -> list[dict[str, object]]:
    result = CliRunner().invoke(cli, ["--db", str(store), "sql", "--format", "json", query])
    assert result.exit_code == 0, result.output
    rows: list[dict[str, object]] = json.loads(result.output)
    return rows


def _lambda_cents(name: str) -> int:
    """The hourly price of a Lambda type in the demo's recording, in cents, as the API says it."""
    answer = demo_json("lambdalabs", "instance-types.json")
    return int(answer["data"][name]["instance_type"]["price_cents_per_hour"])


def test_a_pcie_h100_buys_pcie_compute(demo_kept: Path) -> None:
    # Lambda's answer: gpu_1x_h100_pcie at 329 cents an hour, "1x H100 (80 GB PCIe)". The H100
    # PCIe is 756 dense FP16 TFLOPS, not the SXM's 989.4. PFLOP/$ = TFLOPS x GPUs x 3.6 / USD/h
    # (docs/sql.md): 756 x 1 x 3.6 / 3.29 = 2721.6 / 3.29 = 827.234...
    assert _lambda_cents("gpu_1x_h100_pcie") == 329
    [row] = _sql(
        demo_kept,
        "SELECT DISTINCT gpu_tflops_fp16, pflop_per_usd, price_per_gpu_hour_usd FROM prices"
        " WHERE instance_type = 'gpu_1x_h100_pcie' AND valid_to IS NULL",
    )
    assert row["price_per_gpu_hour_usd"] == 3.29
    assert row["gpu_tflops_fp16"] == 756.0
    assert row["pflop_per_usd"] == pytest.approx(2721.6 / 3.29)
    assert round(2721.6 / 3.29, 1) == 827.2


def test_the_sxm_and_the_nvl_get_their_own(demo_kept: Path) -> None:
    # gpu_8x_h100_sxm5 at 3192 cents for 8 GPUs: 989.4 x 8 x 3.6 / 31.92 = 28494.72 / 31.92.
    assert _lambda_cents("gpu_8x_h100_sxm5") == 3192
    rows = _sql(
        demo_kept,
        "SELECT DISTINCT provider, instance_type, gpu_tflops_fp16, pflop_per_usd,"
        " price_per_hour_usd FROM latest_prices WHERE instance_type IN ('gpu_8x_h100_sxm5',"
        " 'p5.48xlarge', 'a3-highgpu-8g', 'Standard_NC40ads_H100_v5',"
        " 'secure/NVIDIA H100 80GB HBM3', 'secure/NVIDIA H200', 'p5en.48xlarge')",
    )
    tflops = {str(r["instance_type"]): r["gpu_tflops_fp16"] for r in rows}
    assert tflops == {
        "gpu_8x_h100_sxm5": 989.4,  # Lambda: "SXM5" in its name
        "p5.48xlarge": 989.4,  # AWS P5: HGX H100
        "a3-highgpu-8g": 989.4,  # GCP A3: H100 SXM
        "Standard_NC40ads_H100_v5": 835.5,  # Azure NC H100 v5: the H100 NVL (94 GB)
        "secure/NVIDIA H100 80GB HBM3": 989.4,  # RunPod's displayName "H100 SXM"
        "secure/NVIDIA H200": 989.4,  # RunPod's displayName "H200 SXM"
        "p5en.48xlarge": 989.4,  # AWS P5en: HGX H200
    }
    sxm = next(r for r in rows if r["instance_type"] == "gpu_8x_h100_sxm5")
    assert sxm["price_per_hour_usd"] == 31.92
    assert sxm["pflop_per_usd"] == pytest.approx(28494.72 / 31.92)


def test_where_nothing_says_the_board_the_lowest_figure_applies(demo_kept: Path) -> None:
    rows = _sql(
        demo_kept,
        "SELECT DISTINCT instance_type, gpu_tflops_fp16 FROM latest_prices"
        " WHERE instance_type IN ('H100-1x', 'gpu-h100x8-640gb', 'H200-1x-vm', 'gpu_8x_v100')",
    )
    assert {str(r["instance_type"]): r["gpu_tflops_fp16"] for r in rows} == {
        "H100-1x": 756.0,  # JarvisLabs says "H100": the PCIe's, not the SXM's 989.4
        "gpu-h100x8-640gb": 756.0,  # DigitalOcean's gpu_info names no board either
        "H200-1x-vm": 835.5,  # the H200 NVL's, not the SXM's 989.4
        "gpu_8x_v100": 112.0,  # Lambda's "Tesla V100 (16 GB)": the PCIe's, not SXM2's 125
    }


def test_the_store_reads_every_type_as_the_table_does(demo_kept: Path) -> None:
    """The views match the rules in SQL (RE2), the table in Python: the same board for every
    type of the demo, and the TFLOPS of GpuModel.tflops."""
    rows = _sql(
        demo_kept,
        "SELECT DISTINCT provider, instance_type, gpu_model, gpu_memory_gib, gpu_tflops_fp16"
        " FROM prices WHERE gpu_model IS NOT NULL",
    )
    assert len(rows) > 100
    for r in rows:
        board = form_factor(str(r["provider"]), str(r["instance_type"]))
        memory = float(r["gpu_memory_gib"])  # type: ignore[arg-type]
        expected = gpus.tflops(str(r["gpu_model"]), memory, board)[0]
        assert r["gpu_tflops_fp16"] == expected, r


@pytest.mark.parametrize(
    ("provider", "itype", "board"),
    [
        ("lambdalabs", "gpu_1x_h100_pcie", "PCIe"),
        ("lambdalabs", "gpu_8x_h100_sxm5", "SXM"),
        ("aws", "p5.48xlarge", "SXM"),
        ("aws", "p3.16xlarge", "SXM"),
        ("azure", "Standard_NC40ads_H100_v5", "NVL"),
        ("azure", "Standard_NC80adis_H100_v5", "NVL"),
        ("azure", "Standard_ND96isr_H200_v5", "SXM"),
        ("gcp", "a3-megagpu-8g", "SXM"),
        ("vastai", "2x H100 PCIE", "PCIe"),
        ("vastai", "1x H200 NVL", "NVL"),
        ("runpod", "community/NVIDIA H100 NVL", "NVL"),
        ("runpod", "secure/NVIDIA H100 PCIe", "PCIe"),
        ("paperspace", "gpu-h100x1-80gb", None),
        ("jarvislabs", "H100-1x", None),
        ("anyone", "8x V100 NVLink", None),  # NVLink is no NVL
        ("gcp", "a2-highgpu-8g", None),  # the A100 has one figure: no rule needed
    ],
)
def test_the_rules_read_the_board_from_the_name(provider: str, itype: str, board: str) -> None:
    assert form_factor(provider, itype) == board


def test_the_figures_of_each_board_and_the_lowest() -> None:
    h100, h200, v100, p100 = (GPU_MODELS[m] for m in ("H100", "H200", "V100", "P100"))
    assert {f.name: (f.fp16_tflops, f.fp32_tflops) for f in h100.form_factors} == {
        "SXM": (989.4, 66.9),
        "PCIe": (756.0, 51.2),
        "NVL": (835.5, 60.0),
    }
    assert h100.tflops(80) == (756.0, 51.2)  # nothing says: the lowest
    assert h100.tflops(94) == h100.tflops(94, "SXM") == (835.5, 60.0)  # 94 GB is the NVL
    assert (h200.tflops(141), h200.tflops(141, "SXM")) == ((835.5, 60.0), (989.4, 66.9))
    assert (v100.tflops(16, "SXM"), v100.tflops(32)) == ((125.0, 15.7), (112.0, 14.0))
    # The P100 row carried the PCIe figures under an SXM2 source: now each board its own.
    assert (p100.tflops(16, "SXM"), p100.tflops(16, "PCIe")) == ((21.2, 10.6), (18.7, 9.3))
    assert GPU_MODELS["A100"].form_factors == ()  # SXM4 and PCIe alike: 312


def test_every_figure_has_a_source_and_a_model_never_overstates() -> None:
    for model in GPU_MODELS.values():
        assert model.source, model.name
        for board in model.form_factors:
            assert board.name in FORM_FACTORS and board.source, (model.name, board)
            assert board.fp16_tflops is not None and model.fp16_tflops is not None
            assert model.fp16_tflops <= board.fp16_tflops, (model.name, board)
        for variant in model.variants:
            assert variant.source or model.source, (model.name, variant)
        # The table writes the lowest as the model's own figures, what the store's model row is.
        assert (model.fp16_tflops, model.fp32_tflops) == model.unstated(), model.name


def test_an_unknown_board_is_a_config_error_naming_its_key() -> None:
    with pytest.raises(ConfigError, match=r"gpus\.models\.H100\.form_factors\.OAM: expected one"):
        from_dict({"gpus": {"models": {"H100": {"form_factors": {"OAM": {}}}}}}, source=None)


def _offer(itype: str, price: str) -> PriceRecord:
    return list_price(
        "lambdalabs",
        region="us-east-1",
        instance_type=itype,
        price_kind="on_demand",
        price_per_hour=Decimal(price),
        gpu_model="H100",
        gpu_count=1,
        gpu_memory_gib=80,
    )


def test_a_store_written_with_the_old_figures_shows_the_board_after_the_next_write(
    tmp_path: Path,
) -> None:
    """A store whose history was priced at the SXM figure for every H100 (the facts of earlier
    releases: one row per model) takes the board's figure, closed intervals included, with the
    next write of the current facts."""
    path, t0 = tmp_path / "p.duckdb", NOW
    old = Store(path, gpu_facts=[GpuFact("H100", 989.4)])
    old.write_run("lambdalabs", [_offer("gpu_1x_h100_pcie", "2.49")], started_at=t0,
                  observed_at=t0, regions=None)  # fmt: skip
    t1 = t0 + timedelta(hours=1)
    old.write_run("lambdalabs", [_offer("gpu_1x_h100_pcie", "3.29")], started_at=t1,
                  observed_at=t1, regions=None)  # fmt: skip
    query = "SELECT gpu_tflops_fp16 FROM prices ORDER BY valid_from"
    with connect(path, read_only=True) as con:
        assert con.execute(query).fetchall() == [(989.4,), (989.4,)]
    t2 = t1 + timedelta(hours=1)
    Store(path, gpu_facts=FACTS).write_run(
        "lambdalabs", [_offer("gpu_1x_h100_pcie", "3.29")], started_at=t2, observed_at=t2,
        regions=None,
    )  # fmt: skip
    with connect(path, read_only=True) as con:
        assert con.execute(query).fetchall() == [(756.0,), (756.0,)]
        # 756 x 1 x 3.6 / 2.49 for the closed interval.
        closed = con.execute("SELECT pflop_per_usd FROM prices WHERE valid_to IS NOT NULL")
        assert closed.fetchall() == [(pytest.approx(2721.6 / 2.49),)]


def test_a_users_entry_says_the_board_of_a_type_whose_name_does_not(tmp_path: Path) -> None:
    config = from_dict(
        {
            "gpus": {
                "instance_types": {
                    "gpu-h100x8-640gb": {"provider": "paperspace", "form_factor": "SXM"},
                    "odd.type+(1)": {"form_factor": "PCIe"},  # matched as written, not a pattern
                }
            }
        },
        source=None,
    )
    rules = config.gpu_facts.rules
    assert [(r.provider, r.form_factor) for r in rules[:2]] == [
        ("paperspace", "SXM"),
        (None, "PCIe"),
    ]
    gpus.install(config.gpus)
    try:
        assert form_factor("paperspace", "gpu-h100x8-640gb") == "SXM"
        assert form_factor("vultr", "gpu-h100x8-640gb") is None  # another provider's type
        assert form_factor("anyone", "odd.type+(1)") == "PCIe"
        assert form_factor("anyone", "oddXtype+(1)") is None
        # The entry gives no GPU facts: the API's or the table's stay, from where they came.
        assert gpus.resolve("paperspace", "gpu-h100x8-640gb") == gpus.Resolved(
            gpus.InstanceGpu("H100", 8, 80), "table"
        )
    finally:
        gpus.install(None)
    # The store reads the entry as the table does: 8 x 989.4 x 3.6 / 8 x 2.99 per GPU.
    offer = dataclasses.replace(_offer("gpu-h100x8-640gb", "23.92"), provider="paperspace",
                                gpu_count=8)  # fmt: skip
    store = Store(tmp_path / "p.duckdb", gpu_facts=config.gpu_facts)
    store.write_run("paperspace", [offer], started_at=NOW, observed_at=NOW, regions=None)
    with connect(store.path, read_only=True) as con:
        got = con.execute("SELECT gpu_tflops_fp16, pflop_per_usd FROM prices").fetchall()
    assert got == [(989.4, pytest.approx(989.4 * 8 * 3.6 / 23.92))]


def test_a_users_entry_names_a_board_the_table_knows() -> None:
    with pytest.raises(ConfigError, match=r'gpus\.instance_types\."X"\.form_factor: expected one'):
        from_dict({"gpus": {"instance_types": {"X": {"form_factor": "SXM5"}}}}, source=None)
