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

# The rate of an interval is the newest one dated on or before the interval's end (today for a
# current price), the date taken in UTC whatever the reader's time zone; when every rate is
# dated later, the oldest one. USD needs none; a currency with no rate gets NULL, never a guess.
# The rates are laid out as a small table with one row per currency and day (days since 1970)
# from the first rate of any currency to the last; an interval's day clamped into that span
# picks the same rate as the rule, so each interval finds its rate with one equality join on a
# table of a few thousand rows (two correlated lookups per row made a monthly aggregate over 25
# million intervals 2.1x the same query on a flat table). USD rows skip the multiplication; the
# others multiply exactly in 38 digits (in 18, any price above 9,223 USD an hour overflowed).
# pflop_per_usd: PFLOP of dense FP16 one US dollar buys (TFLOPS x 3,600 s / 1,000). The TFLOPS
# are the row of gpu_facts for the model's variant of the interval's per-GPU memory where the
# table gives that variant its own figures (H100 NVL, 94 GiB), else the board's row (the first
# rule of gpu_form_factors the type matches: once per provider and type, a correlated subquery),
# else the model's row, the lowest of its figures (docs/gpus.md, "Form factors").
#
# DERIVE is that computation, written once: the columns the view computes per interval, with
# the interval's row id. The writes store them in the interval's own columns (`derive`) and the
# view reads those with a plain scan; an interval not derived (`price_per_gpu_hour` NULL) is
# computed here at read time, so the values are the same either way. A closed interval's values
# never move (its rate is dated by its end). An open one's are today's, clamped to the newest
# rate: once today is on or after the newest rate's date they stay the newest rate's until the
# rates change, so it is stored only then (a rate dated in the future leaves it computed live).
# Replacing the [fx] rates or the GPU facts computes again the intervals they price
# (storage.fx), and a write computes again the intervals it closed (storage.merge).
DERIVE = """
WITH span AS (
    SELECT min(as_of) AS first_day, max(as_of) AS last_day
    FROM fx_rates WHERE currency <> 'USD'
), ranges AS (
    SELECT currency, usd_per_unit,
           CASE WHEN row_number() OVER w = 1 THEN DATE '0001-01-01' ELSE as_of END AS from_day,
           coalesce(lead(as_of) OVER w, DATE '9999-12-31') AS to_day
    FROM fx_rates WHERE currency <> 'USD'
    WINDOW w AS (PARTITION BY currency ORDER BY as_of)
), days AS (
    SELECT first_day + CAST(unnest(range(last_day - first_day + 1)) AS INTEGER) AS day FROM span
), daily AS (
    SELECT r.currency, d.day - DATE '1970-01-01' AS day, r.usd_per_unit
    FROM days d JOIN ranges r ON d.day >= r.from_day AND d.day < r.to_day
), bounds AS (
    SELECT first_day - DATE '1970-01-01' AS first_day, last_day - DATE '1970-01-01' AS last_day
    FROM span
), rated AS (
    SELECT p.*, p.rowid AS row_id,
           (SELECT arg_min(r.form_factor, r.position) FROM gpu_form_factors r
            WHERE coalesce(r.provider = p.provider, true)
              AND regexp_matches(p.instance_type, r.pattern)) AS form_factor,
           CASE WHEN p.currency = 'USD' THEN CAST(p.price_per_hour AS DOUBLE)
                ELSE CAST(CAST(p.price_per_hour AS DECIMAL(38, 6)) * d.usd_per_unit AS DOUBLE)
           END AS usd
    FROM price_intervals p
    CROSS JOIN bounds b
    LEFT JOIN daily d ON d.currency = p.currency AND d.day = least(greatest(
        epoch_us(coalesce(p.valid_to, now())) // 86400000000, b.first_day), b.last_day)
    WHERE {where}
), shown AS (
    SELECT r.*,
           CASE WHEN v.gpu_model IS NOT NULL THEN v.fp16_tflops
                WHEN f.gpu_model IS NOT NULL THEN f.fp16_tflops
                ELSE g.fp16_tflops END AS tflops,
           round(CAST(r.price_per_hour AS DOUBLE) / r.gpu_count, 6) AS per_gpu_hour,
           round(r.usd, 6) AS hour_usd,
           round(r.usd / r.gpu_count, 6) AS gpu_hour_usd
    FROM rated r
    LEFT JOIN gpu_facts g ON g.gpu_model = r.gpu_model AND g.gpu_memory_gib IS NULL
        AND g.form_factor IS NULL
    LEFT JOIN gpu_facts v ON v.gpu_model = r.gpu_model AND v.gpu_memory_gib = r.gpu_memory_gib
    LEFT JOIN gpu_facts f ON f.gpu_model = r.gpu_model AND f.form_factor = r.form_factor
)
SELECT * EXCLUDE (price_per_gpu_hour, price_per_hour_usd, price_per_gpu_hour_usd,
                  gpu_tflops_fp16, pflop_per_usd, tflops, usd, per_gpu_hour, hour_usd,
                  gpu_hour_usd, form_factor),
       per_gpu_hour AS price_per_gpu_hour, hour_usd AS price_per_hour_usd,
       gpu_hour_usd AS price_per_gpu_hour_usd, tflops AS gpu_tflops_fp16,
       tflops * gpu_count * 3.6 / hour_usd AS pflop_per_usd
FROM shown
"""

