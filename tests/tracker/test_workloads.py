"""Cost per unit of real work: the bundled MLPerf workloads (every number derived from its cited
result), `[workloads.<name>]` in config.toml, `latest --workload`, `tco --workload --amount` and
the web API, on the store the demo builds from its recordings, with values worked by hand from
the recorded prices and the cited throughputs."""

from __future__ import annotations

import json
import shutil
import tomllib
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from collectors.common import ConfigError
from tracker import config as config_mod
from tracker.cli import cli
from tracker.config.web import WebSettings
from tracker.config.workloads import bundled
from tracker.web.server import Running, start_for

from .web_support import get

# The AWS recording (tracker/demo_data/aws): p5.48xlarge in us-east-1, 8x H100 80GB, on demand.
P5_PER_HOUR = 55.04
P5_PER_GPU_HOUR = 55.04 / 8  # 6.88
# resnet50-train on H100 80GB: NVIDIA's Eos, 8x H100-SXM5-80GB, MLPerf Training v4.0, 13.270
# minutes to train: 1 / (13.270 / 60 * 8) = 0.565185 runs per GPU-hour.
RESNET_H100 = 0.565185
MINE = """
[workloads.mine]
unit = "epoch"
per_gpu_hour = { A100 = 2.0, "A100 80GB" = 3.0, H100 = 5.0 }
source = "our own runs"
"""


@pytest.fixture(scope="module")
def store(demo_kept: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return Path(shutil.copy(demo_kept, tmp_path_factory.mktemp("workloads") / "demo.duckdb"))


@pytest.fixture(scope="module")
def mine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("workloads-config") / "config.toml"
    path.write_text(MINE)
    return path


def run(store: Path, *args: str, config: Path | None = None) -> Result:
    given = ["--config", str(config)] if config else []
    return CliRunner().invoke(cli, [*given, "--db", str(store), *args])


def document(store: Path, *args: str, config: Path | None = None) -> list[dict[str, Any]]:
    result = run(store, *args, "--format", "json", config=config)
    assert result.exit_code == 0, result.output
    rows: list[dict[str, Any]] = json.loads(result.stdout)
    return rows


def test_every_bundled_number_is_derived_from_its_cited_result() -> None:
    text = resources.files("collectors.gpus").joinpath("workloads.toml").read_text("utf-8")
    raw = tomllib.loads(text)
    assert set(raw) == {
        "resnet50-train", "bert-train", "llama2-70b-lora-train", "llama2-70b-inference",
    }  # fmt: skip
    for name, entry in raw.items():
        assert set(entry["per_gpu_hour"]) == set(entry["results"]), name
        for gpu, rate in entry["per_gpu_hour"].items():
            result = entry["results"][gpu]
            assert result["url"].startswith("https://github.com/mlcommons/"), (name, gpu)
            kind, version = result["round"].split()  # "Training v4.0": training_results_v4.0
            assert result["url"].split("/")[4] == f"{kind.lower()}_results_{version}"
            assert result["submitter"] and result["system"], (name, gpu)
            if "minutes" in result:  # one training run to target, over the system's GPU-hours
                derived = 1 / (result["minutes"] / 60 * result["gpus"])
            else:  # tokens per second of the system, per GPU, per hour, in millions
                derived = result["tokens_per_second"] * 3600 / result["gpus"] / 1e6
            assert rate == round(derived, 6), (name, gpu)
    # The one checked by hand: 60 / (13.27 x 8) = 0.5651846...
    assert bundled()["resnet50-train"].per_gpu_hour("H100", 80) == RESNET_H100


def test_a_variant_wins_over_its_model_and_a_users_table_replaces_the_bundled(
    mine: Path,
) -> None:
    workloads = config_mod.load(mine).workloads
    work = workloads["mine"]
    assert work.unit == "epoch" and work.source == "our own runs"
    assert work.per_gpu_hour("A100", 80) == 3.0 and work.per_gpu_hour("a100", 40) == 2.0
    assert work.per_gpu_hour("H100", 94) == 5.0 and work.per_gpu_hour("L4", 24) is None
    assert set(workloads) == {*bundled(), "mine"}
    replaced = config_mod.from_dict(
        {"workloads": {"bert-train": {"unit": "run", "per_gpu_hour": {"L4": 0.01}}}}, source=None
    ).workloads["bert-train"]
    assert replaced.unit == "run" and replaced.per_gpu_hour("H100", 80) is None
    other_case = config_mod.from_dict(
        {"workloads": {"BERT-train": {"unit": "run", "per_gpu_hour": {"L4": 0.01}}}}, source=None
    ).workloads
    assert "bert-train" not in other_case and other_case["BERT-train"].unit == "run"


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"unit": "x", "per_gpu_hour": {"B999": 1.0}}, r'w\.per_gpu_hour\."B999": unknown GPU'),
        ({"unit": "x", "per_gpu_hour": {"A100": 0}}, r'w\.per_gpu_hour\."A100": expected a number'),
        (
            {"unit": "x", "per_gpu_hour": {"A100": 1, "a100": 2}},
            r'w\.per_gpu_hour\."a100": names the same GPU',
        ),
        ({"per_gpu_hour": {"A100": 1.0}}, r"w\.unit: missing"),
        ({"unit": "x", "per_gpu_hour": "fast"}, r"w\.per_gpu_hour: expected a table"),
        ({"unit": "x", "per_gpu_hour": {"A100": 1.0}, "speed": 1}, r"w\.speed: unknown key"),
    ],
)
def test_a_wrong_workload_is_refused_naming_its_key(table: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=f"^workloads\\.{message}"):
        config_mod.from_dict({"workloads": {"w": table}}, source=None)


