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


def alternatives(bench: Bench, rule: Mapping[str, Any]) -> dict[str, list[tuple[str, Any]]]:
    """Per fired subject's zone, its alternatives' (zone, instance type)."""
    return {
        event.subject.split("/")[2]: [(a["zone"], a["instance_type"]) for a in event.facts[
            "alternatives"]]
        for event in bench.check(rules({**BELOW, **rule}), T0).fired
        if event.subject.split("/")[3] == "p4de.24xlarge"
    }  # fmt: skip


@pytest.mark.parametrize("rule", [{"gpu_model": "A100 80GB"}, {"min_gpu_memory_gib": 80}])
def test_the_alternatives_of_a_variant_rule_are_offers_of_that_variant(
    tmp_path: Path, rule: dict[str, Any]
) -> None:
    # The 40 GB p4d in use1-az1 is the cheapest A100 spot (9.1506 / 8 = 1.143825 per GPU-hour),
    # yet no place to move an 80 GB job to: an "A100 80GB" alert offers 80 GB offers only.
    bench = Bench(tmp_path / "prices.duckdb")
    p4de_az2 = offer("11.6", kind="spot", zone="use1-az2", itype="p4de.24xlarge",
                     gpu=("A100", 8, 80))  # fmt: skip
    bench.collect([P4D, P4DE, p4de_az2], T0)
    assert alternatives(bench, rule) == {
        "use1-az1": [("use1-az2", "p4de.24xlarge")],
        "use1-az2": [("use1-az1", "p4de.24xlarge")],
    }
    # A rule on the model alone still lists every memory: the 40 GB p4d first.
    assert alternatives(bench, {"name": "any", "gpu_model": "A100"})["use1-az1"] == [
        ("use1-az1", "p4d.24xlarge"),
        ("use1-az2", "p4de.24xlarge"),
    ]
