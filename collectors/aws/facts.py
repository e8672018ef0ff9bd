"""AWS GPU facts: what the GPUs of an instance type are, from AWS's own answers first.

The Price List never names a GPU model: its products carry the GPU count (`gpu`) and the memory
of all the GPUs together (`gpuMemory`, "320 GB HBM2"). EC2 `DescribeInstanceTypes` (asked only
with credentials; `describe` asks it, `read` reads its answers) names the GPU, its maker, count
and memory (`GpuInfo`). For each instance type (`Facts.of`) the first that knows wins:

1. the user's `[gpus.instance_types."<type>"]` entry (source "config");
2. `DescribeInstanceTypes` (source "api"), where it contradicts the bundled table the API is
   taken and the contradiction logged once;
3. the bundled GPU table's entry for the type (source "table");
4. the Price List's count and memory with the model unknown (source "api"): the offer is stored
   with `gpu_model` NULL and named in the run summary, never dropped.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import Any

from botocore.exceptions import ClientError

from collectors import gpus, kit
from collectors.aws.pages import Pages, pages_of
from collectors.base import ParseResult, Payloads
from collectors.common import FetchError
from collectors.gpus import InstanceGpu, Resolved

log = logging.getLogger("collectors.aws")

GPU_FAMILY = "GPU instance"  # Inferentia, Trainium, Gaudi: "Machine Learning ASIC Instances"
# Types per DescribeInstanceTypes request (the EC2 API model allows 100 names a request).
DESCRIBE_CHUNK = 100
# The answers of a principal not allowed ec2:DescribeInstanceTypes: the collection goes on with
# the table's facts.
DENIED = frozenset({"UnauthorizedOperation", "AccessDenied", "AccessDeniedException"})
# EC2 reports the memory the driver sees (an L4's 24 GB as 22888 MiB); within this share of a
# memory variant the table lists for the model, that variant is the one meant.
VARIANT_TOLERANCE = 0.1
_NUMBER = re.compile(r"^\s*([0-9][0-9,]*(?:\.[0-9]+)?)\s*(GiB|GB|TiB|TB)?\b", re.IGNORECASE)

# Types whose API facts contradict the table, already logged by this process.
_contradicted: set[str] = set()


def describe_queries(types: Iterable[str]) -> Iterator[dict[str, Any]]:
    """The DescribeInstanceTypes requests for `types`: GpuInfo is the same in every region, so
    one region answers, types it does not sell included. By filter, not `InstanceTypes`: a name
    EC2 does not know (a retired type the Price List still lists) then matches nothing instead
    of failing the request (InvalidInstanceType)."""
    ordered = sorted(set(types))
    for start in range(0, len(ordered), DESCRIBE_CHUNK):
        chunk = ordered[start : start + DESCRIBE_CHUNK]
        yield {
            "Filters": [{"Name": "instance-type", "Values": chunk}],
            "IncludeUnsupportedInRegion": True,
        }


def describe(ec2: Any, pages: Pages, types: Iterable[str]) -> None:
    """DescribeInstanceTypes pages for `types` into `pages`; a refusal is kept as the answer
    `types/denied/answer`: the table's facts stand in, and the run summary says so."""
    for number, query in enumerate(describe_queries(types), 1):
        try:
            pages.walk(ec2, "describe_instance_types", f"types/{number}", query)
        except FetchError as exc:
            cause = exc.__cause__
            error = cause.response.get("Error", {}) if isinstance(cause, ClientError) else {}
            if error.get("Code") not in DENIED:
                raise
            log.warning("aws: DescribeInstanceTypes refused: %s", error.get("Code"))
            pages.payloads["types/denied/answer"] = {"Error": dict(error)}
            return


def read(payloads: Payloads, result: ParseResult) -> dict[str, InstanceGpu | None] | None:
    """The DescribeInstanceTypes answers' GPUs by type; None where there are none (the public
    files, or a refusal: then the run summary's notes say so)."""
    denied = payloads.get("types/denied/answer")
    if denied is not None:
        code = kit.obj(kit.obj(denied).get("Error")).get("Code")
        result.notes.append(
            f"GPU facts from the GPU table: DescribeInstanceTypes was refused ({code}); "
            "allow ec2:DescribeInstanceTypes for the API's own"
        )
    found = [page for key, page in pages_of(payloads, "types") if key != "types/denied/answer"]
    return described(found) if found else None


