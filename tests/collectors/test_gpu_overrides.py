"""The GPU table as data, and the user's [gpus] entries over it (docs/gpus.md).

The order is fixed: the user's entry, then what the API said, then the bundled table; an entry
gives only the fields it names. Bad entries are ConfigErrors naming the key.
"""

from __future__ import annotations

import pickle
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from collectors import gpus
from collectors.base import ProviderSettings
from collectors.common import ConfigError
from collectors.gpus import InstanceGpu
from collectors.gpus.checks import clash
from tracker.config import from_dict, load


@pytest.fixture(autouse=True)
def _no_overrides() -> Iterator[None]:
    yield
    gpus.install(None)  # a test's entries never leak into the next test of the worker


def _config(gpu_tables: dict[str, Any], **more: Any) -> Any:
    return from_dict({"gpus": gpu_tables, **more}, source=None)


def test_the_bundled_file_names_a_source_and_the_memory_of_every_type() -> None:
    for name, model in gpus.GPU_MODELS.items():
        assert model.source, name
    for provider, table in gpus.INSTANCE_GPUS.items():
        for itype, gpu in table.items():
            model = gpus.GPU_MODELS[str(gpu.gpu_model)]
            assert gpu.gpu_memory_gib in model.memory_gib, (provider, itype, model.memory_gib)


def test_a_share_of_one_gpu_is_written_as_a_fraction_and_read_exactly() -> None:
    assert gpus.lookup("azure", "Standard_NV6ads_A10_v5") == InstanceGpu("A10", 1 / 6, 24, 6, 55)


def test_a_variant_has_its_own_figures_and_the_model_keeps_its_own() -> None:
    assert gpus.tflops("H100", 94) == (835.5, 60.0)  # H100 NVL datasheet, dense
    assert gpus.tflops("H100", 80, "SXM") == (989.4, 66.9)
    assert gpus.tflops("A100", 80) == gpus.tflops("A100", 40) == (312.0, 19.5)
    assert gpus.tflops("nope") == (None, None)


def test_the_user_entry_beats_the_api_which_beats_the_table() -> None:
    said = InstanceGpu("H100", 8, 80, 192, 2048)
    table = gpus.resolve("aws", "p4d.24xlarge")
    assert table == gpus.Resolved(InstanceGpu("A100", 8, 40), "table")
    assert gpus.resolve("aws", "p4d.24xlarge", said) == gpus.Resolved(said, "api")
    config = _config({"instance_types": {"p4d.24xlarge": {"gpu_memory_gib": 41}}})
    gpus.install(config.gpus)
    # Only the field the entry names changes: the rest is the API's, else the table's.
    assert gpus.resolve("aws", "p4d.24xlarge") == gpus.Resolved(
        InstanceGpu("A100", 8, 41), "config"
    )
    assert gpus.resolve("aws", "p4d.24xlarge", said) == gpus.Resolved(
        InstanceGpu("H100", 8, 41, 192, 2048), "config"
    )


def test_an_entry_for_a_type_nobody_knows_needs_a_count_and_memory() -> None:
    config = _config(
        {
            "instance_types": {
                "Standard_NC8ads_A10_v4": {
                    "gpu_model": "A10",
                    "gpu_count": 1,
                    "gpu_memory_gib": 24,
                },
                "only-model": {"gpu_model": "T4"},
            }
        }
    )
    gpus.install(config.gpus)
    assert gpus.lookup("azure", "Standard_NC8ads_A10_v4") == InstanceGpu("A10", 1, 24)
    assert gpus.lookup("aws", "only-model") is None  # no count, no memory: no per-GPU price


def test_an_entry_limited_to_one_provider_leaves_the_others_alone() -> None:
    entry = {"provider": "azure", "gpu_model": "V100", "gpu_count": 8, "gpu_memory_gib": 32}
    gpus.install(_config({"instance_types": {"X": entry}}).gpus)
    assert gpus.lookup("azure", "X") == InstanceGpu("V100", 8, 32)
    assert gpus.lookup("aws", "X") is None
    assert "X" in gpus.instance_types("azure") and "X" not in gpus.instance_types("aws")


