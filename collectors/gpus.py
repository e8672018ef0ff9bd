"""The canonical GPU table: which GPU (model, count, per-GPU memory) each instance type carries.

No provider's price data names the GPU model (AWS has only a count and a total memory string,
Azure nothing at all), so this one table is the only place GPU facts live. Collectors look
instance types up here and never test strings themselves.

Throughput figures are NVIDIA/AMD datasheet values for dense math (no structured sparsity),
in TFLOPS: FP16/BF16 on tensor cores, and FP32 on the vector units.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class GpuModel:
    name: str
    vendor: str
    fp16_tflops: float | None  # dense FP16/BF16 tensor throughput
    fp32_tflops: float


@dataclass(frozen=True, slots=True)
class InstanceGpu:
    """The GPUs of one instance type, with the host size where the price data does not say it."""

    gpu_model: str
    gpu_count: float  # fractional for a share of one GPU (Azure NV A10 v5)
    gpu_memory_gib: float  # of ONE GPU
    vcpus: float | None = None
    memory_gib: float | None = None


GPU_MODELS: dict[str, GpuModel] = {
    m.name: m
    for m in (
        GpuModel("B200", "nvidia", 2250.0, 80.0),
        GpuModel("H200", "nvidia", 989.4, 66.9),
        GpuModel("H100", "nvidia", 989.4, 66.9),  # SXM figures; PCIe/NVL parts are slower
        GpuModel("A100", "nvidia", 312.0, 19.5),
        GpuModel("V100", "nvidia", 125.0, 15.7),
        GpuModel("L40S", "nvidia", 362.1, 91.6),
        GpuModel("L4", "nvidia", 121.0, 30.3),
        GpuModel("A10", "nvidia", 125.0, 31.2),
        GpuModel("A10G", "nvidia", 70.0, 31.2),  # AWS's A10 variant: tensor rate per AWS g5 docs
        GpuModel("T4", "nvidia", 65.0, 8.1),
        GpuModel("P100", "nvidia", 18.7, 9.3),
        GpuModel("P4", "nvidia", None, 5.5),
        GpuModel("MI300X", "amd", 1307.4, 163.4),
    )
}


def _family(
    prefix: str, model: str, mem: float, sizes: Mapping[str, tuple[float, float, float] | float]
) -> dict[str, InstanceGpu]:
    """Expand one family: size suffix -> gpu count, or (gpu count, vcpus, memory GiB)."""
    out = {}
    for size, spec in sizes.items():
        count, vcpus, memory = spec if isinstance(spec, tuple) else (spec, None, None)
        out[prefix + size] = InstanceGpu(model, count, mem, vcpus, memory)
    return out


_SIZES_1_4_8 = {"xlarge": 1, "2xlarge": 1, "4xlarge": 1, "8xlarge": 1, "16xlarge": 1,
                "12xlarge": 4, "24xlarge": 4, "48xlarge": 8}  # fmt: skip

# AWS: the Price List gives vCPU and memory itself, so only the GPU part is needed here.
# fmt: off
_AWS: dict[str, InstanceGpu] = {
    **_family("p3.", "V100", 16, {"2xlarge": 1, "8xlarge": 4, "16xlarge": 8}),
    **_family("p3dn.", "V100", 32, {"24xlarge": 8}),
    **_family("p4d.", "A100", 40, {"24xlarge": 8}),
    **_family("p4de.", "A100", 80, {"24xlarge": 8}),
    **_family("p5.", "H100", 80, {"4xlarge": 1, "48xlarge": 8}),
    **_family("p5e.", "H200", 141, {"48xlarge": 8}),
    **_family("p5en.", "H200", 141, {"48xlarge": 8}),
    **_family("p6-b200.", "B200", 179, {"48xlarge": 8}),
    **_family("g4dn.", "T4", 16, {"xlarge": 1, "2xlarge": 1, "4xlarge": 1, "8xlarge": 1,
                                  "16xlarge": 1, "12xlarge": 4, "metal": 8}),
    **_family("g5.", "A10G", 24, _SIZES_1_4_8),
    **_family("g6.", "L4", 24, _SIZES_1_4_8),
    **_family("gr6.", "L4", 24, {"4xlarge": 1, "8xlarge": 1}),
    **_family("g6e.", "L40S", 48, _SIZES_1_4_8),
}

# Azure: the Retail Prices API names only the SKU, so host size comes from this table too
# (Microsoft's VM size pages): size suffix -> (GPUs, vCPUs, memory GiB).
_AZURE: dict[str, InstanceGpu] = {
    # NC T4 v3
    **_family("Standard_NC", "T4", 16, {"4as_T4_v3": (1, 4, 28), "8as_T4_v3": (1, 8, 56),
                                        "16as_T4_v3": (1, 16, 110), "64as_T4_v3": (4, 64, 440)}),
    # NCv3 (V100 16 GB)
    **_family("Standard_NC", "V100", 16, {"6s_v3": (1, 6, 112), "12s_v3": (2, 12, 224),
                                          "24s_v3": (4, 24, 448), "24rs_v3": (4, 24, 448)}),
    # NC A100 v4 (A100 80 GB PCIe)
    **_family("Standard_NC", "A100", 80, {"24ads_A100_v4": (1, 24, 220),
                                          "48ads_A100_v4": (2, 48, 440),
                                          "96ads_A100_v4": (4, 96, 880)}),
    # ND A100 v4 (40 GB) and NDm A100 v4 (80 GB)
    **_family("Standard_ND", "A100", 40, {"96asr_v4": (8, 96, 900)}),
    **_family("Standard_ND", "A100", 80, {"96amsr_A100_v4": (8, 96, 1900)}),
    # ND H100 v5, ND H200 v5, ND MI300X v5
    **_family("Standard_ND", "H100", 80, {"96isr_H100_v5": (8, 96, 1900)}),
    **_family("Standard_ND", "H200", 141, {"96isr_H200_v5": (8, 96, 1850)}),
    **_family("Standard_ND", "MI300X", 192, {"96isr_MI300X_v5": (8, 96, 1850)}),
    # NC H100 v5 (H100 NVL, 94 GB)
    **_family("Standard_NC", "H100", 94, {"40ads_H100_v5": (1, 40, 320),
                                          "80adis_H100_v5": (2, 80, 640)}),
    # NV A10 v5: partitions of one A10, so the count is the share of the GPU
    **_family("Standard_NV", "A10", 24, {"6ads_A10_v5": (1 / 6, 6, 55),
                                         "12ads_A10_v5": (1 / 3, 12, 110),
                                         "18ads_A10_v5": (1 / 2, 18, 220),
                                         "36ads_A10_v5": (1, 36, 440),
                                         "36adms_A10_v5": (1, 36, 880),
                                         "72ads_A10_v5": (2, 72, 880)}),
}
# fmt: on

INSTANCE_GPUS: dict[str, dict[str, InstanceGpu]] = {"aws": _AWS, "azure": _AZURE}


def lookup(provider: str, instance_type: str) -> InstanceGpu | None:
    """The GPUs of a provider's instance type, or None when the table does not know it."""
    return INSTANCE_GPUS.get(provider, {}).get(instance_type)


def instance_types(provider: str) -> tuple[str, ...]:
    """Every instance type of a provider that the table knows, in a stable order."""
    return tuple(sorted(INSTANCE_GPUS.get(provider, {})))
