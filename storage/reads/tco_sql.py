"""The statements of the TCO formula (`storage.reads.tco`, whose docstring states the formulas),
as templates that module fills in: the offers a need matches, why some are left out, the
candidates' totals and the blended plans.
"""

from __future__ import annotations

from storage.views import prices_at

# Equal totals are listed in a fixed order, so the same store always gives the same answer.
TIES = """provider, region, zone NULLS FIRST, instance_type, price_kind, term_months,
    payment_option NULLS FIRST, offering_class NULLS FIRST"""

NOW = "SELECT * FROM latest_prices"
# The intervals in force at as_of, staleness judged then, as storage.review's `then` side.
AS_OF = prices_at("$as_of")

# The columns the formulas and the answer use. Only these are read: each column of the history
# costs its blocks in memory, and `SELECT *` held twice the hand-written query's peak at 25M rows
# (docs/performance.md).
COLUMNS = """provider, region, zone, instance_type, price_kind, term_months, payment_option,
    offering_class, gpu_model, gpu_count, gpu_memory_gib, currency, price_per_hour_usd,
    gpu_tflops_fp16, available, stale"""

# The offers of the GPU models asked for ({models}: lower($model_0), ...; a list of constants,
# which DuckDB filters the views' scans with, where a join with a list would read every row).
MATCHING = f"""
matching AS (
    SELECT {COLUMNS} FROM ({{source}})
    WHERE lower(gpu_model) IN ({{models}})
      AND ($variant IS NULL OR gpu_memory_gib = $variant)
      AND ($memory IS NULL OR gpu_memory_gib >= $memory)
      AND (len($providers) = 0 OR list_contains($providers, provider))
)"""

# The share of spot hours redone, in percent, from the offer's current Spot Advisor band.
ADVISOR_OVERHEAD = """coalesce((SELECT 100 * i.band_high FROM spot_interruption i
    WHERE i.provider = c.provider AND i.region = c.region
      AND i.instance_type = c.instance_type), $overhead)"""

# The matching rows, read once per answer into a temporary table of this name;
# each named by the model asked for that it answers, in `asked_gpu` (an offer of "A100" answers
# "a100" too, when both are asked).
MATCHED = "tco_matching_offers"
REUSED = f"""matching AS (
    SELECT m.*, a.asked_gpu FROM {MATCHED} m
    JOIN (SELECT unnest($models) AS asked_gpu) a ON lower(m.gpu_model) = lower(a.asked_gpu)
)"""

# Why an offer of the GPU is not a candidate: the first reason that applies.
EXCLUDED = """
WITH {matching}
SELECT asked_gpu, CASE WHEN stale THEN 'stale'
            WHEN NOT coalesce(available, true) THEN 'sold out'
            WHEN price_per_hour_usd IS NULL THEN 'no USD rate for ' || currency
            WHEN $per_node > 1 AND NOT coalesce(gpu_count >= $per_node, false)
                THEN 'fewer than ' || $per_node || ' GPUs per machine'
       END AS reason, count(*) AS offers
FROM matching GROUP BY ALL ORDER BY reason NULLS FIRST
"""

# One row per candidate and GPU count asked for ($counts: N, and for a blend B and N - B).
PRICED = """
{spot_stats}{matching}, candidates AS (
    SELECT * FROM matching
    WHERE NOT stale AND coalesce(available, true) AND price_per_hour_usd IS NOT NULL
      AND ($per_node <= 1 OR gpu_count >= $per_node)
      AND (price_kind <> 'reserved' OR term_months > 0)
), basis AS (
    SELECT c.*, {spot_price} AS basis_usd, {overhead} AS overhead_pct
    FROM candidates c {spot_join}
), priced AS (
    SELECT b.*, n.gpus,
           CAST(ceil(round(n.gpus / gpu_count, 6)) AS BIGINT) AS instances,
           {hours_per_month} * $months AS hours,
           CASE WHEN price_kind = 'reserved'
                THEN CAST(ceil($months / term_months) AS BIGINT) END AS terms,
           CASE WHEN $current IS NULL OR provider <> $current
                THEN $migration ELSE 0 END AS migration_usd,
           CASE WHEN $current IS NOT NULL AND provider <> $current
                THEN $transfer ELSE 0 END AS transfer_usd
    FROM basis b, (SELECT unnest($counts) AS gpus) n
), totals AS (
    SELECT *, migration_usd + coalesce(transfer_usd, 0) AS moving_usd, CASE price_kind
        WHEN 'on_demand' THEN instances * basis_usd * hours * $utilization
        WHEN 'spot' THEN instances * basis_usd * hours * $utilization * (1 + overhead_pct / 100)
        WHEN 'reserved' THEN instances * terms * basis_usd * {hours_per_month} * term_months
    END AS rent_usd
    FROM priced
)"""

