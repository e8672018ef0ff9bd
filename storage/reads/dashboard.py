"""The reads of the web dashboard: the current offers, the history of price series and the TCO
of a need, each through the sandbox of `storage.reads.sandbox` (the store and nothing else)
with the time limit of every read command (`sandbox.bounded`), on a connection opened for the
one request and closed after it, so a dashboard left open never keeps the daemon from writing.

The formulas are not written here: the statistics come from `storage.reads.series`, the TCO
from `storage.reads.tco`; this module only runs them on a bounded connection.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from collectors.common import StoreError
from storage import runs as runs_mod
from storage.alerts import log as alert_log
from storage.query import QueryResult
from storage.reads import series
from storage.reads import tco as tco_mod
from storage.reads.sandbox import bounded, one_line

# The Now table is rendered whole into the page: beyond this many offers it is cut (and says
# so), so a store of a huge marketplace cannot make a page of megabytes.
MAX_OFFERS = 5000
# The temporary table of a History read's window (`series.window_sql`).
_WINDOW = "history_window"

_OFFERS = """
SELECT p.provider, p.region, p.zone, p.instance_type, p.price_kind, p.term_months,
       p.payment_option, p.offering_class, p.gpu_model, p.gpu_count, p.gpu_memory_gib,
       p.currency, p.price_per_hour, p.price_per_gpu_hour, p.price_per_hour_usd,
       p.price_per_gpu_hour_usd, p.pflop_per_usd, p.available, p.stale, i.band AS interruption,
       count(*) OVER () AS _total
FROM latest_prices p
LEFT JOIN spot_interruption i
  ON p.price_kind = 'spot' AND i.provider = p.provider AND i.region = p.region
 AND i.instance_type = p.instance_type
ORDER BY p.price_per_gpu_hour_usd NULLS LAST, p.currency, p.price_per_gpu_hour, p.provider,
         p.region, p.zone NULLS FIRST, p.instance_type, p.price_kind, p.term_months,
         p.payment_option, p.offering_class
LIMIT $limit
"""


@dataclass(frozen=True)
class Offers:
    """The current offers as dicts (columns of `_OFFERS`) and how many there are in all."""

    rows: list[dict[str, Any]]
    total: int


def offers(path: Path | str, *, timeout_s: float | None, limit: int = MAX_OFFERS) -> Offers:
    """Every current offer (up to `limit`), cheapest per GPU-hour in USD first."""
    with bounded(path, timeout_s) as con:
        rows = _dicts(_run(con, _OFFERS, {"limit": limit}))
    total = rows[0].pop("_total") if rows else 0
    for row in rows[1:]:
        del row["_total"]
    return Offers(rows, int(total))


@dataclass(frozen=True)
class Health:
    """What the Health panel reads from the store: the last run per provider (`storage.runs`)
    and the latest alerts with their total (`storage.alerts.log`)."""

    runs: dict[str, runs_mod.LastRun]
    alerts: QueryResult
    total_alerts: int


def health(path: Path | str, alerts: int, *, timeout_s: float | None) -> Health:
    """The runs and the `alerts` latest alerts, on one bounded connection (none without a
    store: the panel of a server started before the first collection)."""
    if not Path(path).exists():
        return Health({}, *alert_log.recent(path, alerts))  # its empty answer, no store read
    with bounded(path, timeout_s) as con:
        last = runs_mod.latest_on(con)
        recent, total = alert_log.recent_on(con, alerts)
    return Health(last, recent, total)


@dataclass(frozen=True)
class History:
    """The History panel's read: the statistics of every series, and the steps of the ones
    drawn."""

    stats: list[series.SeriesStats]
    steps: dict[tuple[series.OfferKey, str], list[series.Interval]]


def history(
    path: Path | str,
    filters: series.SeriesFilters,
    window: series.Window,
    drawn: Callable[[list[series.SeriesStats]], tuple[series.OfferKey, ...]],
    *,
    below: float | None = None,
    price: str = "price_per_hour",
    timeout_s: float | None,
) -> History:
    """`statistics`, then `intervals` of the series `drawn(stats)` picks, on one bounded
    connection, from one scan of the history: the window's intervals are kept in a temporary
    table of the connection (gone with it), which both statements read."""
    every = series.SeriesFilters()
    with bounded(path, timeout_s) as con:
        _run(con, *series.window_sql(filters, window, _WINDOW, price=price))
        sql, params = series.statistics_sql(every, window, price=price, below=below, source=_WINDOW)
        found = [series.SeriesStats.from_row(row)
                 for row in _run(con, f"{sql} {series.ORDER}", params).fetchall()]  # fmt: skip
        keys = drawn(found)
        steps = {}
        if keys:
            only = series.SeriesFilters(keys=keys)
            sql, params = series.intervals_sql(only, window, price=price, source=_WINDOW)
            steps = series.by_series(_run(con, sql, params).fetchall())
    return History(found, steps)


def statistics(
    path: Path | str,
    filters: series.SeriesFilters,
    window: series.Window,
    *,
    below: float | None = None,
    price: str = "price_per_hour",
    timeout_s: float | None,
) -> list[series.SeriesStats]:
    """`series.statistics` on a bounded connection."""
    sql, params = series.statistics_sql(filters, window, price=price, below=below)
    with bounded(path, timeout_s) as con:
        found = _run(con, f"{sql} {series.ORDER}", params).fetchall()
    return [series.SeriesStats.from_row(row) for row in found]


def intervals(
    path: Path | str,
    filters: series.SeriesFilters,
    window: series.Window,
    *,
    price: str = "price_per_hour",
    timeout_s: float | None,
) -> dict[tuple[series.OfferKey, str], list[series.Interval]]:
    """`series.intervals` on a bounded connection (`price`: as `statistics`)."""
    sql, params = series.intervals_sql(filters, window, price=price)
    with bounded(path, timeout_s) as con:
        return series.by_series(_run(con, sql, params).fetchall())


def matching_series(
    path: Path | str, filters: series.SeriesFilters, *, timeout_s: float | None
) -> int:
    """`series.matching_series` on a bounded connection."""
    sql, params = series.matching_sql(filters)
    with bounded(path, timeout_s) as con:
        return int(_run(con, sql, params).fetchone()[0])


def tco(
    path: Path | str,
    need: tco_mod.Need,
    *,
    baseline: int | None = None,
    timeout_s: float | None,
) -> tco_mod.Tco:
    """`storage.reads.tco.tco` on a bounded connection."""
    with bounded(path, timeout_s) as con:
        return tco_mod.tco(con, need, baseline=baseline)


def _run(con: Any, sql: str, params: dict[str, Any]) -> Any:
    try:
        return con.execute(sql, params)
    except duckdb.InterruptException:
        raise
    except duckdb.Error as exc:
        raise StoreError(f"dashboard: could not read the store: {one_line(exc)}") from exc


def _dicts(cursor: Any) -> list[dict[str, Any]]:
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
