"""The bundled GPU table (collectors/gpus/table.toml): every type names a known model, sanely."""

from __future__ import annotations

import pytest

from collectors import REGISTRY
from collectors.gpus import GPU_MODELS, INSTANCE_GPUS, InstanceGpu, instance_types, lookup


def test_every_instance_names_a_known_gpu_with_sane_numbers() -> None:
    for provider, table in INSTANCE_GPUS.items():
        assert provider in REGISTRY
        for itype, gpu in table.items():
            assert gpu.gpu_model in GPU_MODELS, (provider, itype)
            assert 0 < gpu.gpu_count <= 16 and 4 <= gpu.gpu_memory_gib <= 288, (provider, itype)


def test_every_gpu_model_has_its_throughput() -> None:
    for model in GPU_MODELS.values():
        # A vendor may publish no FP32 figure (Huawei's 910B): then an FP16 one at least.
        assert model.fp32_tflops is not None or model.fp16_tflops is not None, model.name
        if model.fp32_tflops is not None:
            assert model.fp32_tflops > 0
            assert model.fp16_tflops is None or model.fp16_tflops > model.fp32_tflops


@pytest.mark.parametrize(
    ("provider", "itype", "expected"),
    [
        ("aws", "p4d.24xlarge", InstanceGpu("A100", 8, 40)),
        ("aws", "p4de.24xlarge", InstanceGpu("A100", 8, 80)),
        ("aws", "p5en.48xlarge", InstanceGpu("H200", 8, 141)),
        ("aws", "g4dn.12xlarge", InstanceGpu("T4", 4, 16)),
        ("aws", "g5.48xlarge", InstanceGpu("A10G", 8, 24)),
        ("azure", "Standard_ND96isr_H100_v5", InstanceGpu("H100", 8, 80, 96, 1900)),
        ("azure", "Standard_NC40ads_H100_v5", InstanceGpu("H100", 1, 94, 40, 320)),
        ("azure", "Standard_NV6ads_A10_v5", InstanceGpu("A10", 1 / 6, 24, 6, 55)),
    ],
)
def test_lookup(provider: str, itype: str, expected: InstanceGpu) -> None:
    assert lookup(provider, itype) == expected


def test_unknown_types_are_none_not_a_guess() -> None:
    assert lookup("aws", "g5g.xlarge") is None  # Graviton + T4G: not in the table
    assert lookup("nope", "p4d.24xlarge") is None
    assert instance_types("aws") == tuple(sorted(INSTANCE_GPUS["aws"]))
