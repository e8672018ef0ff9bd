"""Evaluating alert rules in the store: measure every subject, fire on the crossing, re-arm when
it clears, record each subject's state (the `alert_state` table).

All inside the caller's transaction, set-based: one INSERT per rule fills `alert_obs` with
what each subject measures now; then one statement each picks what fires (the condition holds,
the subject is not already active, its cooldown is over), re-arms what a fresh reading shows
cleared (the condition no longer holds beyond the hysteresis) and records the new state.
What cannot be known now (a stale price, no FX rate, an offer sold out or withdrawn) leaves a
subject's state as it is: an offer whose capacity flickers never alerts twice for one crossing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from storage.alerts.measures import COLUMNS, OFFER_ID, RuleQuery, measure
from storage.reads import gpu_filter
from storage.reads.gpu_filter import GpuChoice

_OBS_TABLE = """
CREATE OR REPLACE TEMP TABLE alert_obs (
    rule VARCHAR, kind VARCHAR, subject VARCHAR, offer VARCHAR, known BOOLEAN, value DOUBLE,
    reference DOUBLE, provider VARCHAR, region VARCHAR, zone VARCHAR, instance_type VARCHAR,
    price_kind VARCHAR, term_months INTEGER, payment_option VARCHAR, offer_currency VARCHAR,
    gpu_model VARCHAR, gpu_count DOUBLE, price DOUBLE, price_currency VARCHAR,
    converted BOOLEAN, holds BOOLEAN, keeps BOOLEAN, threshold DOUBLE, per VARCHAR,
    cooldown_s INTEGER, refire_lower BOOLEAN
)
"""

# Comparisons in DECIMAL(18,6), the store's own precision: a price exactly at the threshold is
# "at or under" it, whatever binary neighbour a DOUBLE holds.
_D = "CAST({} AS DECIMAL(18, 6))"
_HOLDS: dict[str, tuple[str, str]] = {
    # comparison: (holds, keeps) where keeps widens holds by the hysteresis
    "below": (f"{_D.format('value')} <= $t", f"{_D.format('value')} <= $t + $h"),
    "above": (f"{_D.format('value')} >= $t", f"{_D.format('value')} >= $t - $h"),
    "change": (f"{_D.format('{m}')} >= $t", f"{_D.format('{m}')} >= $t - $h"),
    "low": ("new_low", "new_low"),
    "stale": ("overdue", "overdue"),
    # the market index (storage.alerts.index): its level, or the share it moved by
    "index_below": (f"{_D.format('value')} <= $t",) * 2,
    "index_above": (f"{_D.format('value')} >= $t",) * 2,
    "index_move": (f"{_D.format('abs(value)')} >= $t",) * 2,
}
_PARAM = re.compile(r"\$(\w+)")
_MAGNITUDE = {"any": "abs(value)", "down": "-value", "up": "value"}

_INSERT_OBS = f"""
INSERT INTO alert_obs BY NAME
SELECT $rule AS rule, $kind AS kind, {COLUMNS},
       CASE WHEN known THEN {{holds}} END AS holds, CASE WHEN known THEN {{keeps}} END AS keeps,
       {{threshold}} AS threshold, $per AS per, $cooldown AS cooldown_s, $refire AS refire_lower
FROM ({{measure}})
"""

# Fires: the condition holds and the subject is not active (a new_low also fires again below
# the low it last fired at), and the rule's cooldown since the last alert is over. A crossing
# inside the cooldown leaves the subject inactive, so it fires once the cooldown ends if the
# condition still holds then. One row per subject whatever the measure returned (a history
# with overlapping intervals): a second would break alert_state's key and with it every run.
_FIRED = """
CREATE OR REPLACE TEMP TABLE alert_fired AS
SELECT o.* FROM alert_obs o LEFT JOIN alert_state s USING (rule, subject)
WHERE o.holds
  AND (s.active IS NOT TRUE OR (o.refire_lower AND o.value < s.last_value))
  AND (s.last_fired_at IS NULL OR s.last_fired_at + to_seconds(o.cooldown_s) <= $now)