def test_a_wrong_workload_in_the_file_is_exit_2_naming_file_and_key(
    store: Path, tmp_path: Path
) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[workloads.w]\nunit = "x"\nper_gpu_hour = { H1000 = 1.0 }\n')
    result = run(store, "latest", config=path)
    assert result.exit_code == 2
    assert f'{path}: workloads.w.per_gpu_hour."H1000": unknown GPU' in result.output


def test_latest_gives_usd_per_unit_worked_from_the_price_and_the_throughput(store: Path) -> None:
    rows = document(store, "latest", "--gpu", "H100", "--workload", "resnet50-train",
                    "--provider", "aws", "--kind", "on-demand")  # fmt: skip
    p5 = next(r for r in rows if r["instance_type"] == "p5.48xlarge")
    # 6.88 USD per GPU-hour / 0.565185 runs per GPU-hour = 12.173 USD per training run.
    assert p5["usd_per_unit"] == round(P5_PER_GPU_HOUR / RESNET_H100, 6) == 12.173005
    assert p5["usd_per_unit"] == pytest.approx(6.88 * 13.27 * 8 / 60, rel=1e-5)
    csv = run(store, "latest", "--workload", "bert-train", "--format", "csv").stdout
    assert "usd_per_unit" in csv.splitlines()[0].split(",")


def test_sort_unit_ranks_by_usd_per_unit_and_leaves_gpus_without_throughput_last(
    store: Path,
) -> None:
    rows = document(store, "latest", "--workload", "llama2-70b-inference", "--sort", "unit",
                    "--usd", "--limit", "200")  # fmt: skip
    units = [r["usd_per_unit"] for r in rows]
    known = [u for u in units if u is not None]
    assert known and known == sorted(known) and units[: len(known)] == known
    assert {r["gpus"].split()[1] for r in rows[: len(known)]} <= {"H100", "H200", "MI300X"}


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["latest", "--workload", "nope"], "--workload nope: unknown workload (accepted: bert-"),
        (["latest", "--sort", "unit"], "--sort unit: needs --workload NAME (accepted: bert-"),
        (["tco", "--gpu", "H100", "--amount", "5"], "--amount: needs --workload NAME"),
        (["tco", "--gpu", "A100", "--workload", "llama2-70b-inference", "--amount", "5"],
         "--amount: llama2-70b-inference has no throughput for A100"),
        (["tco", "--gpu", "A100", "--workload", "mine", "--amount", "5"],
         'several throughputs (A100 = 2, A100 80GB = 3); name one with --gpu, e.g. --gpu "A100"'),
    ],
)  # fmt: skip
def test_usage_errors_name_what_is_accepted(
    store: Path, mine: Path, args: list[str], words: str
) -> None:
    result = run(store, *args, config=mine)
    assert result.exit_code == 2 and words in result.output, result.output


