"""Time-weighted statistics of price series: the one place they are written (docs/decide.md,
revision 2, "`history`: exact semantics").

A series is one offer key (provider, region, zone, instance_type, price_kind, term_months,
payment_option, offering_class) in one currency. Each interval of `prices` counts for
`[valid_from, coalesce(valid_to, until))` clipped to the window `[since, until)`; time no
interval covers is not counted. Durations are whole microseconds, summed as integers, so the
quantiles compare shares exactly (a price holding exactly half the covered time is the p50).

Interface:

- `statistics(store, filters, window, below=...)` -> one `SeriesStats` per series with covered
  time, cheapest mean first (in USD where rated), then by key.
- `statistics_sql(filters, window, price=..., below=...)` -> `(sql, params)`: the same as a
  relation for a larger query (`WITH stats AS (<sql>) ... JOIN stats USING (provider, ...)`).
  `price` (`price_column`): per instance-hour or GPU-hour, in the series' currency or in USD
  (each interval at its own dated rate; `currency` reads 'USD'; intervals without one left out).
- `intervals(store, filters, window)` -> per series its clipped intervals, for a step chart;
  `matching_series(store, filters)` -> how many series match at all (any time);
  `window_rows(store, filters, window)` -> how many intervals the statistics would read.

The statements themselves are templates in `storage.reads.series_sql`.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from storage.reads import gpu_filter, series_sql
from storage.reads.gpu_filter import GpuChoice
from storage.reads.sandbox import fetch_rows
from storage.reads.series_types import COLUMNS as COLUMNS
from storage.reads.series_types import KEY as KEY
from storage.reads.series_types import Interval as Interval
from storage.reads.series_types import OfferKey as OfferKey
from storage.reads.series_types import SeriesFilters as SeriesFilters
from storage.reads.series_types import SeriesStats as SeriesStats
from storage.reads.series_types import Window as Window

_KEY = ", ".join(KEY)
PRICES = ("price_per_hour", "price_per_hour_usd", "price_per_gpu_hour", "price_per_gpu_hour_usd")
_US_PER_HOUR = 3_600_000_000
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

ORDER = f"ORDER BY mean_usd NULLS LAST, currency, mean, {_KEY.replace('zone', 'zone NULLS FIRST')}"


def _where(filters: SeriesFilters) -> tuple[str, dict[str, Any]]:
    params: dict[str, Any] = {}
    choices = [GpuChoice(filters.gpu, filters.gpu_memory_gib)] if filters.gpu else []
    clauses = [
        gpu_filter.clause(choices, params, "s_gpu"),
        gpu_filter.at_least(filters.min_memory_gib, params, "s_gpu"),
    ]
    for name, column in (
        ("region", "region"),
        ("zone", "zone"),
        ("instance_type", "instance_type"),
    ):
        if getattr(filters, name):
            clauses.append(f"lower({column}) = lower($s_{name})")
            params[f"s_{name}"] = getattr(filters, name)
    for name, column in (("provider", "provider"), ("kind", "price_kind"), ("term", "term_months")):
        if getattr(filters, name) is not None:
            clauses.append(f"{column} = $s_{name}")
            params[f"s_{name}"] = getattr(filters, name)
    if filters.keys is not None:
        clauses.append(_keys_clause(filters.keys, params))
    return " AND ".join(clauses), params


def _windowed(filters: SeriesFilters, window: Window) -> tuple[str, dict[str, Any]]:
    """`_where`, with the window's bounds among the parameters (`$s_since`, `$s_until`)."""
    where, params = _where(filters)
    return where, params | {"s_since": window.since, "s_until": window.until}


def _keys_clause(keys: tuple[OfferKey, ...], params: dict[str, Any]) -> str:
    # A few keys (the series of a chart, a tco candidate list): NULL-safe equality per column.
    if not keys:
        return "false"
    ors = []
    for i, key in enumerate(keys):
        ands = []
        for column, value in zip(KEY, key, strict=True):
            params[f"s_k{i}_{column}"] = value
            ands.append(f"{column} IS NOT DISTINCT FROM $s_k{i}_{column}")
        ors.append("(" + " AND ".join(ands) + ")")
    return "(" + " OR ".join(ors) + ")"


def price_column(*, per_gpu: bool = False, usd: bool = False) -> str:
    """The price a series' figures are of: per instance-hour or per GPU-hour, in the series'
    own currency or in USD (`history --per-gpu`, `--usd`)."""
    return "price_per_" + ("gpu_hour" if per_gpu else "hour") + ("_usd" if usd else "")


