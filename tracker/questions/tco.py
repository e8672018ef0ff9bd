"""`tco`: the need its options describe (their durations and spot overheads are `types`), and
why a need cannot be had (the formulas live in `storage.reads.tco`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from storage.reads import tco as tco_mod
from tracker.questions.types import gpu_again


def need_from(options: dict[str, Any]) -> tco_mod.Need:
    """The need the options describe (the web API builds it the same way)."""
    gpu = gpu_again(options["gpu"])
    assert gpu is not None  # --gpu is required
    return tco_mod.Need(
        gpu=gpu.model,
        gpu_memory_gib=gpu.memory_gib,
        gpus=options["gpus"],
        months=options["months"],
        utilization=options["utilization"],
        memory_gib=options["memory"],
        providers=tuple(dict.fromkeys(options["providers"])),
        spot_overhead_pct=10.0 if options["spot_overhead"] is None else options["spot_overhead"],
        spot_overhead_advisor=options["spot_overhead"] is None,
        spot_basis=options["spot_basis"],
        spot_window_s=options["spot_window"],
        migration_usd=options["migration_cost"],
        current_provider=options["current"],
        per_node=options["per_node"],
    )


def baseline_problem(baseline: int | None, need: tco_mod.Need) -> str | None:
    """Why `--baseline` cannot be had with this need, or None (the web API refuses the same)."""
    if baseline is not None and baseline > need.gpus:
        return f"--baseline {baseline}: more than --gpus {need.gpus}"
    return None


def unknown_gpu(store: Path, need: tco_mod.Need, timeout_s: float | None) -> list[str]:
    """Why no candidate came (a GPU model or variant the store and the GPU table do not know),
    or none; the web API answers the same words."""
    from storage import latest as latest_mod
    from tracker.questions.latest import unknown

    filters = latest_mod.Filters(gpu=need.gpu, gpu_memory_gib=need.gpu_memory_gib)
    return unknown(store, filters, timeout_s)


def why_no_offer(store: Path, need: tco_mod.Need, timeout_s: float | None) -> str | None:
    """Which filter left the GPU with no current offer at all (`--provider aws` where only
    others have it), or None where several providers were named (tco_words says it then)."""
    from storage import latest as latest_mod
    from tracker.questions import emptied

    if len(need.providers) > 1:
        return None
    filters = latest_mod.Filters(
        gpu=need.gpu,
        gpu_memory_gib=need.gpu_memory_gib,
        min_memory_gib=need.memory_gib,
        provider=need.providers[0] if need.providers else None,
        sold_out=True,  # sold-out offers are the candidates' exclusions, said apart
    )
    return "no candidate: " + emptied.latest(store, filters, timeout_s)
