"""The review's largest like-for-like moves in words (the digest's `moves`, built by
`tracker.review.moves`): a heading saying what a move is, then per GPU model and memory size
one line per move, falls first, for the plain text, the HTML part, Slack and the CLI table."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from alerts.message import amount
from collectors.common import kind_label

TITLE = "largest moves"
COLUMNS = ("GPU", "kind", "offer", "then", "now", "move", "USD/GPU-h now")
Describe = Callable[[dict[str, Any] | None], str]


def intro(facts: dict[str, Any]) -> list[str]:
    """What the moves are (none for a review without any, or one stored before them)."""
    if not facts.get("moves"):
        return []
    return [
        "Largest like-for-like moves: one offer's own price then against its price now (the "
        "same provider, region, instance type, kind and term), per instance-hour in its own "
        "currency; per GPU model, memory size and price kind the 3 largest falls and rises. "
        "USD/GPU-h: what it costs now, at the [fx] rate where converted."
    ]


def rows(facts: dict[str, Any], describe: Describe) -> list[tuple[str, ...]]:
    """One row per move: GPU (with its memory), kind, the offer, then, now, move, USD now."""
    found: list[tuple[str, ...]] = []
    for move in facts.get("moves") or []:  # absent from reviews stored before them
        offer = describe(move | {"price": move["to_price"], "currency": "USD"})
        if move.get("places", 1) > 1:
            offer += f" (and {move['places'] - 1} more places alike)"
        found.append(
            (
                gpu_words(move),
                kind_label(move["price_kind"]),
                offer,
                f"{amount(move['from_price'])} {move['currency']}",
                f"{amount(move['to_price'])} {move['currency']}",
                f"{move['change_pct'] + 0.0:+.1f}%",
                "—" if move["usd_per_gpu_hour"] is None else amount(move["usd_per_gpu_hour"]),
            )
        )
    return found


def block(facts: dict[str, Any], describe: Describe) -> list[str]:
    """The moves as aligned lines of plain text (none when there are none)."""
    found = rows(facts, describe)
    if not found:
        return []
    head = [(TITLE, *COLUMNS[1:]), *found]
    widths = [max(len(r[i]) for r in head) for i in range(len(COLUMNS))]
    right = {3, 4, 5, 6}
    return [
        *intro(facts),
        "",
        *(
            "  ".join(c.rjust(widths[i]) if i in right else c.ljust(widths[i])
                      for i, c in enumerate(r)).rstrip()
            for r in head
        ),
    ]  # fmt: skip


def gpu_words(move: dict[str, Any]) -> str:
    """`H100 80GB`, or the model alone where the memory is unknown."""
    memory = move.get("gpu_memory_gib")
    return str(move["gpu_model"]) + ("" if memory is None else f" {memory:g}GB")
