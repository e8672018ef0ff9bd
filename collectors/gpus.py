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

    gpu_model: str | None  # None only for an offer whose GPU the table does not know
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
        # Lambda and DigitalOcean (Paperspace). GH200's GPU is an H100 (same rates). Workstation
        # datasheets quote "Tensor Performance" with sparsity (Ada: in FP8), so dense FP16 is
        # half of it (Ampere) or a quarter (Ada); Turing has no sparsity.
        GpuModel("GH200", "nvidia", 989.4, 66.9),
        GpuModel("MI325X", "amd", 1307.4, 163.4),  # the MI300X compute with 256 GB HBM3E
        GpuModel("RTX6000Ada", "nvidia", 364.2, 91.1),  # RTX 6000 Ada Generation
        GpuModel("RTX4000Ada", "nvidia", 81.9, 26.7),  # RTX 4000 Ada Generation
        GpuModel("A6000", "nvidia", 154.8, 38.7),  # RTX A6000
        GpuModel("RTX6000", "nvidia", 130.5, 16.3),  # Quadro RTX 6000 (Turing), not the Ada
        # Alibaba gn8is: Alibaba's own L20 figures (FP16/BF16 119, FP32 59.3 TFLOPS).
        GpuModel("L20", "nvidia", 119.0, 59.3),
        # Vultr: NVIDIA A40 and A16 datasheets (dense FP16 tensor is half the sparse figure;
        # the A16 board has four GPUs, the figures are one GPU's).
        GpuModel("A40", "nvidia", 149.7, 37.4),
        GpuModel("A16", "nvidia", 17.9, 4.5),
        # Oracle Cloud BM.GPU.MI355X.8: AMD Instinct MI355X product page (FP16/BF16 2.5 PFLOPS
        # dense, 5.0 with sparsity; FP32 vector 157.3 TFLOPS), 288 GB HBM3E.
        GpuModel("MI355X", "amd", 2516.6, 157.3),
        # Vast.ai and RunPod sell GeForce cards. NVIDIA's Ada and Ampere GA102 whitepapers: FP16
        # tensor with FP32 accumulate (what BF16 training runs at; GeForce halves it against
        # FP16 accumulate), dense.
        GpuModel("RTX4090", "nvidia", 165.2, 82.6),
        GpuModel("RTX3090", "nvidia", 71.0, 35.6),
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

# Google Cloud: the catalog prices parts (vCPU, GiB, GPU), never a machine, so the shapes are
# here: Google's "Accelerator-optimized machine family" tables (machine type -> GPUs, vCPUs,
# memory GB, which Google counts in GiB), as gpuhunt and opencost also use them. N1 machines
# take a GPU attached to any N1 size: those are listed by the accelerator type alone (the GPU's
# own price, no host).
# fmt: off
INSTANCE_GPUS["gcp"] = {
    **_family("a2-highgpu-", "A100", 40, {"1g": (1, 12, 85), "2g": (2, 24, 170),
                                          "4g": (4, 48, 340), "8g": (8, 96, 680)}),
    **_family("a2-megagpu-", "A100", 40, {"16g": (16, 96, 1360)}),
    **_family("a2-ultragpu-", "A100", 80, {"1g": (1, 12, 170), "2g": (2, 24, 340),
                                           "4g": (4, 48, 680), "8g": (8, 96, 1360)}),
    **_family("a3-highgpu-", "H100", 80, {"1g": (1, 26, 234), "2g": (2, 52, 468),
                                          "4g": (4, 104, 936), "8g": (8, 208, 1872)}),
    **_family("a3-megagpu-", "H100", 80, {"8g": (8, 208, 1872)}),
    **_family("g2-standard-", "L4", 24, {"4": (1, 4, 16), "8": (1, 8, 32), "12": (1, 12, 48),
                                         "16": (1, 16, 64), "24": (2, 24, 96),
                                         "32": (1, 32, 128), "48": (4, 48, 192),
                                         "96": (8, 96, 384)}),
    **_family("nvidia-tesla-", "T4", 16, {"t4": 1}),
    **_family("nvidia-tesla-", "V100", 16, {"v100": 1}),
    **_family("nvidia-tesla-", "P100", 16, {"p100": 1}),
    **_family("nvidia-tesla-", "P4", 8, {"p4": 1}),
}
# fmt: on

