"""The words a `tco` answer is named in: its title, each candidate's strategy and offer, each
blended plan. The chart, the command's tables and the dashboard all label with these, so a bar
and its table row read the same; no matplotlib here."""

from __future__ import annotations

from typing import Any

from collectors.common import kind_label
from storage.reads.tco import Tco


def term_words(months: int) -> str:
    """36 -> '3y', 1 -> '1mo': a reserved term as people say it."""
    return f"{months // 12}y" if months % 12 == 0 else f"{months}mo"


def strategy(row: dict[str, Any]) -> str:
    """The rental strategy of a candidate: on-demand, spot, or the reserved term."""
    if row["price_kind"] == "reserved":
        return f"reserved {term_words(row['term_months'])}"
    return kind_label(row["price_kind"])


def offer(row: dict[str, Any], prefix: str = "") -> str:
    """provider region[/zone] instance_type, of a candidate or one part of a plan."""
    where = "/".join(p for p in (row[f"{prefix}region"], row[f"{prefix}zone"]) if p)
    return " ".join(
        p for p in (row[f"{prefix}provider"], where, row[f"{prefix}instance_type"]) if p
    )


def plan_name(plan: dict[str, Any]) -> str:
    """A blended plan: '4 reserved 3y + 4 spot'."""
    base = f"{plan['reserved_gpus']} reserved {term_words(plan['reserved_term_months'])}"
    if not plan["burst_price_kind"]:
        return base
    return f"{base} + {plan['burst_gpus']} {kind_label(plan['burst_price_kind'])}"


def best_per_strategy(answer: Tco, per_strategy: int = 1) -> list[dict[str, Any]]:
    """The cheapest `per_strategy` candidates of each strategy and memory size, cheapest first
    (the rows come cheapest first, so the first ones seen are the best): an A100's spot on
    40 GB and its on-demand on 80 GB are two answers, never one."""
    seen: dict[tuple[Any, str], int] = {}
    best = []
    for row in answer.rows:
        name = (row["gpu_memory_gib"], strategy(row))
        if seen.get(name, 0) < per_strategy:
            seen[name] = seen.get(name, 0) + 1
            best.append(row)
    return best


def sizes(rows: list[dict[str, Any]]) -> list[tuple[float | None, list[dict[str, Any]]]]:
    """`rows` (candidates or plans, cheapest first) by the GPU's memory size, each size's rows
    still cheapest first, the size with the cheapest row first: each size is ranked apart."""
    grouped: dict[float | None, list[dict[str, Any]]] = {}
    for row in rows:
        grouped.setdefault(row["gpu_memory_gib"], []).append(row)
    return list(grouped.items())


def memory_words(gib: float | None) -> str:
    """80.0 -> '80GB' (the vendor's nominal GB, as `--gpu "A100 80GB"` takes it)."""
    return "memory unknown" if gib is None else f"{gib:g}GB"


def title(answer: Tco, memory_gib: float | None = None) -> str:
    """The need in words: '8x A100 for 36 months at 100% utilization' (with `memory_gib`, or a
    variant asked for: '8x A100 80GB ...')."""
    need = answer.need
    when = f", as of {answer.as_of:%Y-%m-%d %H:%M} UTC" if answer.as_of else ""
    # The model as the store spells it (RTX4000Ada), whatever case it was asked in.
    gpu = answer.rows[0]["gpu_model"] if answer.rows else need.gpu.upper()
    memory = need.gpu_memory_gib if memory_gib is None else memory_gib
    if memory is not None:  # a memory variant: "A100 80GB", as it was asked
        gpu += f" {memory:g}GB"
    node = f" (machines of {need.per_node}+ GPUs)" if need.per_node > 1 else ""
    return (f"TCO of {need.gpus}x {gpu}{node} for {need.months:g} months at "
            f"{need.utilization:.0%} utilization{when}")  # fmt: skip