def test_tco_gives_units_and_usd_per_unit_to_every_option(store: Path) -> None:
    rows = document(store, "tco", "--gpu", "H100 80GB", "--provider", "aws",
                    "--workload", "resnet50-train")  # fmt: skip
    assert rows and all({"units", "usd_per_unit"} <= set(r) for r in rows)
    od = next(r for r in rows if r["instance_type"] == "p5.48xlarge"
              and r["price_kind"] == "on_demand")  # fmt: skip
    # units = 0.565185 x 8 GPUs x 26,280 h x 1.0 = 118,824.4944 training runs;
    # 55.04 x 26,280 h = 1,446,451.20 USD over them = 12.173 USD per run.
    assert od["units"] == pytest.approx(118824.4944)
    assert od["total_usd"] == round(P5_PER_HOUR * 26280, 2)
    assert od["usd_per_unit"] == round(od["total_usd"] / od["units"], 6) == 12.173005


def test_amount_is_the_horizon_the_gpus_take_for_the_work(store: Path) -> None:
    result = run(store, "tco", "--gpu", "H100", "--provider", "aws", "--workload",
                 "resnet50-train", "--amount", "100", "--format", "json")  # fmt: skip
    assert result.exit_code == 0, result.output
    # 100 runs / (0.565185 x 8) = 22.1166 hours: the H100 80GB, the one variant it knows.
    assert "8x H100 80GB at 0.565185 per GPU-hour take 22.12 hours" in result.stderr
    rows = json.loads(result.stdout)
    assert {r["gpu_memory_gib"] for r in rows} == {80}
    od = next(r for r in rows if r["instance_type"] == "p5.48xlarge"
              and r["price_kind"] == "on_demand")  # fmt: skip
    assert od["hours"] == pytest.approx(100 / (RESNET_H100 * 8))
    assert od["units"] == pytest.approx(100)
    assert od["total_usd"] == round(P5_PER_HOUR * 100 / (RESNET_H100 * 8), 2)  # 1,217.30


@pytest.fixture(scope="module")
def server(store: Path, mine: Path) -> Iterator[Running]:
    config = config_mod.load(mine, store=store)
    running = start_for(config, WebSettings("127.0.0.1", 0), "web.listen")
    try:
        yield running
    finally:
        running.close()


def test_the_api_takes_a_workload_and_an_amount(server: Running) -> None:
    status, body = get(server, "/api/latest?gpu=H100&provider=aws&kind=on-demand"
                               "&workload=resnet50-train")  # fmt: skip
    assert status == 200, body
    p5 = next(r for r in json.loads(body) if r["instance_type"] == "p5.48xlarge")
    assert p5["usd_per_unit"] == round(P5_PER_GPU_HOUR / RESNET_H100, 6)
    status, body = get(server, "/api/tco?gpu=H100&provider=aws&workload=mine&amount=40")
    assert status == 200, body
    # The user's table: H100 = 5 epochs per GPU-hour; 40 epochs on 8 GPUs take 1 hour.
    assert {r["units"] for r in json.loads(body)} == {40}
    assert all(r["hours"] == pytest.approx(1) for r in json.loads(body))
    status, body = get(server, "/api/latest?workload=nope")
    assert status == 400 and "--workload nope: unknown workload" in body


def test_the_decide_panel_takes_a_workload(server: Running) -> None:
    status, page = get(server, "/decide?gpu=H100&workload=resnet50-train&amount=100")
    assert status == 200
    assert '<select name="workload"><option value="">none</option>' in page
    assert '<option value="mine">' in page
    assert "<th>units</th><th>USD/unit</th>" in page and "<td>100.00</td>" in page


def test_the_commented_workload_of_config_toml_loads_with_the_declared_keys() -> None:
    text = (Path(__file__).parents[2] / "config.toml").read_text()
    start = text.index("# [workloads.")
    block = "\n".join(
        line[2:] for line in text[start:].split("\n\n", 1)[0].splitlines() if line.startswith("# ")
    )
    table = tomllib.loads(block)["workloads"]["resnet50-epoch"]
    assert set(table) == {"unit", "per_gpu_hour", "source"}
    work = config_mod.from_dict({"workloads": {"resnet50-epoch": table}}, source=None)
    assert work.workloads["resnet50-epoch"].per_gpu_hour("A100", 80) == 2.7
