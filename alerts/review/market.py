"""The review's opening lines: how the market index moved over the period, per followed GPU,
price kind and segment, before the offers' own moves (docs/alerts.md, "The review"). A review
recorded before the index existed has no `market` key: nothing is shown for it."""

from __future__ import annotations

from typing import Any

from alerts.message import amount
from collectors.common import kind_label

TITLE = (
    "How the market moved: the market index (the median over providers of each one's median "
    "price per GPU-hour, USD), on the period's first day and now"
)


def rows(facts: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """Per GPU, kind and segment: the label, then, now and the move."""
    found = []
    for m in facts.get("market") or ():
        memory = m["gpu_memory_gib"]
        gpu = m["gpu_model"] if memory is None else f"{m['gpu_model']} {memory:g}GB"
        label = f"{gpu} {kind_label(m['kind'])} ({m['segment']})"
        move = "—" if m["move_pct"] is None else f"{m['move_pct']:+.1f}%"
        found.append((label, _value(m, "then"), _value(m, "now"), move))
    return found


def lines(facts: dict[str, Any]) -> list[str]:
    """The opening as aligned lines (none for a review without the index)."""
    found = rows(facts)
    if not found:
        return []
    head = [("market index", "then", "now", "move"), *found]
    widths = [max(len(r[i]) for r in head) for i in range(4)]
    table = [
        f"{r[0]:<{widths[0]}}  "
        + "  ".join(f"{c:>{w}}" for c, w in zip(r[1:], widths[1:], strict=True))
        for r in head
    ]
    return [TITLE + ".", *table]


def _value(move: dict[str, Any], side: str) -> str:
    value = move[side]
    if value is None:
        return "—"
    return f"{amount(value)} ({move[f'providers_{side}']})"
