"""The computed columns of a price interval (its USD prices, per-GPU price, TFLOPS and PFLOP
per dollar), written once as SQL (`DERIVE`), and their storage in the interval's own columns:
the writes, the [fx] rates and the GPU facts keep them current (`derive`, `rederive`), and the
`prices` view (storage.views) computes at read time those not stored.
"""

from __future__ import annotations

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