# The columns of `prices`, in their order: the computed ones as stored, or as DERIVE gives them.
_COLUMNS = """provider, region, zone, instance_type, price_kind, term_months, payment_option,
       offering_class, currency,
       CAST(price_per_hour AS DOUBLE) AS price_per_hour,
       CAST(upfront_total AS DOUBLE) AS upfront_total,
       price_per_gpu_hour, gpu_model, gpu_count, gpu_memory_gib, vcpus, memory_gib,
       valid_from, valid_to, last_seen, available,
       price_per_hour_usd, price_per_gpu_hour_usd, gpu_tflops_fp16, pflop_per_usd"""

PRICES = f"""
SELECT {_COLUMNS} FROM price_intervals WHERE price_per_gpu_hour IS NOT NULL
UNION ALL
SELECT {_COLUMNS} FROM ({DERIVE.format(where="p.price_per_gpu_hour IS NULL")})
"""

# Stores the computed columns of the intervals `DERIVE` selects; in the writer's transaction.
# (Only intervals not derived, said of the target too: its scan skips row groups with none.)
_STORE = """
UPDATE price_intervals AS t
SET price_per_gpu_hour = d.price_per_gpu_hour, price_per_hour_usd = d.price_per_hour_usd,
    price_per_gpu_hour_usd = d.price_per_gpu_hour_usd, gpu_tflops_fp16 = d.gpu_tflops_fp16,
    pflop_per_usd = d.pflop_per_usd
FROM ({derive}) AS d
WHERE t.rowid = d.row_id AND t.price_per_gpu_hour IS NULL
"""
# An open interval is stored only when today (UTC, as the view counts it) is on or after the
# newest rate's date: its rate is then the newest one for as long as the rates stand.
_STORABLE = """(p.valid_to IS NOT NULL
    OR coalesce(epoch_us(now()) // 86400000000 >= b.last_day, true))"""
_FORGET = """
UPDATE price_intervals AS p SET price_per_gpu_hour = NULL, price_per_hour_usd = NULL,
    price_per_gpu_hour_usd = NULL, gpu_tflops_fp16 = NULL, pflop_per_usd = NULL
WHERE p.price_per_gpu_hour IS NOT NULL AND ({target})
"""


def derive(con: Any, target: str = "true", params: dict[str, Any] | None = None) -> int:
    """Store the computed columns of the intervals not derived yet that `target` (SQL over the
    interval `p`) selects, where they can be (see DERIVE); the number of intervals stored."""
    where = f"p.price_per_gpu_hour IS NULL AND {_STORABLE} AND ({target})"
    sql = _STORE.format(derive=DERIVE.format(where=where))
    return int(con.execute(sql, _used(sql, params)).fetchall()[0][0])


def rederive(
    con: Any, forget: str, target: str | None = None, params: dict[str, Any] | None = None
) -> None:
    """Forget the stored columns of the intervals `forget` (SQL over `p`) selects, then derive
    those `target` selects (default: the same), in the caller's transaction."""
    sql = _FORGET.format(target=forget)
    con.execute(sql, _used(sql, params))
    derive(con, target or forget, params)


def _used(sql: str, params: dict[str, Any] | None) -> dict[str, Any]:
    """The parameters `sql` names (DuckDB refuses one it does not)."""
    return {name: value for name, value in (params or {}).items() if f"${name}" in sql}


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
