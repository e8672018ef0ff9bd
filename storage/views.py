"""The store's views, each defined once: the public SQL surface (docs/sql.md) over the internal
tables.

`migrate()` recreates them after the migrations whenever their definitions differ from the
ones the store was last given (a digest of this module's SQL is kept in `schema_views`), so an
upgraded store gets the new definitions and a fresh one the same. The tables change only
through migrations; a view changes here, and nowhere else.
"""

from __future__ import annotations

import hashlib
from typing import Any

from storage.reads.transfer import TRANSFER_PRICES
from storage.writes.derived import DERIVE, rederive

# The computed columns of each interval (storage.writes.derived): stored ones are read with a plain
# scan, the others computed here at read time, so the values are the same either way.
_COLUMNS = """provider, region, zone, instance_type, price_kind, term_months, payment_option,
       offering_class, currency, CAST(price_per_hour AS DOUBLE) AS price_per_hour,
       CAST(upfront_total AS DOUBLE) AS upfront_total,
       price_per_gpu_hour, gpu_model, gpu_count, gpu_memory_gib, vcpus, memory_gib,
       valid_from, valid_to, last_seen, available,
       price_per_hour_usd, price_per_gpu_hour_usd, gpu_tflops_fp16, pflop_per_usd"""

PRICES = f"""
SELECT {_COLUMNS} FROM price_intervals WHERE price_per_gpu_hour IS NOT NULL
UNION ALL
SELECT {_COLUMNS} FROM ({DERIVE.format(where="p.price_per_gpu_hour IS NULL")})
"""

# How old a confirmation may be, in seconds, before a price is stale: twice the provider's
# collection interval (`i.interval_seconds`, the one its runs were scheduled with; 1 h when none
# was recorded). Now and at a past moment alike.
_STALE_AFTER = "2 * coalesce(i.interval_seconds, 3600)"

# stale: the provider's last successful collection is older than twice its interval (the
# interval the last run was scheduled with), or that collection did not confirm this price (its
# region is no longer collected).
LATEST_PRICES = f"""
WITH last_ok AS (
    SELECT provider, max(finished_at) AS finished_at, max(observed_at) AS observed_at
    FROM runs WHERE status = 'ok' GROUP BY provider
), intervals AS (
    SELECT provider, arg_max(interval_seconds, run_id) AS interval_seconds
    FROM runs WHERE interval_seconds IS NOT NULL GROUP BY provider
)
SELECT p.*,
       coalesce(
           epoch(now()) - epoch(l.finished_at) > {_STALE_AFTER}
           OR p.last_seen < l.observed_at,
           true
       ) AS stale
FROM prices p
LEFT JOIN last_ok l USING (provider)
LEFT JOIN intervals i USING (provider)
WHERE p.valid_to IS NULL
"""

# The intervals of `prices` in force at a past moment (valid_from <= moment < valid_to), each
# with `stale` judged at that moment: its own last confirmation (`last_seen`) is more than
# twice the provider's interval in force then (the last run started by then that recorded one,
# else the latest run's) before the moment. The review's `then` side reads it, and the TCO
# priced as of a past moment (`storage.reads.tco`).
# It is not LATEST_PRICES's rule moved in time, and the two stay apart: now, the provider's
# last good collection is known, and a price it did not confirm is stale at once (its region is
# no longer collected). The history keeps only an interval's last confirmation, not which
# collections confirmed it, so at a past moment a price counts as confirmed when that is after
# the moment (the price held through it) or no more than two intervals before it.
_PRICES_AT = f"""
WITH intervals AS (
    SELECT provider, coalesce(
               arg_max(interval_seconds, run_id) FILTER (WHERE started_at <= {{moment}}),
               arg_max(interval_seconds, run_id)) AS interval_seconds
    FROM runs WHERE interval_seconds IS NOT NULL GROUP BY provider
)
SELECT p.*, NOT coalesce(
           epoch({{moment}}) - epoch(p.last_seen) <= {_STALE_AFTER}, false) AS stale
FROM prices p LEFT JOIN intervals i USING (provider)
WHERE p.valid_from <= {{moment}} AND (p.valid_to IS NULL OR p.valid_to > {{moment}})
"""


def prices_at(moment: str) -> str:
    """The SELECT of the prices in force at `moment` (a named parameter, "$then"), each with its
    `stale` flag judged then (see _PRICES_AT)."""
    return _PRICES_AT.format(moment=moment)


