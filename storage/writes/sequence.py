"""The long way of the change-only merge (`storage.merge`): the offers that changed, or that
bring several points of their own history (AWS and Alibaba spot), put in sequence by window
functions, their open intervals extended or closed and the new ones opened. The merge sends only
those offers this way; the rest take its fast path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from storage.connection import scalar

# What a change is: the price, the upfront part, or the provider's word on capacity (as the
# merge's paths compare them).
_STATE = "(price_per_hour, upfront_total, available)"

_META = """provider, region, zone, instance_type, price_kind, term_months, payment_option,
    offering_class, currency, gpu_model, gpu_count, gpu_memory_gib, vcpus, memory_gib"""

# An interval opened: its offer and price from the point `i`, the rest from its row of the
# batch (`picked`: the batch's rows taken by number in Arrow, so a few intervals opened do not
# cost a scan of the whole batch).
OPENED = f"""i.offer_key, {", ".join(f"b.{c.strip()}" for c in _META.split(","))},
    i.price_per_hour, i.upfront_total, i.available, $observed AS last_seen, $run_id AS run_id"""

# The points of the offers that take the long way.
_STAGE_CHANGING = """
CREATE TEMP TABLE changing AS
SELECT * FROM incoming i SEMI JOIN paths s ON i.offer_key = s.offer_key AND s.path = 'sequence'
"""

# The sequence of prices per offer: the open interval first, then incoming points after it.
# Points at or before the open interval's start are history already recorded, except when the
# newest of them contradicts the open price: then the change is dated to this observation.
# Consecutive equal prices collapse; each kept point ends where the next one starts.
_STAGE_SEQUENCE = f"""
CREATE TEMP TABLE sequence AS
WITH points AS (
    SELECT offer_key, price_per_hour, upfront_total, available, valid_from AS ts, true AS existing,
           row AS interval_row, NULL AS point_row
    FROM open_now SEMI JOIN changing USING (offer_key)
    UNION ALL
    SELECT i.offer_key, i.price_per_hour, i.upfront_total, i.available, i.ts, false, NULL, i.row
    FROM changing i LEFT JOIN open_now o USING (offer_key)
    WHERE o.valid_from IS NULL OR i.ts > o.valid_from
    UNION ALL
    SELECT l.offer_key, l.price_per_hour, l.upfront_total, l.available, $observed, false, NULL,
           l.row
    FROM (SELECT DISTINCT ON (offer_key) * FROM changing SEMI JOIN open_now USING (offer_key)
          ORDER BY offer_key, ts DESC) l
    JOIN open_now o USING (offer_key)
    WHERE l.ts <= o.valid_from
      AND (l.price_per_hour, l.upfront_total, l.available)
          IS DISTINCT FROM (o.price_per_hour, o.upfront_total, o.available)
      AND NOT EXISTS (
          SELECT 1 FROM changing n WHERE n.offer_key = l.offer_key AND n.ts > o.valid_from)
), marked AS (
    SELECT *, existing OR {_STATE} IS DISTINCT FROM lag({_STATE}) OVER (
        PARTITION BY offer_key ORDER BY ts, existing DESC
    ) AS keep
    FROM points
)
SELECT * EXCLUDE (keep),
       lead(ts) OVER (PARTITION BY offer_key ORDER BY ts, existing DESC) AS next_ts
FROM marked WHERE keep
"""

_EXTEND_OR_CLOSE = """
UPDATE price_intervals AS p
SET valid_to = s.next_ts,
    last_seen = CASE WHEN s.next_ts IS NULL THEN $observed ELSE p.last_seen END
FROM sequence s
WHERE s.existing AND p.rowid = s.interval_row
"""

_INSERT_NEW = f"""
INSERT INTO price_intervals BY NAME
SELECT {OPENED}, i.ts AS valid_from, i.next_ts AS valid_to
FROM sequence i JOIN picked b ON b.row = i.point_row
WHERE NOT i.existing
"""

_SEQUENCED_ROWS = "SELECT point_row FROM sequence WHERE NOT existing"


def sequence_the_rest(
    con: Any, observed: dict[str, Any], run_id: int, pick: Callable[[str], None]
) -> int:
    """Put the offers that changed or brought several points in sequence, in the merge's
    transaction; intervals opened. `pick(rows_sql)` registers the batch's rows as `picked`."""
    con.execute(_STAGE_CHANGING)
    if not scalar(con, "SELECT count(*) FROM changing"):
        return 0
    con.execute(_STAGE_SEQUENCE, observed)
    con.execute(_EXTEND_OR_CLOSE, observed)
    pick(_SEQUENCED_ROWS)
    return int(scalar(con, _INSERT_NEW, {**observed, "run_id": run_id}))