CANDIDATES = """
WITH {priced}
SELECT asked_gpu, {key}, gpu_model, gpu_count, gpu_memory_gib, currency, instances, hours,
       round(rent_usd + moving_usd, 2) AS total_usd,
       round((rent_usd + moving_usd) / (gpus * hours * $utilization), 6) AS usd_per_gpu_hour,
       round({tflops} * gpus * hours * $utilization * 3.6 / (rent_usd + moving_usd), 6)
           AS pflop_per_usd,
       round(basis_usd, 6) AS price_per_hour_usd, terms, migration_usd,
       CASE WHEN price_kind = 'spot' THEN round(overhead_pct, 6) END AS spot_overhead_pct,
       transfer_usd
FROM totals WHERE gpus = $gpus
ORDER BY rent_usd + moving_usd, {ties}
"""

# Per burst kind and memory size, the cheapest (reserved for B, burst for N - B) pair of that
# size (one job runs on one memory variant); with N - B = 0 the plan is the reserved part alone.
# Migration: once per provider of the plan that is not current.
BLENDS = """
WITH {priced}, reserved AS (
    SELECT * FROM totals WHERE price_kind = 'reserved' AND gpus = $baseline
), burst AS (
    SELECT * FROM totals WHERE price_kind IN ('on_demand', 'spot') AND gpus = $gpus - $baseline
), plans AS (
    SELECT r.asked_gpu, b.price_kind AS burst_kind, r.gpu_memory_gib, r.{r_key},
           r.gpus AS reserved_gpus,
           r.instances AS reserved_instances,
           r.terms, round(r.rent_usd, 2) AS reserved_usd,
           b.{b_key}, coalesce(b.gpus, 0) AS burst_gpus, b.instances AS burst_instances,
           round(b.rent_usd, 2) AS burst_usd,
           (CASE WHEN $current IS NULL OR r.provider <> $current THEN $migration ELSE 0 END)
           + (CASE WHEN b.provider <> r.provider AND ($current IS NULL OR b.provider <> $current)
                   THEN $migration ELSE 0 END) AS plan_migration,
           -- the data moves once, whichever part of the plan leaves the current provider
           CASE WHEN $current IS NOT NULL
                     AND (r.provider <> $current OR coalesce(b.provider <> $current, false))
                THEN $transfer ELSE 0 END AS plan_transfer,
           coalesce(r.rent_usd + b.rent_usd, r.rent_usd) + plan_migration
               + coalesce(plan_transfer, 0) AS total
    FROM reserved r LEFT JOIN burst b ON b.asked_gpu = r.asked_gpu
        AND b.gpu_memory_gib IS NOT DISTINCT FROM r.gpu_memory_gib
    WHERE (b.provider IS NULL) = ($gpus = $baseline)
)
SELECT * EXCLUDE (total, plan_migration, plan_transfer), plan_migration AS migration_usd,
       plan_transfer AS transfer_usd,
       round(total, 2) AS total_usd,
       round(total / ($gpus * {hours_per_month} * $months * $utilization), 6)
           AS usd_per_gpu_hour
FROM plans
QUALIFY row_number() OVER (PARTITION BY asked_gpu, burst_kind, gpu_memory_gib
                           ORDER BY total, reserved_provider, reserved_instance_type,
                                    burst_provider, burst_instance_type) = 1
ORDER BY total
"""
