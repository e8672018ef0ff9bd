"""Alert rules for one memory variant of a GPU (`gpu_model = "A100 80GB"`, `"H100 NVL"`) or
for at least some memory per GPU (`min_gpu_memory_gib`), parsed with the GPU table's names as
config.toml gives them, and evaluated on a real store."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from alerts import Rule, parse_settings
from collectors import REGISTRY
from collectors.common import ConfigError
from storage.reads.gpu_filter import GpuChoice
from tests.alerts.support import T0, Bench, offer
from tracker.config import gpu_names

# p4d: 8x A100 40 GB; p4de: 8x A100 80 GB. Both spot prices are under 1.50 USD per GPU-hour.
P4D = offer("9.1506", kind="spot", zone="use1-az1")
P4DE = offer("11.2", kind="spot", zone="use1-az1", itype="p4de.24xlarge", gpu=("A100", 8, 80))
BELOW = {"name": "cheap", "kind": "spot_price_below", "threshold": 1.5, "currency": "USD"}


def rules(*tables: Mapping[str, Any]) -> tuple[Rule, ...]:
    raw = {"rules": [dict(t) for t in tables]}
    return parse_settings(raw, gpu_models=gpu_names(), providers=list(REGISTRY)).rules


@pytest.fixture
def bench(tmp_path: Path) -> Bench:
    bench = Bench(tmp_path / "prices.duckdb")
    bench.collect([offer("21.957642"), P4D, P4DE], T0)
    return bench


def subjects(bench: Bench, rule: tuple[Rule, ...]) -> list[str]:
    return sorted(s.split("/")[3] for s in bench.fired(rule, T0))


@pytest.mark.parametrize("gpu", ["A100 80GB", "a100-80gb", ["A100 80GB"]])
def test_a_rule_on_the_80gb_a100_fires_for_p4de_not_p4d(bench: Bench, gpu: Any) -> None:
    assert subjects(bench, rules({**BELOW, "gpu_model": gpu})) == ["p4de.24xlarge"]


def test_a_rule_on_the_model_fires_for_both(bench: Bench) -> None:
    assert subjects(bench, rules({**BELOW, "gpu_model": "A100"})) == [
        "p4d.24xlarge",
        "p4de.24xlarge",
    ]


def test_a_rule_on_a_variant_and_a_model_fires_for_either(bench: Bench) -> None:
    rule = rules({**BELOW, "gpu_model": ["A100 40GB", "H100"]})
    assert rule[0].filters.gpu_model == (GpuChoice("A100", 40.0), GpuChoice("H100"))
    assert subjects(bench, rule) == ["p4d.24xlarge"]


def test_min_gpu_memory_keeps_offers_with_at_least_that_much(bench: Bench) -> None:
    assert subjects(bench, rules({**BELOW, "min_gpu_memory_gib": 48})) == ["p4de.24xlarge"]
    assert subjects(bench, rules({**BELOW, "name": "any", "min_gpu_memory_gib": 40})) == [
        "p4d.24xlarge",
        "p4de.24xlarge",
    ]


def test_a_variant_name_of_the_table_is_its_model_and_memory() -> None:
    (rule,) = rules({**BELOW, "gpu_model": "H100 NVL"})
    assert rule.filters.gpu_model == (GpuChoice("H100", 94.0),)


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (
            {"gpu_model": "A100 96GB"},
            "the GPU table knows no 'A100 96GB' (the A100s it knows: A100, A100 40GB, A100 80GB)",
        ),
        ({"gpu_model": ["H100", "H1000 80GB"]}, "gpu_model[1]: unknown GPU model 'H1000 80GB'"),
        ({"min_gpu_memory_gib": 0}, "min_gpu_memory_gib: expected GiB per GPU > 0"),
        ({"min_gpu_memory_gib": "80"}, "min_gpu_memory_gib: expected GiB per GPU > 0"),
    ],
)
def test_a_variant_nobody_knows_is_a_config_error_naming_the_key(
    extra: dict[str, Any], words: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        rules({**BELOW, **extra})
    assert words in str(caught.value)
    assert str(caught.value).startswith("alerts.rules[0].")
