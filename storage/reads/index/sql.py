"""The market index's statements (docs/decide.md, "Market index"), as templates that
`storage.reads.index.read` fills in: `{where}` the offer filters, `{segments}` the segments kept.

Days are whole UTC days counted from 1970-01-01 (an integer, so a reader's time zone never
moves a day's edge). An interval holds at the end of a past day D when it starts before D + 1
(00:00 UTC) and ends at or after it: that is every D from its start's day to the day before its
end's day, so each interval is spread over its days with one `range` rather than joined to a
calendar. Today counts the intervals holding at the command's `$i_now` instead.
"""

from __future__ import annotations

# Providers by segment; the rest are neoclouds (docs/decide.md lists them).
HYPERSCALERS = ("aws", "gcp", "azure", "oci", "tencent", "alibaba")
SEGMENTS = ("all", "hyperscaler", "neocloud", "marketplace")
KINDS = ("on_demand", "spot")

SEGMENT = f"""CASE WHEN provider IN ({", ".join(f"'{p}'" for p in HYPERSCALERS)}) THEN 'hyperscaler'
     WHEN provider = 'vastai' OR (provider = 'runpod' AND instance_type LIKE 'community/%')
          THEN 'marketplace'
     ELSE 'neocloud' END"""

_DAY_US = 86_400_000_000

# The offers counted on each day of [$i_first, $i_last], with their segments (`all` and their
# own), `{offer}` the extra columns a caller wants of each.
HELD = f"""
WITH held AS (
    SELECT provider, gpu_model, gpu_memory_gib, price_kind, {SEGMENT} AS segment,
           price_per_gpu_hour_usd AS usd, valid_from, valid_to{{offer}},
           epoch_us(valid_from) // {_DAY_US} AS first_day,
           coalesce(epoch_us(valid_to) // {_DAY_US} - 1, $i_today - 1) AS last_day
    FROM prices
    WHERE price_kind IN ('on_demand', 'spot') AND coalesce(available, true)
      AND gpu_model IS NOT NULL AND price_per_gpu_hour_usd IS NOT NULL
      AND valid_from <= $i_upper AND (valid_to IS NULL OR valid_to >= $i_lower)
      AND {{where}}
), daily AS (
    SELECT unnest(range(greatest(first_day, $i_first),
                        least(last_day, $i_today - 1, $i_last) + 1)) AS day, *
    FROM held
    UNION ALL
    SELECT $i_today AS day, * FROM held
    WHERE $i_today BETWEEN $i_first AND $i_last
      AND valid_from <= $i_now AND (valid_to IS NULL OR valid_to > $i_now)
), counted AS (
    SELECT * EXCLUDE (segment), unnest(['all', segment]) AS segment FROM daily
)
"""

# Per day, model and memory, kind and segment: each provider's lower median, then the lower
# median over providers, their count, and the distribution-free 95% interval for the median:
# with n values sorted, the k-th and (n-k+1)-th, k the largest with P(Binomial(n, 1/2) < k)
# <= 0.025, i.e. the number of j in 0..n whose P(X <= j) is at most 0.025 (none below n = 6).
# The binomial terms are exact enough through lgamma: every P(X <= j) is a multiple of 2^-n,
# never within rounding of 0.025.
INDEX = (
    HELD
    + """, per_provider AS (
    SELECT day, gpu_model, gpu_memory_gib, price_kind, segment, provider,
           quantile_disc(usd, 0.5) AS usd
    FROM counted WHERE {segments} GROUP BY ALL
), indexed AS (
    SELECT day, gpu_model, gpu_memory_gib, price_kind, segment,
           count(*) AS n, list(usd ORDER BY usd) AS v
    FROM per_provider GROUP BY ALL
), terms AS (
    SELECT n, sum(exp(lgamma(n + 1) - lgamma(j + 1) - lgamma(n - j + 1) - n * ln(2)))
                  OVER (PARTITION BY n ORDER BY j) AS below
    FROM (SELECT DISTINCT n FROM indexed) ns, range(0, ns.n + 1) r(j)
), ranks AS (
    SELECT n, count(*) FILTER (WHERE below <= 0.025) AS k FROM terms GROUP BY n
)
SELECT DATE '1970-01-01' + CAST(day AS INTEGER) AS date, gpu_model, gpu_memory_gib,
       price_kind AS kind, segment, v[(n + 1) // 2] AS index_usd_per_gpu_hour,
       n AS providers,
       CASE WHEN k >= 1 THEN v[k] END AS ci_low,
       CASE WHEN k >= 1 THEN v[n - k + 1] END AS ci_high,
       n < 3 AS low_confidence
FROM indexed JOIN ranks USING (n)
ORDER BY gpu_model, gpu_memory_gib NULLS FIRST, kind, segment, date
"""
)

# The offers behind one day's values: each with its provider's median (what the index took).
BEHIND = (
    HELD
    + """
SELECT DATE '1970-01-01' + CAST(day AS INTEGER) AS date, segment, gpu_model, gpu_memory_gib,
       price_kind AS kind, provider,
       quantile_disc(usd, 0.5) OVER (PARTITION BY day, segment, gpu_model, gpu_memory_gib,
                                     price_kind, provider) AS provider_median,
       region, zone, instance_type, currency, price_per_gpu_hour, usd AS price_per_gpu_hour_usd
FROM counted WHERE {segments}
ORDER BY date, gpu_model, gpu_memory_gib NULLS FIRST, kind, segment, provider_median, provider, usd,
         region, zone, instance_type
"""
)
BEHIND_COLUMNS = ", region, zone, instance_type, currency, price_per_gpu_hour"
