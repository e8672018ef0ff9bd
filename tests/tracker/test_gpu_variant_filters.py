"""Asking for one memory variant of a GPU (`--gpu "A100 80GB"`, `--gpu "H100 NVL"`) or for at
least some memory per GPU (`--memory 80`) in `latest`, `history` and `tco`, through the real
CLI on a real store; and the refusal of a variant nobody knows."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from collectors import gpus
from storage.reads.gpu_filter import GpuChoice
from storage.store import Store
from tests.storage.test_gpu_variants import offer as record
from tracker.cli import cli
from tracker.config import Config, gpu_names

NOW = datetime.now(UTC).replace(microsecond=0)
FACTS = Config(source=None, store_path=Path("unused"), providers={}).gpu_facts
# (provider, type, model, GPUs, GiB per GPU, USD per hour)
OFFERS = [
    ("aws", "p4d.24xlarge", "A100", 8, 40, "32.7726"),
    ("aws", "p4de.24xlarge", "A100", 8, 80, "40.9657"),
    ("aws", "p5.48xlarge", "H100", 8, 80, "55.04"),
    ("azure", "Standard_NC40ads_H100_v5", "H100", 1, 94, "6.98"),
    ("azure", "Standard_NC24ads_A100_v4", "A100", 1, 80, "3.673"),
]


@pytest.fixture(scope="module")
def offers(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The store, written once per module: each test takes a copy (some add to it)."""
    store = Store(tmp_path_factory.mktemp("variants") / "prices.duckdb", gpu_facts=FACTS)
    then = NOW - timedelta(hours=1)
    for provider in ("aws", "azure"):
        records = [record(*o) for o in OFFERS if o[0] == provider]
        store.write_run(provider, records, started_at=then, observed_at=then, regions=None)
    return store.path


@pytest.fixture
def db(offers: Path, tmp_path: Path) -> Path:
    return Path(shutil.copy(offers, tmp_path / "prices.duckdb"))


def run(db: Path, *args: str) -> Any:
    result = CliRunner().invoke(cli, ["--db", str(db), *args, "--format", "json"])
    return result.exit_code, (json.loads(result.stdout) if result.exit_code == 0 else None), result


def types(rows: list[dict[str, Any]]) -> set[str]:
    return {row["instance_type"] for row in rows}


@pytest.mark.parametrize("gpu", ["A100 80GB", "A100-80GB", "a100 80gb", "A100 80 GiB", "A100_80GB"])
def test_latest_asks_for_a_variant_however_it_is_written(db: Path, gpu: str) -> None:
    code, rows, _ = run(db, "latest", "--gpu", gpu)
    assert code == 0
    assert types(rows) == {"p4de.24xlarge", "Standard_NC24ads_A100_v4"}


def test_a_model_alone_still_means_every_memory(db: Path) -> None:
    _, rows, _ = run(db, "latest", "--gpu", "a100")
    assert types(rows) == {"p4d.24xlarge", "p4de.24xlarge", "Standard_NC24ads_A100_v4"}


def test_a_variant_name_of_the_table_means_its_model_and_memory(db: Path) -> None:
    _, rows, _ = run(db, "latest", "--gpu", "H100 NVL")
    assert types(rows) == {"Standard_NC40ads_H100_v5"}
    # The NVL's own dense FP16: 835.5 TFLOPS x 1 GPU x 3.6 / 6.98 USD an hour.
    assert rows[0]["pflop_per_usd"] == round(835.5 * 1 * 3.6 / 6.98, 1)
    _, rows, _ = run(db, "latest", "--gpu", "H100 80GB")
    assert types(rows) == {"p5.48xlarge"}
    assert rows[0]["pflop_per_usd"] == round(989.4 * 8 * 3.6 / 55.04, 1)