def described(pages: Iterable[Any]) -> dict[str, InstanceGpu | None]:
    """instance type -> its GPUs as DescribeInstanceTypes says them (None: it names none)."""
    found: dict[str, InstanceGpu | None] = {}
    for page in pages:
        for item in kit.obj(page).get("InstanceTypes") or []:
            name = kit.obj(item).get("InstanceType")
            if isinstance(name, str) and name:
                found[name] = from_gpu_info(kit.obj(kit.obj(item).get("GpuInfo")))
    return found


def from_gpu_info(info: dict[str, Any]) -> InstanceGpu | None:
    """The GPUs of a `GpuInfo`: a fractional GPU (g6f: `GpuPartitionSize` 0.125) counts as that
    share of one whole GPU, whose memory is the one recorded."""
    devices = [kit.obj(g) for g in info.get("Gpus") or [] if isinstance(g, dict)]
    names = {d.get("Name") for d in devices}
    model = gpus.stored_model("aws", names.pop()) if len(names) == 1 else None
    count, whole_mib = 0.0, None
    for device in devices:
        share = kit.size(device.get("GpuPartitionSize")) or 1.0
        share = share if share <= 1 else 1.0
        number = kit.size(device.get("Count")) or kit.size(device.get("LogicalGpuCount"))
        count += (number or 0.0) * share
        mib = kit.size(kit.obj(device.get("MemoryInfo")).get("SizeInMiB"))
        if whole_mib is None and mib is not None:
            whole_mib = mib / share
    if not count:
        return None
    total = kit.size(info.get("TotalGpuMemoryInMiB"))
    if whole_mib is None and total is not None:
        whole_mib = total / count
    if whole_mib is None:
        return None
    return InstanceGpu(model, count, variant(model, whole_mib / 1024))


def from_price_list(attrs: dict[str, Any]) -> InstanceGpu | None:
    """The GPU count and the memory of one GPU from a Price List product (`gpuMemory` is the
    total of all the GPUs), the model unknown; None where either is missing ("NA")."""
    found = _NUMBER.match(str(attrs.get("gpuMemory", "")))
    if found is None:
        return None
    count = kit.size(str(attrs.get("gpu", "")).replace(",", ""), kit.TEXT)
    total = kit.size(found.group(1).replace(",", ""), kit.TEXT)
    if count is None or total is None:
        return None
    # AWS writes GB for what is GiB ("24 GB" of an A10G's 24 GiB); TB likewise.
    if (found.group(2) or "").upper().startswith("T"):
        total *= 1024
    return InstanceGpu(None, count, round(total / count, 2))


def variant(model: str | None, gib: float) -> float:
    """`gib` as the table's memory variant of `model` it stands for, else as given."""
    known = gpus.model(model)
    if known is not None and known.memory_gib:
        nearest = min(known.memory_gib, key=lambda v: abs(v - gib))
        if abs(nearest - gib) <= VARIANT_TOLERANCE * nearest:
            return nearest
    return round(gib, 2)


class Facts:
    """The GPU facts of one parse, per instance type, with where they came from."""

    def __init__(self, said: dict[str, InstanceGpu | None] | None) -> None:
        self._said = said or {}
        self._price_list: dict[str, dict[str, Any]] = {}
        self._found: dict[str, Resolved | None] = {}

    def saw(self, attrs: dict[str, Any]) -> None:
        """A Price List product of the type: its count and memory, where nothing else says."""
        self._price_list.setdefault(str(attrs.get("instanceType")), attrs)

    def of(self, instance_type: str) -> Resolved | None:
        if instance_type not in self._found:
            self._found[instance_type] = self._resolve(instance_type)
        return self._found[instance_type]

    def _resolve(self, instance_type: str) -> Resolved | None:
        said = self._said.get(instance_type)
        if said is not None:
            table = gpus.bundled("aws", instance_type)
            if not gpus.known(said.gpu_model) and table is not None:
                said = replace(said, gpu_model=table.gpu_model)  # a spelling not yet mapped
            self._check(instance_type, said)
            return gpus.resolve("aws", instance_type, said)
        found = gpus.resolve("aws", instance_type)
        if found is not None:
            return found
        attrs = self._price_list.get(instance_type)
        listed = from_price_list(attrs) if attrs is not None else None
        return gpus.resolve("aws", instance_type, listed) if listed is not None else None

    @staticmethod
    def _check(instance_type: str, said: InstanceGpu) -> None:
        differs = gpus.contradiction("aws", instance_type, said)
        if differs is not None and instance_type not in _contradicted:
            _contradicted.add(instance_type)
            log.warning("aws: %s: %s; the API's facts are used", instance_type, differs)
