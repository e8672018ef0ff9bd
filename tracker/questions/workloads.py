"""Cost per unit of real work (docs/decide.md, "Cost per unit of work"): the workload `--workload`
names, its throughput applied to `tco`'s options after their query (`latest` ranks by it in SQL:
`storage.latest`), and `tco --amount`'s horizon: the time N GPUs take for X units of work.

    latest: usd_per_unit = price_per_gpu_hour_usd / per_gpu_hour
    tco:    units        = per_gpu_hour * N * hours * U
            usd_per_unit = total_usd / units
    --amount X: hours = X / (per_gpu_hour * N), months = hours / 730 / U (replaces --months)
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from tracker.config.workloads import Workload, Workloads, find
from tracker.questions.types import MAX_MONTHS

if TYPE_CHECKING:  # `latest` asks for a workload too: the TCO formulas are not loaded for it
    from storage.reads.tco import Need, Tco

COLUMNS = ("units", "usd_per_unit")


def chosen(workloads: Workloads, name: str | None, sort: str | None = None) -> Workload | None:
    """The workload `--workload` names, None without one; ValueError naming the accepted
    workloads for an unknown name, or for `--sort unit` without a workload."""
    if name is not None:
        return find(workloads, name)
    if sort == "unit":
        raise ValueError(
            f"--sort unit: needs --workload NAME (accepted: {', '.join(sorted(workloads))})"
        )
    return None


def for_amount(need: Need, workload: Workload | None, amount: float | None) -> tuple[Need, str]:
    """The need with the horizon its N GPUs take for `amount` units of work (and its GPU narrowed
    to the one memory variant with a throughput, where only one has), and the words that say
    so; `need` and "" without an amount. ValueError: why the amount cannot be priced."""
    if amount is None:
        return need, ""
    if workload is None:
        raise ValueError("--amount: needs --workload NAME (the work the amount is of)")
    from storage.reads.tco import HOURS_PER_MONTH

    rate, memory_gib = _one_rate(need, workload)
    hours = amount / (rate * need.gpus)
    months = hours / HOURS_PER_MONTH / need.utilization
    gpu = need.gpu if memory_gib is None else f"{need.gpu} {memory_gib:g}GB"
    if months > MAX_MONTHS:
        raise ValueError(
            f"--amount {amount:g}: {need.gpus}x {gpu} take {months:,.1f} months for it, more "
            f"than {MAX_MONTHS} months; give more --gpus or a smaller amount"
        )
    words = (
        f"--amount {amount:g} ({workload.unit}, {workload.name}): {need.gpus}x {gpu} at "
        f"{rate:g} per GPU-hour take {hours:,.2f} hours, {months:.4g} months at "
        f"{need.utilization:.0%} utilization"
    )
    return replace(need, months=months, gpu_memory_gib=memory_gib), words


def _one_rate(need: Need, workload: Workload) -> tuple[float, float | None]:
    """The one throughput the need's GPU has (and the memory variant it is of, where the need
    must be narrowed to it), else ValueError."""
    if need.gpu_memory_gib is not None:
        rate = workload.per_gpu_hour(need.gpu, need.gpu_memory_gib)
        if rate is None:
            label = f"{need.gpu} {need.gpu_memory_gib:g}GB"
            raise ValueError(_none(workload, label))
        return rate, need.gpu_memory_gib
    mine = workload.of_model(need.gpu)
    if not mine:
        raise ValueError(_none(workload, need.gpu))
    if len(mine) == 1:
        return mine[0].per_gpu_hour, mine[0].choice.memory_gib
    gpus = ", ".join(f"{r.gpu} = {r.per_gpu_hour:g}" for r in mine)
    raise ValueError(
        f"--amount: {workload.name} gives {need.gpu} several throughputs ({gpus}); name one "
        f'with --gpu, e.g. --gpu "{mine[0].gpu}"'
    )


def _none(workload: Workload, gpu: str) -> str:
    return (
        f"--amount: {workload.name} has no throughput for {gpu} (it has one for: "
        f"{workload.gpus()}; add yours in [workloads.{workload.name}])"
    )


def with_units(answer: Tco, workload: Workload) -> Tco:
    """`answer` with `units` and `usd_per_unit` on every option (None where its GPU has no
    throughput in `workload`)."""
    rows = [_priced(row, workload, answer.need) for row in answer.rows]
    columns = answer.columns if answer.baseline else (*answer.columns, *COLUMNS)
    return replace(answer, rows=rows, columns=columns)


def _priced(row: dict[str, Any], workload: Workload, need: Need) -> dict[str, Any]:
    rate = workload.per_gpu_hour(row["gpu_model"], row["gpu_memory_gib"])
    if rate is None:
        return {**row, "units": None, "usd_per_unit": None}
    units = rate * need.gpus * float(row["hours"]) * need.utilization
    return {**row, "units": round(units, 6), "usd_per_unit": round(row["total_usd"] / units, 6)}


def headers(answer: Tco) -> tuple[str, ...]:
    """The table's columns of the work, when a workload was asked for."""
    return ("units", "USD/unit") if answer.rows and "units" in answer.rows[0] else ()


def cells(row: dict[str, Any]) -> list[str]:
    """An option's cells under `headers`: empty where its GPU has no throughput."""
    if "units" not in row:
        return []
    if row["units"] is None:
        return ["", ""]
    return [f"{row['units']:,.2f}", f"{row['usd_per_unit']:,.4f}"]
