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
    """The cheapest `per_strategy` candidates of each strategy, cheapest strategy first (the
    rows come cheapest first, so the first ones seen are the best)."""
    seen: dict[str, int] = {}
    best = []
    for row in answer.rows:
        name = strategy(row)
        if seen.get(name, 0) < per_strategy:
            seen[name] = seen.get(name, 0) + 1
            best.append(row)
    return best


def title(answer: Tco) -> str:
    """The need in words: '8x A100 for 36 months at 100% utilization'."""
    need = answer.need
    when = f", as of {answer.as_of:%Y-%m-%d %H:%M} UTC" if answer.as_of else ""
    # The model as the store spells it (RTX4000Ada), whatever case it was asked in.
    gpu = answer.rows[0]["gpu_model"] if answer.rows else need.gpu.upper()
    if need.gpu_memory_gib is not None:  # a memory variant: "A100 80GB", as it was asked
        gpu += f" {need.gpu_memory_gib:g}GB"
    return (f"TCO of {need.gpus}x {gpu} for {need.months:g} months at "
            f"{need.utilization:.0%} utilization{when}")  # fmt: skip
