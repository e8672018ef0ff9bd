"""`latest`: the filters its options describe, and the values nothing in the store knows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from storage import latest as latest_mod
from storage.reads.gpu_filter import GpuChoice
from tracker.questions.types import gpu_again


def filters_from(given: dict[str, Any]) -> latest_mod.Filters:
    """The filters the options of `latest` describe (the web API builds them the same way)."""
    gpu: GpuChoice | None = gpu_again(given.get("gpu"))
    return latest_mod.Filters(
        gpu=gpu.model if gpu else None,
        kind=given.get("kind"),
        provider=given.get("provider"),
        region=given.get("region"),
        instance_type=given.get("instance_type"),
        gpu_memory_gib=gpu.memory_gib if gpu else None,
        min_memory_gib=given.get("memory"),
        sold_out=bool(given.get("include_sold_out")),
    )


def unknown(store: Path, filters: latest_mod.Filters, timeout_s: float | None) -> list[str]:
    """The filter values nothing in the store or the GPU table knows (`--gpu H1000`), said in
    the command's words; `tco` and the web API refuse with the same."""
    from collectors import gpus
    from tracker.config import gpu_names

    return latest_mod.unknown_values(store, filters, gpu_names(gpus.models()), timeout_s)