QUALIFY row_number() OVER (PARTITION BY o.rule, o.subject ORDER BY o.value, o.offer) = 1
"""

# Re-arms: a reading that no longer keeps the subject active (unknown ones keep it: NULL), and
# no reading that does. A subject with no reading at all (withdrawn, sold out) keeps its state.
_REARM = """
UPDATE alert_state s SET active = false
WHERE s.active AND list_contains($rules, s.rule)
  AND EXISTS (SELECT 1 FROM alert_obs o
              WHERE o.rule = s.rule AND o.subject = s.subject AND o.keeps IS FALSE)
  AND NOT EXISTS (SELECT 1 FROM alert_obs o
                  WHERE o.rule = s.rule AND o.subject = s.subject AND o.keeps IS NOT FALSE)
"""

_MARK_FIRED = """
UPDATE alert_state s
SET active = true, since = CASE WHEN s.active THEN s.since ELSE $now END,
    last_fired_at = $now, last_value = f.value
FROM alert_fired f WHERE s.rule = f.rule AND s.subject = f.subject
"""

_NEW_STATE = """
INSERT INTO alert_state
SELECT rule, subject, true, $now, $now, value FROM alert_fired ANTI JOIN alert_state
    USING (rule, subject)
"""

# The three cheapest other current offers of the same GPU model, price kind and term, priced
# like the alert: same unit, in its currency, or in USD through a known rate for a USD alert
# (then `converted_from` names the currency it was priced in). Fresh and not sold out: places a
# user can move to. A rule that asks for a memory variant ("A100 80GB") or a minimum memory per
# GPU is offered only offers it would itself watch (its `scope`): a 40 GB A100 is no place to
# move an 80 GB job to. Ranked once per group and scope (four: one may be the alert's own
# offer), not per alert.
_RANKED = f"""
    SELECT {{scope}} AS scope, m.price_currency, m.per, lp.gpu_model, lp.price_kind,
           lp.term_months, lp.provider, lp.region, lp.zone, lp.instance_type,
           {OFFER_ID.format(p="lp.")} AS offer,
           CASE WHEN lp.currency = m.price_currency THEN
                    CASE m.per WHEN 'instance' THEN lp.price_per_hour
                               ELSE lp.price_per_gpu_hour END
                WHEN m.price_currency = 'USD' THEN
                    CASE m.per WHEN 'instance' THEN lp.price_per_hour_usd
                               ELSE lp.price_per_gpu_hour_usd END
           END AS price,
           CASE WHEN lp.currency <> m.price_currency THEN lp.currency END AS converted_from
    FROM latest_prices lp JOIN modes m ON m.scope IS NOT DISTINCT FROM {{scope}}
    WHERE NOT lp.stale AND coalesce(lp.available, true) AND {{gpu}}
