"""The statements of the price series' statistics (`storage.reads.series`, whose docstring
states their semantics), as templates that module fills in: `{key}` the series' key columns,
`{where}` the filters, `{price}` and `{currency}` the prices compared (`{usd}`: the same price in
USD, for `mean_usd`), `{below}` the share of time below a price; their parameters are named
`$s_...`.
"""

from __future__ import annotations

# The intervals STATISTICS, WINDOW and WINDOW_ROWS read (as `{overlaps}`): those that overlap
# the window, and the open ones. The second condition follows from the first; alone on one
# column, it reaches the scan, which then skips the row groups of intervals that ended before
# the window (all but the last few, once the history is compacted: `storage.writes.compact`).
_OVERLAPS = """((valid_from < $s_until AND valid_to > $s_since) OR valid_to IS NULL)
      AND (valid_to > $s_since OR valid_to IS NULL)"""

# One scan of the intervals that overlap the window (plus open ones, for `current`). The figures
# that need no order are summed per series; the quantiles walk each series' distinct prices in
# order, summing the time held at or below. The walk carries only a 64-bit hash of the series'
# key, its prices and their hours (carrying the nine key columns through the sort took twice
# the time and five times the memory); the two halves meet on the hash, and should two series
# ever share one, the hours would not add up and the query fails rather than mix them.
STATISTICS = """
WITH clipped AS (
    SELECT {key}, {currency} AS currency, {price} AS price, {usd} AS usd,
           valid_from, valid_to,
           greatest(epoch_us(least(coalesce(valid_to, $s_until), $s_until))
                    - epoch_us(greatest(valid_from, $s_since)), 0) AS us
    FROM {source}
    WHERE {where} AND {price} IS NOT NULL
      AND {overlaps}
), hashed AS (
    SELECT *, hash({key}, currency) AS series FROM clipped
), stats AS (
    SELECT {key}, currency, any_value(series) AS series,
           sum(us) AS us,
           min(price) FILTER (WHERE us > 0) AS min,
           max(price) FILTER (WHERE us > 0) AS max,
           sum(price * us) AS price_us,
           count(*) FILTER (WHERE valid_from > $s_since AND valid_from < $s_until) AS changes,
           any_value(price) FILTER (WHERE valid_to IS NULL) AS current,
           {below} AS below_share,
           CASE WHEN count(*) FILTER (WHERE us > 0 AND usd IS NULL) = 0
                THEN sum(usd * us) END AS usd_us
    FROM hashed GROUP BY ALL HAVING sum(us) > 0
), walked AS (
    SELECT series, price,
           sum(us) OVER (PARTITION BY series ORDER BY price
                         ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS upto,
           sum(us) OVER (PARTITION BY series) AS total
    FROM (SELECT series, price, sum(us) AS us FROM hashed WHERE us > 0 GROUP BY ALL)
), quantiles AS (
    SELECT series, max(total) AS total,
           min(price) FILTER (WHERE 2 * upto >= total) AS p50,
           min(price) FILTER (WHERE 20 * upto >= 19 * total) AS p95
    FROM walked GROUP BY series
)
SELECT {key}, currency,
       round(s.us / {us_per_hour}, 6) AS covered_hours,
       min, max, round(price_us / s.us, 6) AS mean, p50, p95, changes, current, below_share,
       round(usd_us / s.us, 6) AS mean_usd
FROM stats s JOIN quantiles q USING (series)
WHERE q.total = s.us OR error('two price series share a hash; report this, please')
"""

# The intervals STATISTICS would read, with the columns it and INTERVALS use, kept in a temporary
# table of the reader's connection: the dashboard's History reads the statistics, then the steps
# of the series it draws, from one scan of the history instead of two ({source} = the table).
WINDOW = """
CREATE TEMP TABLE {table} AS
SELECT {columns} FROM prices
WHERE {where} AND {price} IS NOT NULL
  AND {overlaps}
"""

# The share of covered time priced below `$s_below`, when one is asked.
BELOW = "round(coalesce(sum(us) FILTER (WHERE price < $s_below), 0) / sum(us), 6)"

# The clipped ends as whole microseconds since the epoch: a chart's thousands of them become
# datetimes in Python in a third of the time DuckDB's TIMESTAMPTZ conversion takes.
INTERVALS = """
SELECT {key}, {currency} AS currency, {price} AS price,
       epoch_us(greatest(valid_from, $s_since)) AS start_us,
       epoch_us(least(coalesce(valid_to, $s_until), $s_until)) AS until_us
FROM {source}
WHERE {where} AND {price} IS NOT NULL
  AND valid_from < $s_until AND (valid_to IS NULL OR valid_to > $s_since)
ORDER BY {key}, currency, valid_from
"""

MATCHING = "SELECT count(*) FROM (SELECT DISTINCT {key}, currency FROM prices WHERE {where})"

# The intervals STATISTICS reads: a count, cheap beside the statistics, that foretells their time.
WINDOW_ROWS = """
SELECT count(*) FROM prices
WHERE {where} AND {overlaps}
"""

STATISTICS, WINDOW, WINDOW_ROWS = (
    sql.replace("{overlaps}", _OVERLAPS) for sql in (STATISTICS, WINDOW, WINDOW_ROWS)
)