# Each provider's own spelling of a GPU, where its API names one, -> the canonical model.
GPU_NAMES: dict[str, dict[str, str]] = {}

# Lambda Cloud: the API names the GPU itself ("gpu_description": "H100 (80 GB SXM5)", the name
# before the bracket is looked up here) and gives the host size. The table below is the
# cross-check of what the API says (Lambda's list of 2026-09-20), so only the GPU part is here.
GPU_NAMES["lambdalabs"] = {
    "B200": "B200", "GH200": "GH200", "H200": "H200", "H100": "H100", "A100": "A100", "A10": "A10",
    "A6000": "A6000", "RTX A6000": "A6000", "V100": "V100", "Tesla V100": "V100",
    "RTX 6000": "RTX6000", "Quadro RTX 6000": "RTX6000",
}  # fmt: skip
# fmt: off
INSTANCE_GPUS["lambdalabs"] = {
    **_family("gpu_", "B200", 180, {"1x_b200_sxm6": 1, "2x_b200_sxm6": 2, "8x_b200_sxm6": 8}),
    **_family("gpu_", "GH200", 96, {"1x_gh200": 1}),
    **_family("gpu_", "H100", 80, {"1x_h100_pcie": 1, "1x_h100_sxm5": 1, "2x_h100_sxm5": 2,
                                   "4x_h100_sxm5": 4, "8x_h100_sxm5": 8}),
    **_family("gpu_", "A100", 80, {"8x_a100_80gb_sxm4": 8}),
    **_family("gpu_", "A100", 40, {"1x_a100": 1, "1x_a100_sxm4": 1, "2x_a100": 2, "4x_a100": 4,
                                   "8x_a100": 8}),
    **_family("gpu_", "A10", 24, {"1x_a10": 1}),
    **_family("gpu_", "A6000", 48, {"1x_a6000": 1, "2x_a6000": 2, "4x_a6000": 4}),
    **_family("gpu_", "RTX6000", 24, {"1x_rtx6000": 1}),
    **_family("gpu_", "V100", 16, {"8x_v100": 8, "8x_v100_n": 8}),
}
# fmt: on

# DigitalOcean GPU Droplets (Paperspace's machines): `gpu_info` names the model and the TOTAL
# memory of all GPUs; the table is the cross-check (DigitalOcean's documented GPU sizes).
GPU_NAMES["paperspace"] = {
    "nvidia_h100": "H100", "nvidia_h200": "H200", "nvidia_l40s": "L40S",
    "nvidia_rtx4000_ada": "RTX4000Ada", "nvidia_rtx6000_ada": "RTX6000Ada",
    "amd_mi300x": "MI300X", "amd_mi325x": "MI325X",
}  # fmt: skip
INSTANCE_GPUS["paperspace"] = {
    **_family("gpu-h100x", "H100", 80, {"1-80gb": 1, "8-640gb": 8}),
    **_family("gpu-h200x", "H200", 141, {"1-141gb": 1, "8-1128gb": 8}),
    **_family("gpu-l40sx", "L40S", 48, {"1-48gb": 1}),
    **_family("gpu-4000adax", "RTX4000Ada", 20, {"1-20gb": 1}),
    **_family("gpu-6000adax", "RTX6000Ada", 48, {"1-48gb": 1}),
    **_family("gpu-mi300x", "MI300X", 192, {"1-192gb": 1, "8-1536gb": 8}),
}

