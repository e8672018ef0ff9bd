"""How `gpu-tracker tco` reads on screen: the best option per strategy with its distance to the
best, the blended plans, and plain words for what was left out and why."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.markup import escape
from rich.table import Table

from collectors.common import duration_words, kind_label
from storage.reads.tco import Need, Tco
from tracker.charts.labels import (
    best_per_strategy,
    memory_words,
    offer,
    plan_name,
    sizes,
    strategy,
    term_words,
    title,
)
from tracker.questions.tco_words import distance, left_out_lines
from tracker.questions.workloads import cells, headers


def strategies(answer: Tco, per_strategy: int) -> Group:
    """The best option of each strategy (or the best few), with its distance to the best: one
    table per memory size of the GPU, each size ranked apart (its own best)."""
    shown = best_per_strategy(answer, per_strategy)
    groups = sizes(shown)
    tables = [_strategies(answer, gib, rows, len(groups) > 1) for gib, rows in groups]
    notes = _notes(answer, shown)
    if len(shown) < len(answer.rows):
        more = len(answer.rows) - len(shown)
        notes.append(f"{more} other candidate{'s' if more > 1 else ''} not shown "
                     "(--limit N per strategy, or --format json for all)")  # fmt: skip
    tables[-1].caption = escape("\n".join(notes)) or None
    return Group(*tables)


def _strategies(answer: Tco, gib: float | None, shown: list[dict[str, Any]], named: bool) -> Table:
    """The table of one memory size (`named`: its title says which, as there are several)."""
    need = answer.need
    table = Table(title=escape(title(answer, gib if named else None) + " (USD)"),
                  caption_justify="left")  # fmt: skip
    for column in ("strategy", "offer", "GPUs", "instances", "paid"):
        table.add_column(column, justify="right" if column == "instances" else "left")
    moved = ("transfer USD",) if need.data_tb is not None else ()  # --data-tb: its cost shown
    for column in (*moved, "total USD", "USD/GPU-h", "PFLOP/$", *headers(answer), "vs best"):
        table.add_column(column, justify="right")
    cheapest = shown[0]["total_usd"]
    for row in shown:
        transfer = [_money(row["transfer_usd"])] if moved else []
        table.add_row(
            escape(strategy(row)), escape(offer(row)), _gpus(row), str(row["instances"]),
            escape(_paid(row, need)), *transfer, f"{row['total_usd']:,.2f}",
            f"{row['usd_per_gpu_hour']:.4f}", _pflop(row["pflop_per_usd"]), *cells(row),
            distance(row["total_usd"], cheapest),
        )  # fmt: skip
    return table


def blends(answer: Tco) -> Group:
    """Per memory size and burst kind, the cheapest blended plan, against the best single
    strategy of that size."""
    groups = sizes(answer.blends)
    return Group(*(_blends(answer, gib, plans, len(groups) > 1) for gib, plans in groups))


def _blends(answer: Tco, gib: float | None, plans: list[dict[str, Any]], named: bool) -> Table:
    need = answer.need
    size = f" on {memory_words(gib)}" if named else ""
    table = Table(title=escape(f"Blended plans{size}: reserved baseline + the rest at "
                               f"{need.utilization:.0%} utilization (USD)"),
                  caption_justify="left")  # fmt: skip
    for column in ("plan", "reserved part", "burst part"):
        table.add_column(column)
    for column in ("total USD", "USD/GPU-h", "vs best"):
        table.add_column(column, justify="right")
    best_single = next(r for r in answer.rows if r["gpu_memory_gib"] == gib)
    cheapest = min(best_single["total_usd"], plans[0]["total_usd"])
    for plan in plans:
        burst = plan["burst_price_kind"]
        reserved = (f"{term_words(plan['reserved_term_months'])} x{plan['reserved_instances']}: "
                    f"{offer(plan, 'reserved_')} ({plan['reserved_usd']:,.2f})")  # fmt: skip
        table.add_row(
            escape(plan_name(plan)), escape(reserved),
            escape(f"{kind_label(burst)} x{plan['burst_instances']}: {offer(plan, 'burst_')} "
                   f"({plan['burst_usd']:,.2f})" if burst else "none (the baseline is the need)"),
            f"{plan['total_usd']:,.2f}", f"{plan['usd_per_gpu_hour']:.4f}",
            distance(plan["total_usd"], cheapest),
        )  # fmt: skip
    winner = plans[0]
    if winner["total_usd"] < best_single["total_usd"]:
        verdict = f"cheapest mix: {plan_name(winner)}"
    else:
        verdict = f"no blend beats {strategy(best_single)} alone ({offer(best_single)})"
    table.caption = escape(verdict)
    return table


def _paid(row: dict[str, Any], need: Need) -> str:
    """How the option is paid: per hour used, or whole terms (a term past the horizon said)."""
    if row["price_kind"] == "on_demand":
        return "per hour used"
    if row["price_kind"] == "spot":  # with the advisor, each offer has an overhead of its own
        return f"per hour used +{row['spot_overhead_pct']:g}%"
    option = " ".join(p.replace("_", "-") for p in (row["payment_option"], row["offering_class"])
                      if p and p != "standard")  # fmt: skip
    term = row["term_months"]
    if term > need.months:  # the option after a comma: 'unused all-upfront' misread
        paid = f"whole {term_words(term)}, {term - need.months:g} mo unused"
        return f"{paid}, {option}" if option else paid
    paid = f"{row['terms']} x {term_words(term)}"
    return f"{paid} {option}" if option else paid


def _gpus(row: dict[str, Any]) -> str:
    count = row["gpu_count"]
    shown = f"{count:g}" if count >= 1 else f"{count:.2f}"
    return f"{shown}x {row['gpu_model']} {row['gpu_memory_gib']:g}GB"


def _money(value: float | None) -> str:
    return "unknown" if value is None else f"{value:,.2f}"


def _pflop(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}"


def _notes(answer: Tco, shown: list[dict[str, Any]]) -> list[str]:
    need = answer.need
    basis = "current price" if need.spot_basis == "current" else (
        f"{need.spot_basis} price over {duration_words(need.spot_window_s)}")  # fmt: skip
    overhead = (f"its Spot Advisor band as interruption overhead ({need.spot_overhead_pct:g}% "
                "where none is known)" if need.spot_overhead_advisor
                else f"{need.spot_overhead_pct:g}% interruption overhead")  # fmt: skip
    notes = [f"spot: {basis} + {overhead}; "
             "reserved: whole terms, paid whatever the utilization"]  # fmt: skip
    if need.per_node > 1:
        notes.append(f"per node: only machines of at least {need.per_node} GPUs each")
    if need.migration_usd:
        away = f" away from {need.current_provider}" if need.current_provider else ""
        notes.append(f"migration: {need.migration_usd:,.2f} USD added once to every option{away}")
    for row in shown:
        if row["gpu_count"] < 1:
            notes.append(f"{row['instance_type']} is a {row['gpu_count']:.2f} share of one "
                         f"{row['gpu_model']}: {row['instances']} instances make "
                         f"{need.gpus} GPU{'s' if need.gpus != 1 else ''}")  # fmt: skip
    notes.extend(left_out_lines(answer))
    return notes