def test_memory_keeps_offers_with_at_least_that_much(db: Path) -> None:
    _, rows, _ = run(db, "latest", "--memory", "80")
    assert types(rows) == {o[1] for o in OFFERS if o[4] >= 80}
    _, rows, _ = run(db, "latest", "--gpu", "H100", "--memory", "90")
    assert types(rows) == {"Standard_NC40ads_H100_v5"}


def test_history_asks_for_a_variant(db: Path) -> None:
    code, rows, _ = run(db, "history", "--gpu", "A100-80GB", "--since", "2h")
    assert code == 0
    assert types(rows) == {"p4de.24xlarge", "Standard_NC24ads_A100_v4"}
    _, rows, _ = run(db, "history", "--memory", "90", "--since", "2h")
    assert types(rows) == {"Standard_NC40ads_H100_v5"}


def test_tco_prices_only_the_variant_asked_for(db: Path) -> None:
    code, rows, _ = run(db, "tco", "--gpu", "A100 80GB", "--gpus", "8", "--months", "1")
    assert code == 0
    assert types(rows) == {"p4de.24xlarge", "Standard_NC24ads_A100_v4"}
    # 8 A100 80 GB on one p4de for 730 hours: 40.9657 x 730 = 29,904.96 USD.
    p4de = next(r for r in rows if r["instance_type"] == "p4de.24xlarge")
    assert float(p4de["total_usd"]) == 29904.96
    _, rows, _ = run(db, "tco", "--gpu", "H100 NVL", "--gpus", "1", "--months", "1")
    assert types(rows) == {"Standard_NC40ads_H100_v5"}


@pytest.mark.parametrize("command", [("latest",), ("tco", "--months", "1")])
def test_a_variant_nobody_knows_is_refused_naming_the_models_variants(
    db: Path, command: tuple[str, ...]
) -> None:
    code, _, result = run(db, *command, "--gpu", "A100 96GB")
    assert code == 2
    assert "--gpu A100 96GB: no current offer has it (accepted: A100, A100 40GB, A100 80GB)" in (
        result.stderr
    )
    code, _, result = run(db, *command, "--gpu", "H1000 80GB")
    assert code == 2
    assert "--gpu H1000 80GB: no current offer has it" in result.stderr
    assert "H100 NVL" in result.stderr
    assert "A100 80GB" not in result.stderr  # the models and named variants, not every memory


def test_a_variant_the_table_knows_but_no_offer_has_is_an_empty_answer(db: Path) -> None:
    code, rows, _ = run(db, "latest", "--gpu", "V100 32GB")
    assert (code, rows) == (0, [])


def test_the_names_the_table_gives() -> None:
    names = gpu_names()
    assert names.parse("h100 nvl") == GpuChoice("H100", 94.0)
    assert names.parse("H100-94GB") == GpuChoice("H100", 94.0)
    assert names.parse("rtx6000ada") == GpuChoice("RTX6000Ada")
    assert names.parse("Mystery 12GB") == GpuChoice("Mystery", 12.0)
    assert names.parse("A10080GB") == GpuChoice("A10080GB")  # no separator: no memory
    assert {"A100 40GB", "A100 80GB", "H100 NVL", "H100 94GB"} <= set(names.accepted)
    assert {"A100", "H100", "H100 NVL"} <= set(names.named)
    assert not {"A100 80GB", "H100 94GB"} & set(names.named)


def test_the_web_api_takes_the_same_names(db: Path) -> None:
    from tracker.web import api, app

    rows = api.latest(db, {"gpu": ["a100-80gb"]}, timeout_s=None)
    assert types(rows) == {"p4de.24xlarge", "Standard_NC24ads_A100_v4"}
    rows = api.history(db, {"memory": ["90"], "since": ["2h"]}, timeout_s=None)
    assert types(rows) == {"Standard_NC40ads_H100_v5"}
    rows = api.tco(db, {"gpu": ["H100 NVL"], "gpus": ["1"], "months": ["1"]}, timeout_s=None)
    assert types(rows) == {"Standard_NC40ads_H100_v5"}
    with pytest.raises(api.BadRequest, match="--gpu A100 96GB: no current offer has it"):
        api.latest(db, {"gpu": ["A100 96GB"]}, timeout_s=None)
    # The dashboard's forms offer the variants beside the models.
    assert {"A100", "A100 40GB", "A100 80GB", "H100 NVL"} <= set(app._models())