# Tencent Cloud CVM: DescribeZoneInstanceConfigInfos names no GPU, so the family decides it.
# Tencent's GPU instance docs (computing and rendering instance pages under
# cloud.tencent.com/document/product/560; GN7vw.8XLARGE128 only on the GN7vw billing page):
# size -> (GPUs, vCPUs, memory GiB). GN7 / GN7vw sell shares of one T4 (vGPU): 1/4 and 1/2.
# Unverified and left out: the HCC families (HCCPNV4h A100, HCCPNV5): their sizes and A100
# memory are not in a stored source; the collector asks for them, so they show as unknown.
# fmt: off
INSTANCE_GPUS["tencent"] = {
    **_family("GN7.", "T4", 16, {"LARGE20": (0.25, 4, 20), "2XLARGE40": (0.5, 10, 40),
                                 "2XLARGE32": (1, 8, 32), "5XLARGE80": (1, 20, 80),
                                 "8XLARGE128": (1, 32, 128), "10XLARGE160": (2, 40, 160),
                                 "20XLARGE320": (4, 80, 320)}),
    **_family("GN7vw.", "T4", 16, {"LARGE16": (0.25, 4, 16), "2XLARGE32": (0.5, 8, 32),
                                   "4XLARGE64": (1, 16, 64), "8XLARGE128": (2, 32, 128)}),
    **_family("GN7vi.", "T4", 16, {"5XLARGE80": 1, "10XLARGE160": 2, "20XLARGE320": 4}),
    **_family("GI3X.", "T4", 16, {"8XLARGE64": (1, 32, 64), "22XLARGE226": (2, 90, 226),
                                  "45XLARGE452": (4, 180, 452)}),
    **_family("GN10X.", "V100", 32, {"2XLARGE40": (1, 8, 40), "4XLARGE80": (2, 18, 80),
                                     "9XLARGE160": (4, 36, 160), "18XLARGE320": (8, 72, 320)}),
    **_family("GN10Xp.", "V100", 32, {"2XLARGE40": (1, 10, 40), "5XLARGE80": (2, 20, 80),
                                      "10XLARGE160": (4, 40, 160),
                                      "20XLARGE320": (8, 80, 320)}),
    **_family("GT4.", "A100", 40, {"4XLARGE96": (1, 16, 96), "8XLARGE192": (2, 32, 192),
                                   "20XLARGE474": (4, 82, 474), "41XLARGE948": (8, 164, 948)}),
    **_family("PNV4.", "A10", 24, {"7XLARGE116": (1, 28, 116), "14XLARGE232": (2, 56, 232),
                                   "28XLARGE466": (4, 112, 466), "56XLARGE932": (8, 224, 932)}),
}
# fmt: on

# Alibaba Cloud ECS: DescribeInstanceTypes names the GPU ("GPUSpec": "NVIDIA A10"), its count
# and per-GPU memory; the collector prices a type only when the API agrees with this table.
# Sizes from Alibaba's "GPU-accelerated compute-optimized instance families" page:
# size -> (GPUs, vCPUs, memory GiB). That page names no GPU for gn7 (40 GB) and gn7e (80 GB):
# A100 is the usual reading, and the API's GPUSpec must confirm it. gn8v (96 GB HBM3, GPU not
# named anywhere we could read) is left out, so the collector reports it as unknown.
GPU_NAMES["alibaba"] = {
    "NVIDIA T4": "T4", "NVIDIA V100": "V100", "NVIDIA A10": "A10", "NVIDIA A100": "A100",
    "NVIDIA L20": "L20",
}  # fmt: skip
# fmt: off
INSTANCE_GPUS["alibaba"] = {
    **_family("ecs.gn6i-", "T4", 16, {"c4g1.xlarge": (1, 4, 15), "c8g1.2xlarge": (1, 8, 31),
                                      "c16g1.4xlarge": (1, 16, 62), "c24g1.6xlarge": (1, 24, 93),
                                      "c40g1.10xlarge": (1, 40, 155),
                                      "c24g1.12xlarge": (2, 48, 186),
                                      "c24g1.24xlarge": (4, 96, 372)}),
    **_family("ecs.gn6v-", "V100", 16, {"c8g1.2xlarge": (1, 8, 32), "c8g1.4xlarge": (2, 16, 64),
                                        "c8g1.8xlarge": (4, 32, 128),
                                        "c8g1.16xlarge": (8, 64, 256),
                                        "c10g1.20xlarge": (8, 82, 336)}),
    **_family("ecs.gn6e-", "V100", 32, {"c12g1.3xlarge": (1, 12, 92),
                                        "c12g1.6xlarge": (2, 24, 184),
                                        "c12g1.12xlarge": (4, 48, 368),
                                        "c12g1.24xlarge": (8, 96, 736)}),
    **_family("ecs.gn7-", "A100", 40, {"c12g1.3xlarge": (1, 12, 94),
                                       "c13g1.13xlarge": (4, 52, 378),
                                       "c13g1.26xlarge": (8, 104, 756)}),
    **_family("ecs.gn7e-", "A100", 80, {"c16g1.4xlarge": (1, 16, 125),
                                        "c16g1.8xlarge": (2, 32, 250),
                                        "c16g1.16xlarge": (4, 64, 500),
                                        "c16g1.32xlarge": (8, 128, 1000)}),
    **_family("ecs.gn7i-", "A10", 24, {"c8g1.2xlarge": (1, 8, 30), "c16g1.4xlarge": (1, 16, 60),
                                       "c32g1.8xlarge": (1, 32, 188),
                                       "c32g1.16xlarge": (2, 64, 376),
                                       "c32g1.32xlarge": (4, 128, 752),
                                       "c48g1.12xlarge": (1, 48, 310),
                                       "c56g1.14xlarge": (1, 56, 346),
                                       "2x.8xlarge": (2, 32, 128), "4x.8xlarge": (4, 32, 128),
                                       "4x.16xlarge": (4, 64, 256), "8x.16xlarge": (8, 64, 256),
                                       "8x.32xlarge": (8, 128, 512)}),
    **_family("ecs.gn8is", "L20", 48, {".2xlarge": (1, 8, 64), ".4xlarge": (1, 16, 128),
                                       "-2x.8xlarge": (2, 32, 256), "-4x.16xlarge": (4, 64, 512),
                                       "-8x.32xlarge": (8, 128, 1024)}),
}
# fmt: on