def statistics_sql(
    filters: SeriesFilters,
    window: Window,
    *,
    price: str = "price_per_hour",
    below: float | None = None,
    source: str = "prices",
) -> tuple[str, dict[str, Any]]:
    """The statistics as one SELECT and its named parameters (see the module docstring), over
    `prices` or the table `window_sql` made."""
    where, params = _windowed(filters, window)
    below_sql = "NULL"
    if below is not None:
        below_sql = series_sql.BELOW
        params["s_below"] = below
    sql = series_sql.STATISTICS.format(
        key=_KEY,
        currency=_currency(price),
        price=price,
        usd=price.removesuffix("_usd") + "_usd",
        where=where,
        below=below_sql,
        us_per_hour=_US_PER_HOUR,
        source=source,
    )
    return sql, params


def statistics(
    store: Path | str,
    filters: SeriesFilters,
    window: Window,
    *,
    below: float | None = None,
    price: str = "price_per_hour",
    timeout_s: float | None = None,
) -> list[SeriesStats]:
    """Per series with covered time in the window, its statistics of `price` (module
    docstring); stopped after `timeout_s` seconds (QueryStopped)."""
    sql, params = statistics_sql(filters, window, price=price, below=below)
    return [SeriesStats.from_row(row) for row in _rows(store, f"{sql} {ORDER}", params, timeout_s)]


def intervals(
    store: Path | str,
    filters: SeriesFilters,
    window: Window,
    *,
    price: str = "price_per_hour",
    timeout_s: float | None = None,
) -> dict[tuple[OfferKey, str], list[Interval]]:
    """Per series (key, currency), its intervals of `price` in the window, oldest first."""
    sql, params = intervals_sql(filters, window, price=price)
    return by_series(_rows(store, sql, params, timeout_s))


def intervals_sql(
    filters: SeriesFilters, window: Window, *, price: str = "price_per_hour", source: str = "prices"
) -> tuple[str, dict[str, Any]]:
    """The statement `intervals` runs and its parameters (for a connection of the caller's)."""
    where, params = _windowed(filters, window)
    currency = _currency(price)
    sql = series_sql.INTERVALS.format(
        key=_KEY, where=where, price=price, currency=currency, source=source
    )
    return sql, params


def window_sql(
    filters: SeriesFilters, window: Window, table: str, *, price: str = "price_per_hour"
) -> tuple[str, dict[str, Any]]:
    """A temporary `table` of the intervals `statistics_sql` reads for `filters` (the columns
    it and `intervals_sql` use): both then read it with no filter but the series' keys."""
    _currency(price)  # a price not in PRICES is refused before it reaches the SQL
    where, params = _windowed(filters, window)
    usd = price.removesuffix("_usd") + "_usd"
    columns = ", ".join(dict.fromkeys((*KEY, "currency", price, usd, "valid_from", "valid_to")))
    sql = series_sql.WINDOW.format(table=table, columns=columns, where=where, price=price)
    return sql, params


def by_series(found: list[tuple[Any, ...]]) -> dict[tuple[OfferKey, str], list[Interval]]:
    """The rows of `intervals_sql` grouped per series (key, currency)."""
    series: dict[tuple[OfferKey, str], list[Interval]] = {}
    width = len(KEY)
    moments: dict[int, datetime] = {}  # an interval mostly ends where the next one starts

    def moment(us: int) -> datetime:
        if (known := moments.get(us)) is None:
            known = moments[us] = _EPOCH + timedelta(microseconds=us)
        return known

    named: tuple[Any, ...] | None = None  # the rows come series by series
    steps: list[Interval] = []
    for row in found:
        if row[: width + 1] != named:
            named = row[: width + 1]
            steps = series.setdefault((OfferKey(*named[:width]), named[width]), [])
        steps.append(Interval(moment(row[width + 2]), moment(row[width + 3]), row[width + 1]))
    return series


def window_rows(
    store: Path | str, filters: SeriesFilters, window: Window, *, timeout_s: float | None = None
) -> int:
    """How many intervals the statistics over `window` would read (their work grows with it)."""
    where, params = _windowed(filters, window)
    return int(_rows(store, series_sql.WINDOW_ROWS.format(where=where), params, timeout_s)[0][0])


def matching_series(
    store: Path | str, filters: SeriesFilters, *, timeout_s: float | None = None
) -> int:
    """How many series match `filters` at any time (to tell "none matched" from "no covered
    time in the window")."""
    sql, params = matching_sql(filters)
    return int(_rows(store, sql, params, timeout_s)[0][0])


def matching_sql(filters: SeriesFilters) -> tuple[str, dict[str, Any]]:
    """The statement `matching_series` runs and its parameters."""
    where, params = _where(filters)
    return series_sql.MATCHING.format(key=_KEY, where=where), params


def _currency(price: str) -> str:
    """The currency column of `price`'s figures (a ValueError for a price not in PRICES)."""
    if price not in PRICES:
        raise ValueError(f"price must be one of {PRICES}, not {price!r}")
    return "'USD'" if price.endswith("_usd") else "currency"


def _rows(
    store: Path | str, sql: str, params: dict[str, Any], timeout_s: float | None
) -> list[tuple[Any, ...]]:
    return fetch_rows(store, sql, params, timeout_s, "the price history")
