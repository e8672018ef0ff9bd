"""The Decide panel's switching and blending answer: the line saying which of migration cost,
current provider and baseline the comparison applied, and the blended plans a baseline asks
for (docs/decide.md, "Blended plans"), in the words of the command's table
(`tracker.cli.screen.tco_table.blends`)."""

from __future__ import annotations

from typing import Any

from collectors.common import kind_label
from storage.reads.tco import Tco
from tracker.charts import labels
from tracker.questions import tco_words

_HEAD = ("plan", "reserved part", "burst part", "total USD", "USD/GPU-h", "vs best")


def applied(answer: Tco) -> str:
    """What of the switching options the answer applied, in words ('applied: migration cost
    5,000 USD (every option away from aws), current aws, baseline 4 of 8 GPUs reserved, the
    rest on-demand or spot'); nothing when none was asked for."""
    need = answer.need
    parts = []
    if need.migration_usd:
        away = f" away from {need.current_provider}" if need.current_provider else ""
        cost = f"{need.migration_usd:,.2f}".removesuffix(".00")
        parts.append(f"migration cost {cost} USD (every option{away})")
    if need.current_provider:
        parts.append(f"current {need.current_provider}")
    if answer.baseline:
        parts.append(
            f"baseline {answer.baseline} of {need.gpus} GPUs reserved, the rest on-demand or spot"
        )
    return ", ".join(parts)


def blended(answer: Tco) -> dict[str, Any] | None:
    """Per burst kind the cheapest blended plan (`head`, `rows`), and whether one beats the
    best single strategy (`verdict`); None without a baseline, and why none (`problem`) when
    none could be priced."""
    if not answer.baseline:
        return None
    if not answer.blends:
        return {"problem": tco_words.no_blend(answer)}
    best_single = answer.rows[0]
    cheapest = min(best_single["total_usd"], answer.blends[0]["total_usd"])
    rows = [
        (
            labels.plan_name(plan),
            _reserved_part(plan),
            _burst_part(plan),
            f"{plan['total_usd']:,.2f}",
            f"{plan['usd_per_gpu_hour']:.4f}",
            tco_words.distance(plan["total_usd"], cheapest),
        )
        for plan in answer.blends
    ]
    winner = answer.blends[0]
    if winner["total_usd"] < best_single["total_usd"]:
        verdict = f"cheapest mix: {labels.plan_name(winner)}"
    else:
        alone = f"{labels.strategy(best_single)} alone ({labels.offer(best_single)})"
        verdict = f"no blend beats {alone}"
    return {"problem": "", "head": _HEAD, "rows": rows, "verdict": verdict}


def _reserved_part(plan: dict[str, Any]) -> str:
    term = labels.term_words(plan["reserved_term_months"])
    total = plan["reserved_usd"]
    where = labels.offer(plan, "reserved_")
    return f"{term} x{plan['reserved_instances']}: {where} ({total:,.2f})"


def _burst_part(plan: dict[str, Any]) -> str:
    burst = plan["burst_price_kind"]
    if not burst:
        return "none (the baseline is the need)"
    total = plan["burst_usd"]
    where = labels.offer(plan, "burst_")
    return f"{kind_label(burst)} x{plan['burst_instances']}: {where} ({total:,.2f})"
