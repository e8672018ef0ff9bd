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
        data_tb=options.get("data_tb"),
        current_region=options.get("current_region"),
    )


def transfer_problem(need: tco_mod.Need) -> str | None:
    """Why `--data-tb` cannot be priced with this need, or None (the web API refuses the same)."""
    if need.data_tb is not None and need.current_provider is None:
        return "--data-tb: name the provider the data leaves with --current"
    if need.current_region is not None and need.data_tb is None:
        return "--current-region: it prices --data-tb; give that too"
    return None


def transfer_words(answer: tco_mod.Tco) -> str | None:
    """One line on what moving the data costs and where its price came from, or None."""
    need, moving = answer.need, answer.transfer
    if need.data_tb is None or need.current_provider is None:
        return None
    where = need.current_provider + (f" {need.current_region}" if need.current_region else "")
    if moving is None:
        return (f"--data-tb {need.data_tb:g}: no transfer price of {where} is stored "
                "(transfer_prices): transfer_usd is empty and left out of the totals")  # fmt: skip
    region = f" {moving.region}" if moving.region else ""
    if moving.usd is None:
        return (f"--data-tb {need.data_tb:g}: no USD rate for {moving.currency}: transfer_usd "
                "is empty and left out of the totals")  # fmt: skip
    dearest = "" if need.current_region or not moving.region else " (its dearest region)"
    return (f"moving {moving.gib:,.0f} GiB out of {moving.provider}{region}{dearest} costs "
            f"{moving.usd:,.2f} USD, added to every option elsewhere (transfer_usd)")  # fmt: skip


def baseline_problem(baseline: int | None, need: tco_mod.Need) -> str | None:
    """Why `--baseline` (or `--data-tb`) cannot be had with this need, or None (the web API
    refuses the same)."""
    if baseline is not None and baseline > need.gpus:
        return f"--baseline {baseline}: more than --gpus {need.gpus}"
    return transfer_problem(need)


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