# Oracle Cloud: the Cost Estimator's shapes give the GPU count and a memory that is the shape's
# total for most shapes and per GPU for some; the model is in the shape's name ("BM.GPU.H100.8",
# "VM.GPU3.1": GPU2 P100, GPU3 V100, GPU4 A100 40 GB, A100-v2 the 80 GB part). The table is
# Oracle's "GPU shapes" documentation, the cross-check of what the estimator says.
GPU_NAMES["oci"] = {
    "GPU2": "P100", "GPU3": "V100", "GPU4": "A100", "A100-v2": "A100", "A10": "A10",
    "L40S": "L40S", "H100": "H100", "H200": "H200", "B200": "B200", "MI300X": "MI300X",
    "MI355X": "MI355X",
}  # fmt: skip
# fmt: off
INSTANCE_GPUS["oci"] = {
    **_family("VM.GPU2.", "P100", 16, {"1": 1}), **_family("BM.GPU2.", "P100", 16, {"2": 2}),
    **_family("VM.GPU3.", "V100", 16, {"1": 1, "2": 2, "4": 4}),
    **_family("BM.GPU3.", "V100", 16, {"8": 8}),
    **_family("BM.GPU4.", "A100", 40, {"8": 8}),
    **_family("BM.GPU.A100-v2.", "A100", 80, {"8": 8}),
    **_family("VM.GPU.A10.", "A10", 24, {"1": 1, "2": 2}),
    **_family("BM.GPU.A10.", "A10", 24, {"4": 4}),
    **_family("BM.GPU.L40S.", "L40S", 48, {"4": 4}),
    **_family("BM.GPU.H100.", "H100", 80, {"8": 8}),
    **_family("BM.GPU.H200.", "H200", 141, {"8": 8}),
    **_family("BM.GPU.B200.", "B200", 180, {"8": 8}),
    **_family("BM.GPU.MI300X.", "MI300X", 192, {"8": 8}),
    # The estimator gives this shape's gpuMemoryQty per GPU (288), not the total (2304).
    **_family("BM.GPU.MI355X.", "MI355X", 288, {"8": 8}),
}
# fmt: on

# Vultr: cloud GPU plans name the GPU (`gpu_type` "NVIDIA_A100") and the plan's VRAM, which is
# a slice of one GPU on the small plans: the count is that VRAM over one whole GPU's memory,
# below (Vultr's Cloud GPU pages; its A100 is the 80 GB part). Bare-metal plans name no GPU at
# all: their GPUs are the table's (Vultr's bare-metal GPU plan pages, as gpuhunt keeps them).
GPU_NAMES["vultr"] = {
    "NVIDIA_A100": "A100", "NVIDIA_A40": "A40", "NVIDIA_A16": "A16", "NVIDIA_L40S": "L40S",
    "NVIDIA_H100": "H100", "NVIDIA_GH200": "GH200", "AMD_MI300X": "MI300X",
    "AMD_MI325X": "MI325X",
}  # fmt: skip
WHOLE_GPU_GIB: dict[str, dict[str, float]] = {
    "vultr": {"A100": 80, "A40": 48, "A16": 16, "L40S": 48, "H100": 80, "GH200": 96,
              "MI300X": 192, "MI325X": 256},
}  # fmt: skip
INSTANCE_GPUS["vultr"] = {
    "vbm-48c-1024gb-4-a100-gpu": InstanceGpu("A100", 4, 80),
    "vbm-112c-2048gb-8-a100-gpu": InstanceGpu("A100", 8, 80),
    "vbm-112c-2048gb-8-h100-gpu": InstanceGpu("H100", 8, 80),
    "vbm-64c-2048gb-8-l40-gpu": InstanceGpu("L40S", 8, 48),
    "vbm-72c-480gb-gh200-gpu": InstanceGpu("GH200", 1, 96),
    "vbm-256c-2048gb-8-mi300x-gpu": InstanceGpu("MI300X", 8, 192),
}