"""
_SCOPE = "CASE WHEN list_contains(CAST($scoped AS VARCHAR[]), {f}rule) THEN {f}rule END"
_FIRED_WITH_ALTERNATIVES = f"""
WITH modes AS (
    SELECT DISTINCT price_currency, per, {_SCOPE.format(f="")} AS scope FROM alert_fired
), ranked AS (
    {{ranked}}
), best AS (
    SELECT * FROM ranked WHERE price IS NOT NULL
    QUALIFY row_number() OVER (
        PARTITION BY scope, price_currency, per, gpu_model, price_kind, term_months
        ORDER BY price, provider, region, zone, instance_type) <= 4
), alternatives AS (
    SELECT f.rule, f.subject,
           list({{{{'provider': b.provider, 'region': b.region, 'zone': b.zone,
                  'instance_type': b.instance_type, 'price': b.price,
                  'converted_from': b.converted_from}}}}
                ORDER BY b.price, b.provider, b.region, b.zone, b.instance_type)[1:3]
               AS alternatives
    FROM alert_fired f JOIN best b
      ON (b.price_currency, b.per, b.gpu_model, b.price_kind)
       = (f.price_currency, f.per, f.gpu_model, f.price_kind)
     AND b.term_months IS NOT DISTINCT FROM f.term_months AND b.offer <> f.offer
     AND b.scope IS NOT DISTINCT FROM {_SCOPE.format(f="f.")}
    GROUP BY f.rule, f.subject
)
SELECT f.*, coalesce(a.alternatives, []) AS alternatives
FROM alert_fired f LEFT JOIN alternatives a USING (rule, subject)
ORDER BY f.rule, f.subject
"""


def evaluate(con: Any, rules: Sequence[RuleQuery], now: datetime) -> list[dict[str, Any]]:
    """Measure every rule, update the per-subject state and return what fired, by rule and
    subject: the `alert_obs` columns plus `alternatives` (in the caller's transaction; nothing
    is sent here)."""
    if not rules:
        return []
    con.execute(_OBS_TABLE)
    for rule in rules:
        con.execute(*_obs_statement(rule, now))
    con.execute(_FIRED, {"now": now})
    cursor = con.execute(*_alternatives_statement(rules))
    columns = [d[0] for d in cursor.description]
    rows = [dict(zip(columns, r, strict=True)) for r in cursor.fetchall()]
    con.execute(_REARM, {"rules": [r.name for r in rules]})
    con.execute(_MARK_FIRED, {"now": now})
    con.execute(_NEW_STATE, {"now": now})
    con.execute("DROP TABLE alert_fired")
    con.execute("DROP TABLE alert_obs")
    return rows


def _obs_statement(rule: RuleQuery, now: datetime) -> tuple[str, dict[str, Any]]:
    sql, params = measure(rule, now)
    comparison = rule.comparison
    holds, keeps = _HOLDS[comparison]
    if comparison == "change":
        holds = holds.format(m=_MAGNITUDE[rule.direction])
        keeps = keeps.format(m=_MAGNITUDE[rule.direction])
    # new_low's threshold is the low it undercut; stale_data's is its window in hours.
    threshold = {"low": "reference", "stale": f"{(rule.window_s or 0) / 3600}"}.get(
        comparison, "CAST($t AS DOUBLE)"
    )
    params.update(
        rule=rule.name,
        kind=rule.kind,
        per=rule.per,
        cooldown=rule.cooldown_s,
        refire=comparison == "low",
    )
    params.update(t=rule.threshold, h=rule.hysteresis)
    sql = _INSERT_OBS.format(holds=holds, keeps=keeps, threshold=threshold, measure=sql)
    # DuckDB refuses parameters a statement does not use.
    used = set(_PARAM.findall(sql))
    return sql, {k: v for k, v in params.items() if k in used}


def _alternatives_statement(rules: Sequence[RuleQuery]) -> tuple[str, dict[str, Any]]:
    """What fired with its alternatives: one ranking for the rules that watch a model whatever
    its memory, one more per rule narrowed to a memory variant or a minimum memory."""
    params: dict[str, Any] = {"scoped": []}
    parts = [_RANKED.format(scope="CAST(NULL AS VARCHAR)", gpu="true")]
    for i, rule in enumerate(rules):
        choices = [c for c in rule.filters.get("gpu_model", ()) if isinstance(c, GpuChoice)]
        if rule.min_gpu_memory_gib is None and all(c.memory_gib is None for c in choices):
            continue
        params["scoped"].append(rule.name)
        params[f"scope_{i}"] = rule.name
        gpu = (
            gpu_filter.clause(choices, params, f"s{i}")
            + " AND "
            + gpu_filter.at_least(rule.min_gpu_memory_gib, params, f"s{i}")
        )
        parts.append(_RANKED.format(scope=f"$scope_{i}", gpu=gpu))
    sql = _FIRED_WITH_ALTERNATIVES.format(ranked="\n    UNION ALL\n".join(parts))
    return sql, params
