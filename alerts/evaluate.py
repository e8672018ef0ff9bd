"""Evaluating the rules: measure every subject, fire on the crossing, re-arm when it clears.

The SQL is the store's (`storage.alerts.state`, over the measures of `storage.alerts.measures`);
here a rule is handed down as its plain values and what fired comes back with its rule, for the
messages to be written from.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

from alerts.rules import Filters, Rule
from storage.alerts import state as alert_state
from storage.alerts.measures import RuleQuery


@dataclass(frozen=True)
class Fired:
    """One subject whose rule fired now, with what the message needs."""

    rule: Rule
    row: dict[str, Any]  # the alert_obs columns, plus `alternatives`

    @property
    def subject(self) -> str:
        return str(self.row["subject"])


def evaluate(con: Any, rules: Sequence[Rule], now: datetime) -> list[Fired]:
    """Measure every rule, update the per-subject state and return what fired (in the caller's
    transaction; nothing is sent here)."""
    by_name = {r.name: r for r in rules}
    rows = alert_state.evaluate(con, [query(r) for r in rules], now)
    return [Fired(by_name[row["rule"]], row) for row in rows]


def query(rule: Rule) -> RuleQuery:
    """`rule` as the store measures it: its plain values."""
    spec = rule.spec
    filters = {f.name: getattr(rule.filters, f.name) for f in fields(Filters)}
    comparison: str = spec.comparison
    threshold = rule.threshold
    if rule.index is not None:  # the market index's own condition (alerts.market.rule)
        comparison, threshold = f"index_{rule.index.condition}", rule.index.value
        filters |= {"gpu_model": (rule.index.gpu,), "price_kind": (rule.index.price_kind,)}
    return RuleQuery(
        name=rule.name,
        kind=rule.kind,
        comparison=comparison,
        unit=spec.unit,
        price_kind=spec.price_kind,
        per=rule.per,
        currency=rule.currency,
        threshold=threshold,
        hysteresis=rule.hysteresis,
        window_s=rule.window_s,
        cooldown_s=rule.cooldown_s,
        direction=rule.direction,
        filters=filters,
        min_gpu_memory_gib=rule.min_gpu_memory_gib,
        segment=rule.index.segment if rule.index else None,
    )