def test_a_user_model_is_known_to_facts_alerts_and_spellings() -> None:
    config = _config(
        {"models": {"B400": {"fp16_tflops": 2500.0, "aliases": ["NVIDIA B400 SXM6"]}}},
        alerts={
            "rules": [
                {
                    "name": "b400",
                    "kind": "spot_price_below",
                    "threshold": 10.0,
                    "currency": "USD",
                    "gpu_model": "B400",
                }
            ]
        },
    )
    assert ("B400", 2500.0) in {(f.gpu_model, f.fp16_tflops) for f in config.gpu_facts}
    gpus.install(config.gpus)
    assert gpus.canonical_model("aws", "NVIDIA B400 SXM6") == "B400"
    assert gpus.model("B400") is not None and gpus.model("B400").vendor == "other"  # type: ignore[union-attr]


def test_a_correction_keeps_the_bundled_fields_it_does_not_name() -> None:
    config = _config({"models": {"A100": {"fp16_tflops": 300.0}}})
    gpus.install(config.gpus)
    assert gpus.tflops("A100", 80) == (300.0, 19.5)
    config = _config({"models": {"H100": {"form_factors": {"SXM": {"fp16_tflops": 990.0}}}}})
    gpus.install(config.gpus)
    assert gpus.tflops("H100", 80, "SXM") == (990.0, 66.9)
    assert gpus.tflops("H100", 80, "PCIe") == (756.0, 51.2)  # the other boards keep theirs
    assert gpus.tflops("H100", 94) == (835.5, 60.0)  # the variant keeps its own figures
    facts = {
        (f.gpu_model, f.gpu_memory_gib, f.form_factor): f.fp16_tflops for f in config.gpu_facts
    }
    assert facts["H100", None, "SXM"] == 990.0
    assert (facts["H100", None, None], facts["H100", 94.0, None]) == (756.0, 835.5)


def test_the_entries_travel_to_the_daemon_child_with_the_settings() -> None:
    config = _config({"instance_types": {"X": {"gpu_count": 2, "gpu_memory_gib": 24}}})
    settings, _ = config.providers["azure"].settings({})
    copy = pickle.loads(pickle.dumps(settings))  # what the daemon hands its child
    assert copy.gpus == config.gpus
    from collectors.azure.collector import AzureCollector

    AzureCollector(copy)  # building a collector installs them for its parsers
    assert gpus.lookup("azure", "X") == InstanceGpu(None, 2, 24)
    AzureCollector(ProviderSettings())  # a config without [gpus]: the bundled table alone
    assert gpus.lookup("azure", "X") is None


@pytest.mark.parametrize(
    ("tables", "error"),
    [
        ({"nope": {}}, "gpus.nope: unknown key"),
        ({"instance_types": {"X": {"gpu_count": "a"}}}, 'gpus.instance_types."X".gpu_count'),
        ({"instance_types": {"X": {"gpu_count": 0}}}, "outside"),
        ({"instance_types": {"X": {"gpu_count": "1/0"}}}, 'gpus.instance_types."X".gpu_count'),
        ({"instance_types": {"X": {"gpu_memory_gib": float("nan")}}}, "gpu_memory_gib"),
        ({"instance_types": {"X": {}}}, 'gpus.instance_types."X": says nothing'),
        ({"instance_types": {"X": {"gpu_model": "B301"}}}, "unknown GPU model 'B301'"),
        ({"instance_types": {"X": {"gpu_count": 1, "colour": 1}}}, '"X".colour: unknown key'),
        ({"instance_types": {"X": {"provider": "awz", "gpu_count": 1}}}, "unknown provider"),
        ({"instance_types": {"X": 3}}, 'gpus.instance_types."X": expected a table'),
        ({"models": {"B400": {"fp16_tflops": -1}}}, "gpus.models.B400.fp16_tflops"),
        ({"models": {"B400": {"vendor": "acme"}}}, "gpus.models.B400.vendor"),
        ({"models": {"B400": {"memory_gib": []}}}, "gpus.models.B400.memory_gib"),
        ({"models": {"B400": {"variants": {"big": {}}}}}, 'variants."big"'),
        ({"models": {"B400;DROP": {}}}, "not a GPU model name"),
        ({"models": {"B400": {"aliases": "x"}}}, "gpus.models.B400.aliases"),
        # A name read case-insensitively must mean one GPU: no alias, variant name or model
        # name another GPU already has.
        (
            {"models": {"A100": {"aliases": ["A100 SXM", "h100"]}}},
            "gpus.models.A100.aliases[1]: 'h100' already names the H100; a name means one GPU",
        ),
        (
            {"models": {"A100": {"variants": {"80": {"name": "H100 NVL"}}}}},
            "gpus.models.A100.variants.\"80\".name: 'H100 NVL' already names the H100 94GB",
        ),
        ({"models": {"h100": {"fp16_tflops": 1}}}, "gpus.models.h100: 'h100' already names"),
        (
            {"instance_types": {"X": {"gpu_model": "L40S", "gpu_count": 1, "gpu_memory_gib": 40}}},
            'gpus.instance_types."X".gpu_memory_gib: the L40S is sold with 48 GiB per GPU, not 40; '
            "add it to [gpus.models.L40S] memory_gib if it is sold so",
        ),
        (
            {"models": {"B400": {"aliases": ["X9"]}, "B301": {"aliases": ["x9"]}}},
            "gpus.models.B301.aliases[0]: 'x9' already names the B400",
        ),
    ],
)
def test_a_bad_entry_is_an_error_naming_its_key(tables: dict[str, Any], error: str) -> None:
    with pytest.raises(ConfigError, match=None) as caught:
        _config(tables)
    assert error in str(caught.value)


