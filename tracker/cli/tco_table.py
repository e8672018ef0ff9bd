"""How `gpu-tracker tco` reads on screen: the best option per strategy with its distance to the
best, the blended plans, and plain words for what was left out and why."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.markup import escape
from rich.table import Table

from collectors.common import duration_words, kind_label
from storage.query import QueryResult
from storage.reads.tco import Need, Tco
from tracker.charts.labels import best_per_strategy, offer, plan_name, strategy, term_words, title

_MONEY_COLUMNS = ("total_usd", "usd_per_gpu_hour", "pflop_per_usd", "price_per_hour_usd")


def strategies(answer: Tco, per_strategy: int) -> Table:
    """The best option of each strategy (or the best few), with its distance to the best."""
    need = answer.need
    table = Table(title=escape(title(answer) + " (USD)"), caption_justify="left")
    for column in ("strategy", "offer", "GPUs", "instances", "paid"):
        table.add_column(column, justify="right" if column == "instances" else "left")
    for column in ("total USD", "USD/GPU-h", "PFLOP/$", "vs best"):
        table.add_column(column, justify="right")
    shown = best_per_strategy(answer, per_strategy)
    cheapest = answer.rows[0]["total_usd"]
    for row in shown:
        table.add_row(
            escape(strategy(row)), escape(offer(row)), _gpus(row), str(row["instances"]),
            escape(_paid(row, need)), f"{row['total_usd']:,.2f}",
            f"{row['usd_per_gpu_hour']:.4f}", _pflop(row["pflop_per_usd"]),
            distance(row["total_usd"], cheapest),
        )  # fmt: skip
    notes = _notes(answer, shown)
    if len(shown) < len(answer.rows):
        more = len(answer.rows) - len(shown)
        notes.append(f"{more} other candidate{'s' if more > 1 else ''} not shown "
                     "(--limit N per strategy, or --format json for all)")  # fmt: skip
    table.caption = escape("\n".join(notes)) or None
    return table


def blends(answer: Tco) -> Table:
    """Per burst kind, the cheapest blended plan, against the best single strategy."""
    need = answer.need
    table = Table(title=escape(f"Blended plans: reserved baseline + the rest at "
                               f"{need.utilization:.0%} utilization (USD)"),
                  caption_justify="left")  # fmt: skip
    for column in ("plan", "reserved part", "burst part"):
        table.add_column(column)
    for column in ("total USD", "USD/GPU-h", "vs best"):
        table.add_column(column, justify="right")
    cheapest = min(answer.rows[0]["total_usd"], answer.blends[0]["total_usd"])
    for plan in answer.blends:
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
    best_single = answer.rows[0]
    winner = answer.blends[0]
    if winner["total_usd"] < best_single["total_usd"]:
        verdict = f"cheapest mix: {plan_name(winner)}"
    else:
        verdict = f"no blend beats {strategy(best_single)} alone ({offer(best_single)})"
    table.caption = escape(verdict)
    return table


def distance(total: float, best: float) -> str:
    """How far a total is from the best one: in USD and in percent."""
    if total <= best:
        return "best"
    return f"+{total - best:,.0f} (+{100 * (total - best) / best:.0f}%)"


def no_candidate(answer: Tco) -> str:
    """Why nothing can serve the need, plainly."""
    need = answer.need
    filters = "".join(
        [f" with at least {need.memory_gib:g} GiB" if need.memory_gib else "",
         f" from {', '.join(need.providers)}" if need.providers else ""])  # fmt: skip
    if not answer.offers:
        return f"no candidate: no current offer of {need.gpu}{filters}"
    reasons = ", ".join(_reason(reason, n, need.gpu) for reason, n in answer.excluded.items())
    return f"no candidate: {reasons}"


def no_blend(answer: Tco) -> str:
    """Why no blended plan was priced although candidates were: no reserved offer, or nothing
    on-demand or spot for the GPUs beyond the baseline."""
    gpu = answer.rows[0]["gpu_model"]
    if not any(row["price_kind"] == "reserved" for row in answer.rows):
        return f"no blend: no reserved offer of {gpu} can hold the baseline"
    rest = answer.need.gpus - (answer.baseline or 0)
    return f"no blend: no on-demand or spot offer of {gpu} for the other {rest} GPUs"


def left_out_lines(answer: Tco) -> list[str]:
    if not answer.rows or not answer.excluded:
        return []
    gpu = answer.rows[0]["gpu_model"]
    reasons = ", ".join(_reason(r, n, gpu) for r, n in answer.excluded.items())
    return [f"left out: {reasons}"]


def as_result(rows: list[dict[str, Any]], columns: Sequence[str] = ()) -> QueryResult:
    """Dict rows as a result the CSV and JSON writers take (columns in the rows' order; with
    no rows, `columns`, so a CSV still has its header)."""
    columns = list(rows[0]) if rows else list(columns)
    types = ["DOUBLE" if c in _MONEY_COLUMNS else "VARCHAR" for c in columns]
    return QueryResult(columns, types, [tuple(r.values()) for r in rows])


def _reason(reason: str, n: int, gpu: str) -> str:
    offers = f"{n} offer{'s' if n != 1 else ''} of {gpu}"
    verb = "is" if n == 1 else "are"
    if reason.startswith("no USD rate for "):
        return f"{offers} {'has' if n == 1 else 'have'} {reason} (add it to [fx])"
    return f"{offers} {verb} {reason}"


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
        paid = f"whole {term_words(term)}, {term - need.months} mo unused"
        return f"{paid}, {option}" if option else paid
    paid = f"{row['terms']} x {term_words(term)}"
    return f"{paid} {option}" if option else paid


def _gpus(row: dict[str, Any]) -> str:
    count = row["gpu_count"]
    shown = f"{count:g}" if count >= 1 else f"{count:.2f}"
    return f"{shown}x {row['gpu_model']} {row['gpu_memory_gib']:g}GB"


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