# Vast.ai: `gpu_name` is Vast's own ("H100 SXM", "A100 PCIE"); the memory comes from the offer's
# `gpu_ram`, so both A100 variants map to A100 (gpuhunt's GPU_MAPPING reads them the same way).
# The H100 NVL is stored as H100 with its own 94 GB, as Azure's NC H100 v5 is.
GPU_NAMES["vastai"] = {
    "H100 SXM": "H100", "H100 PCIE": "H100", "H100 NVL": "H100", "H200": "H200",
    "H200 NVL": "H200", "B200": "B200", "A100 SXM4": "A100", "A100 PCIE": "A100",
    "A100 SXM": "A100", "A100X": "A100", "L40S": "L40S", "L4": "L4", "A10": "A10",
    "A40": "A40", "RTX A6000": "A6000", "RTX 6000Ada": "RTX6000Ada",
    "RTX 4000Ada": "RTX4000Ada", "Tesla V100": "V100", "Tesla T4": "T4", "RTX 4090": "RTX4090",
    "RTX 3090": "RTX3090", "MI300X": "MI300X", "GH200 SXM": "GH200",
}  # fmt: skip

# RunPod: `displayName` is looked up ("H100 SXM", "RTX A6000"); `memoryInGb` is one GPU's.
GPU_NAMES["runpod"] = {
    "H100 SXM": "H100", "H100 PCIe": "H100", "H100 NVL": "H100", "H200 SXM": "H200",
    "H200 NVL": "H200", "B200": "B200", "A100 SXM": "A100", "A100 PCIe": "A100", "L40S": "L40S",
    "L4": "L4", "A40": "A40", "RTX A6000": "A6000", "RTX 6000 Ada": "RTX6000Ada",
    "RTX 4000 Ada": "RTX4000Ada", "RTX 4090": "RTX4090", "RTX 3090": "RTX3090",
    "MI300X": "MI300X", "V100": "V100", "Tesla V100": "V100",
}  # fmt: skip


def lookup(provider: str, instance_type: str) -> InstanceGpu | None:
    """The GPUs of a provider's instance type, or None when the table does not know it."""
    return INSTANCE_GPUS.get(provider, {}).get(instance_type)


def instance_types(provider: str) -> tuple[str, ...]:
    """Every instance type of a provider that the table knows, in a stable order."""
    return tuple(sorted(INSTANCE_GPUS.get(provider, {})))


def contradiction(
    provider: str, instance_type: str, said: InstanceGpu, unit: str = "GiB"
) -> str | None:
    """What the API's GPU facts (model, count, per-GPU memory) contradict in the table's entry
    for the type, in words; None when they agree or the table has no entry."""
    known = lookup(provider, instance_type)
    facts = (said.gpu_model, said.gpu_count, said.gpu_memory_gib)
    if known is None or (known.gpu_model, known.gpu_count, known.gpu_memory_gib) == facts:
        return None
    return (
        f"the API says {said.gpu_count:g} x {said.gpu_model} {said.gpu_memory_gib:g} {unit}, "
        f"the GPU table {known.gpu_count:g} x {known.gpu_model} {known.gpu_memory_gib:g} {unit}"
    )


def canonical_model(provider: str, name: str) -> str | None:
    """The canonical model for a provider's own GPU name ("Tesla V100", "nvidia_h100"), or None
    (also for a name that is not a string: an answer may carry anything there)."""
    return GPU_NAMES.get(provider, {}).get(name) if isinstance(name, str) else None
