"""Alibaba Cloud: the GPU types of DescribeInstanceTypes and their GPU facts (pure, no I/O).

The answer's own `GPUAmount`, `GPUSpec` and `GPUMemorySize` are the facts; the GPU table is the
cross-check (a contradiction is logged, the answer wins) and fills what the answer leaves out.
"""

from __future__ import annotations

import logging
from decimal import Decimal
from typing import Any

from collectors import gpus, kit
from collectors.base import Payloads
from collectors.common import PayloadShapeError
from collectors.gpus import InstanceGpu

PROVIDER = "alibaba"
log = logging.getLogger(f"collectors.{PROVIDER}")

_TYPES = ("InstanceTypes", "InstanceType")


def known_types(
    payloads: Payloads, *, report: bool = True
) -> tuple[dict[str, gpus.Resolved], dict[str, str]]:
    """The GPU types of DescribeInstanceTypes with their GPU facts (and where they came from),
    and the GPU types nobody gives a GPU count and per-GPU memory for, each with the reason.
    With `report`, what the table contradicts or cannot name is logged (once a run: the
    parse reports, the fetch only needs the list)."""
    known: dict[str, gpus.Resolved] = {}
    unknown: dict[str, str] = {}
    pages = [(k, p) for k, p in payloads.items() if k.startswith("types/")]
    if not pages:
        raise PayloadShapeError(PROVIDER, "no DescribeInstanceTypes answer (types/page-1)")
    items = [(key, item) for key, page in pages for item in listed(page, _TYPES, key)]
    sort = _Sorter(known, unknown, report)
    unreadable = [key for key, item in items if not sort(item, key)]
    if items and len(unreadable) == len(items):  # not one InstanceType could be read
        raise PayloadShapeError(PROVIDER, f"{items[0][0]}: an InstanceType without InstanceTypeId")
    return known, unknown


# -- instance types --------------------------------------------------------------------------


class _Sorter:
    """Sorts InstanceType items into `known` (with their facts) and `unknown` (with why)."""

    def __init__(
        self, known: dict[str, gpus.Resolved], unknown: dict[str, str], report: bool
    ) -> None:
        self.known, self.unknown, self.report = known, unknown, report

    def __call__(self, item: Any, key: str) -> bool:
        """Sort one item; False when it names no type."""
        if not isinstance(item, dict) or not isinstance(item.get("InstanceTypeId"), str):
            # One row of another shape: the type it names cannot be read, so its prices are
            # reported as of an unknown type; the others' stand.
            self._warn("%s: %s: an InstanceType without InstanceTypeId; skipped", PROVIDER, key)
            return False
        itype, amount = item["InstanceTypeId"], number(item.get("GPUAmount"))
        if amount is None or amount <= 0:
            return True  # not a GPU type (the API sets GPUSpec on some of those too)
        said = self._said(itype, item)
        found = gpus.resolve(PROVIDER, itype, said)
        if found is None:
            self.unknown[itype] = (
                f"DescribeInstanceTypes gives no per-GPU memory (GPUSpec "
                f"{item.get('GPUSpec')!r}, GPUAmount {amount}) and the GPU table has no entry"
            )
            return True
        why = None if said is None else gpus.contradiction(PROVIDER, itype, said)
        if why is not None:
            self._warn("%s: %s: %s; using the API's", PROVIDER, itype, why)
        self.known[itype] = found
        return True

    def _said(self, itype: str, item: dict[str, Any]) -> InstanceGpu | None:
        """What DescribeInstanceTypes says of a GPU type, the table filling its gaps; None
        without a GPU count. A GPUSpec nobody spells is stored as the answer names it."""
        count = kit.size(item.get("GPUAmount"), kit.NUMBERS_OR_TEXT)
        if count is None:
            return None
        table = gpus.bundled(PROVIDER, itype)
        spec = item.get("GPUSpec")
        name = gpus.canonical_model(PROVIDER, spec)
        if name is None and table is not None and table.gpu_count == count:
            name = table.gpu_model  # a spelling the table lacks, of a type it knows
        elif name is None:
            name = gpus.stored_model(PROVIDER, spec)
            self._warn(
                "%s: %s: GPUSpec %r is no GPU the table knows: stored under its own name "
                "(name it in [gpus.models.<name>] aliases)",
                PROVIDER,
                itype,
                spec,
            )
        memory = kit.size(item.get("GPUMemorySize"), kit.NUMBERS_OR_TEXT)
        memory = memory if memory is not None else (table.gpu_memory_gib if table else None)
        if memory is None:
            return None
        vcpus = kit.size(item.get("CpuCoreCount"), kit.NUMBERS_OR_TEXT)
        host = kit.size(item.get("MemorySize"), kit.NUMBERS_OR_TEXT)
        return InstanceGpu(
            name,
            count,
            memory,
            vcpus if vcpus is not None else (table.vcpus if table else None),
            host if host is not None else (table.memory_gib if table else None),
        )

    def _warn(self, message: str, *args: Any) -> None:
        if self.report:
            log.warning(message, *args)


def listed(body: Any, path: tuple[str, str], key: str) -> list[Any]:
    """A list wrapped in an object (XML heritage: {"SpotPrices": {"SpotPriceType": [...]}})."""
    outer = body.get(path[0]) if isinstance(body, dict) else None
    items = outer.get(path[1]) if isinstance(outer, dict) else None
    if not isinstance(items, list):
        raise PayloadShapeError(PROVIDER, f"{key}: the answer has no {'.'.join(path)} list")
    return items


def number(value: Any) -> Decimal | None:
    """Alibaba sends numbers as JSON numbers or as strings, depending on the call."""
    return kit.exact(value, kit.NUMBERS_OR_TEXT)
