"""`gpu_memory_gib` is right for every type: the memory of ONE GPU, and one of the memory
variants the GPU table lists for the model (so `--gpu "A100 80GB"` and the variants' own
throughput find it), in every record every registered parser makes of its recording, and in
every per-type entry of the table. An offer whose model nobody knows has no variants to check."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from collectors import REGISTRY, collector_class, gpus
from collectors.base import ParseResult
from tracker.collecting.demo import demo_setup

NOW = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def parsed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ParseResult]:
    results = {}
    with demo_setup(tmp_path_factory.mktemp("memory") / "s.duckdb") as setup:
        for name in setup.servers:
            settings, _ = setup.config.providers[name].settings(setup.env)
            collector = collector_class(name)(settings)
            results[name] = collector.parse(collector.fetch(), observed_at=NOW)
    return results


def off_the_table(model: str | None, memory_gib: float) -> bool:
    known = gpus.model(model)
    return model is not None and (known is None or memory_gib not in known.memory_gib)


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_record_has_a_memory_variant_of_its_model(
    parsed: dict[str, ParseResult], name: str
) -> None:
    records = parsed[name].records
    assert records
    wrong = sorted(
        {
            f"{r.instance_type}: {r.gpu_model} {r.gpu_memory_gib:g} GiB"
            for r in records
            if off_the_table(r.gpu_model, r.gpu_memory_gib)
        }
    )
    assert wrong == []


def test_every_type_of_the_table_has_a_memory_variant_of_its_model() -> None:
    wrong = [
        f"{provider} {itype}: {gpu.gpu_model} {gpu.gpu_memory_gib:g} GiB"
        for provider, types in gpus.INSTANCE_GPUS.items()
        for itype, gpu in types.items()
        if off_the_table(gpu.gpu_model, gpu.gpu_memory_gib)
    ]
    wrong += [
        f"whole_gpu_gib.{provider}.{model}: {gib:g} GiB"
        for provider, models in gpus.WHOLE_GPU_GIB.items()
        for model, gib in models.items()
        if off_the_table(model, gib)
    ]
    assert wrong == []


def test_the_variants_with_their_own_figures_are_memory_variants() -> None:
    for model in gpus.GPU_MODELS.values():
        assert {v.memory_gib for v in model.variants} <= set(model.memory_gib), model.name