def test_the_documented_example_loads(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(
        '[gpus.instance_types."Standard_ND40rs_v2"]\n'
        'gpu_model = "V100"\ngpu_count = 8\ngpu_memory_gib = 32\n\n'
        "[gpus.models.B400]\nfp16_tflops = 2500.0\n"
    )
    config = load(path)
    assert set(config.gpus.instance_types) == {"Standard_ND40rs_v2"}
    assert set(config.gpus.models) == {"B400"}


def test_the_commented_gpus_example_of_config_toml_loads_uncommented() -> None:
    shipped = (Path(__file__).parents[2] / "config.toml").read_text(encoding="utf-8")
    block = shipped.split("# GPU facts of your own", 1)[1].split("\n\n", 1)[0]
    lines = [line.removeprefix("#").removeprefix(" ") for line in block.splitlines()]
    # The TOML lines, not the prose between them.
    text = "\n".join(line for line in lines if line.startswith("[") or " = " in line)
    config = _config(tomllib.loads(text)["gpus"])
    assert set(config.gpus.instance_types) == {
        "Standard_ND40rs_v2",
        "n1-highmem-8+nvidia-tesla-t4x1",
    }
    assert config.gpus.models["MI300A"].fp16_tflops == 980.6
    assert config.gpus.models["H100"].tflops(94) == (835.5, 60.0)


def test_correcting_one_figure_of_a_variant_keeps_its_others() -> None:
    # The table's H100 NVL: 835.5 FP16, 60.0 FP32. Correcting its FP16 keeps its FP32 and name.
    config = _config({"models": {"H100": {"variants": {"94": {"fp16_tflops": 800.0}}}}})
    nvl = config.gpus.models["H100"].variant(94)
    assert nvl is not None and (nvl.name, nvl.fp16_tflops, nvl.fp32_tflops) == (
        "H100 NVL",
        800.0,
        60.0,
    )


def test_the_bundled_names_each_mean_one_gpu_and_a_models_own_spellings_agree() -> None:
    assert clash(gpus.GPU_MODELS, {}) is None
    # Its own name again as an alias, or a variant named as the table names it, is no clash.
    config = _config(
        {"models": {"A100": {"aliases": ["a100"], "variants": {"80": {"name": "A100 80"}}}}}
    )
    assert config.gpus.models["A100"].aliases == ("a100",)


def test_a_memory_the_model_lists_or_a_model_listing_none_is_taken() -> None:
    entry = {"gpu_model": "L40S", "gpu_count": 1, "gpu_memory_gib": 32}
    config = _config({"instance_types": {"X": entry}, "models": {"L40S": {"memory_gib": [32, 48]}}})
    assert config.gpus.instance_types["X"].gpu_memory_gib == 32
    b400 = {"gpu_model": "B400", "gpu_count": 8, "gpu_memory_gib": 270}
    config = _config({"instance_types": {"Y": b400}, "models": {"B400": {"fp16_tflops": 2500.0}}})
    assert config.gpus.instance_types["Y"].gpu_memory_gib == 270