def test_per_gpu_keeps_the_cheapest_offer_of_each_memory_variant(db: Path) -> None:
    # A100 40 GB and 80 GB are different purchases: one row each, not the cheaper one alone.
    # Per GPU-hour, every digit: p4d 32.7726 / 8 = 4.096575, p4de 40.9657 / 8, NC24ads 3.673.
    _, rows, _ = run(db, "latest", "--gpu", "A100", "--per-gpu")
    assert [(r["instance_type"], r["per_gpu_hour"]) for r in rows] == [
        ("Standard_NC24ads_A100_v4", 3.673),
        ("p4d.24xlarge", 4.096575),
    ]
    _, rows, _ = run(db, "latest", "--gpu", "H100", "--per-gpu")
    assert types(rows) == {"p5.48xlarge", "Standard_NC40ads_H100_v5"}


USER_MODELS = """
[gpus.models.A100]
variants."80" = { name = "A100 Big" }

[gpus.models.MI300A]
vendor = "amd"
fp16_tflops = 2500.0
memory_gib = [128]
aliases = ["Instinct MI300A"]
source = "a test"
"""


@pytest.fixture
def user_models(db: Path, tmp_path: Path) -> Iterator[Path]:
    store = Store(db, gpu_facts=FACTS)
    then = NOW - timedelta(hours=1)
    b300 = record("lambdalabs", "gpu_8x_mi300a", "MI300A", 8, 128, "40.00")
    store.write_run("lambdalabs", [b300], started_at=then, observed_at=then, regions=None)
    config = tmp_path / "config.toml"
    config.write_text(USER_MODELS, encoding="utf-8")
    yield config
    gpus.install(None)  # the CLI installed the config's entries in this worker


@pytest.mark.parametrize(
    ("command", "gpu", "expected"),
    [
        (("latest",), "A100 Big", {"p4de.24xlarge", "Standard_NC24ads_A100_v4"}),
        (("latest",), "instinct mi300a", {"gpu_8x_mi300a"}),
        (("history", "--since", "2h"), "MI300A 128GB", {"gpu_8x_mi300a"}),
        (("tco", "--months", "1"), "Instinct MI300A", {"gpu_8x_mi300a"}),
        (("tco", "--months", "1"), "a100 big", {"p4de.24xlarge", "Standard_NC24ads_A100_v4"}),
    ],
)
def test_the_configs_own_models_and_variants_are_names_gpu_takes(
    db: Path, user_models: Path, command: tuple[str, ...], gpu: str, expected: set[str]
) -> None:
    # --config after the command: --gpu is converted before the config is read.
    code, rows, result = run(db, *command, "--gpu", gpu, "--config", str(user_models))
    assert code == 0, result.output
    assert types(rows) == expected


def test_a_variant_of_a_users_model_nobody_sells_is_refused_naming_its_variants(
    db: Path, user_models: Path
) -> None:
    code, _, result = run(db, "--config", str(user_models), "latest", "--gpu", "MI300A 64GB")
    assert code == 2
    assert "--gpu MI300A 64GB: no current offer has it (accepted: MI300A, MI300A 128GB)" in (
        result.stderr
    )


def test_the_dashboard_forms_offer_the_configs_models(db: Path, user_models: Path) -> None:
    from tracker.web import app

    # `serve` loads its config as every command does: its [gpus] entries are in force.
    code, _, _ = run(db, "--config", str(user_models), "latest", "--gpu", "MI300A")
    assert code == 0
    assert {"A100 Big", "MI300A", "MI300A 128GB"} <= set(app._models())