# Prices the store's validation skipped: how many, and why ("2 zero after rounding, 1 above
# the ceiling"), most frequent reason first.
COLLECTION_RUNS = """
SELECT run_id, provider, started_at, finished_at, status, records, changed, error,
       coalesce((SELECT CAST(sum(s.rows) AS INTEGER) FROM run_skips s
                 WHERE s.run_id = runs.run_id), 0) AS prices_skipped,
       (SELECT string_agg(s.rows || ' ' || s.reason, ', ' ORDER BY s.rows DESC, s.reason)
        FROM run_skips s WHERE s.run_id = runs.run_id) AS skip_reasons,
       raw
FROM runs
"""

# The [fx] rates as the store keeps them (a query months later shows the rate a price was
# converted at).
EXCHANGE_RATES = """
SELECT currency, as_of, CAST(usd_per_unit AS DOUBLE) AS usd_per_unit, source
FROM fx_rates
"""

# The Spot Advisor's interruption band per region and instance type (bounds as fractions).
SPOT_INTERRUPTION = """
SELECT provider, region, instance_type, band,
       CAST(band_low AS DOUBLE) AS band_low, CAST(band_high AS DOUBLE) AS band_high,
       savings_pct, as_of
FROM interruption_bands
"""

# How many offers a marketplace (Vast.ai) had per group its prices are stored by, over time.
MARKET_DEPTH = """
SELECT provider, region, instance_type, offers, valid_from, valid_to, last_seen
FROM market_depth_intervals
"""

ALERT_EVENTS = """
SELECT rule, subject, fired_at, value, threshold, channel, status, detail,
       event_id, attempts, next_attempt_at, last_error, sent_at
FROM alert_event_log
"""

# GCP's GPUs attached to N1 machines as earlier releases stored them, priced alone per GPU
# (migration 12): the history of a part of a machine, kept out of `prices` so that it is never
# ranked against machines. No host columns (there was no host), no FLOPs per dollar (a part's).
GCP_ATTACHED_GPUS = """
SELECT provider, region, zone, instance_type, price_kind, term_months, payment_option,
       offering_class, currency,
       CAST(price_per_hour AS DOUBLE) AS price_per_hour,
       CAST(upfront_total AS DOUBLE) AS upfront_total,
       round(CAST(price_per_hour AS DOUBLE) / gpu_count, 6) AS price_per_gpu_hour,
       gpu_model, gpu_count, gpu_memory_gib, valid_from, valid_to, last_seen, available
FROM gcp_attached_gpu_intervals
"""

# In dependency order: a view is created after the views it reads (a view's `*` is fixed when
# it is created, so `latest_prices` must follow every change of `prices`).
VIEWS: tuple[tuple[str, str], ...] = (
    ("prices", PRICES),
    ("latest_prices", LATEST_PRICES),
    ("collection_runs", COLLECTION_RUNS),
    ("exchange_rates", EXCHANGE_RATES),
    ("alert_events", ALERT_EVENTS),
    ("spot_interruption", SPOT_INTERRUPTION),
    ("market_depth", MARKET_DEPTH),
    ("gcp_attached_gpus", GCP_ATTACHED_GPUS),
    ("transfer_prices", TRANSFER_PRICES),
)
DIGEST = hashlib.sha256(repr(VIEWS).encode()).hexdigest()

_BOOKKEEPING = (
    "CREATE TABLE IF NOT EXISTS schema_views ("
    " digest VARCHAR NOT NULL, applied_at TIMESTAMPTZ NOT NULL)"
)


def stored_digest(con: Any) -> str | None:
    """The digest of the view set the store was last given (None: never, an older store)."""
    con.execute(_BOOKKEEPING)
    rows = con.execute("SELECT digest FROM schema_views").fetchall()
    return str(rows[0][0]) if rows else None


def create_views(con: Any, *, rederived: bool = True) -> None:
    """(Re)create every view and record their digest, inside the caller's transaction
    (`rederived=False`: a store with no interval yet, nothing to compute again)."""
    for name, select in VIEWS:
        con.execute(f"CREATE OR REPLACE VIEW {name} AS {select}")
    if rederived:
        # The stored columns were computed by the definitions the store had: compute them again.
        rederive(con, "true")
    con.execute(_BOOKKEEPING)
    con.execute("DELETE FROM schema_views")
    con.execute("INSERT INTO schema_views VALUES (?, now())", [DIGEST])
