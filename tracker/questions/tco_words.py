"""The `tco` answer in plain words and rows, shared by the command's tables and the web
dashboard's panel: the distance to the best, why nothing or no blend was priced, what was left
out, and the rows as a result the CSV and JSON writers take."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from storage.query import QueryResult

if TYPE_CHECKING:
    from storage.reads.tco import Tco

_MONEY_COLUMNS = ("total_usd", "usd_per_gpu_hour", "pflop_per_usd", "price_per_hour_usd")


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
    if reason.startswith("fewer than "):  # --per-node: "... have fewer than 8 GPUs per machine"
        return f"{offers} {'has' if n == 1 else 'have'} {reason}"
    if reason.startswith("no USD rate for "):
        return f"{offers} {'has' if n == 1 else 'have'} {reason} (add it to [fx])"
    return f"{offers} {verb} {reason}"
