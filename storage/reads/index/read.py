"""Reading the market index: the days a window means, the index rows, and the offers behind
one day's values (docs/decide.md, "Market index"; the formula is `storage.reads.index.sql`).

Interface:

- `days_of(since, until, now)` -> `Days`: the UTC days from since's day to the last day whose
  00:00 is before `until`, never after today (`now`'s day).
- `index(store, filters, days)` -> one `IndexRow` per day, model and memory, kind and segment
  with offers; `index_sql(filters, days)` the same as `(sql, params)`.
- `behind(store, filters, days)` -> the offers counted on `days` (one day, usually), each with
  its provider's median.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import Any, NamedTuple

import duckdb

from collectors.common import StoreError
from storage.reads import gpu_filter
from storage.reads.gpu_filter import GpuChoice
from storage.reads.index import sql as index_sql_text
from storage.reads.sandbox import bounded, fetch_rows

SEGMENTS = index_sql_text.SEGMENTS
KINDS = index_sql_text.KINDS
HYPERSCALERS = index_sql_text.HYPERSCALERS
_EPOCH = date(1970, 1, 1)


@dataclass(frozen=True)
class IndexFilters:
    """Which values: a GPU (a model, or one memory variant of it), a price kind (`on_demand`,
    `spot`; None: both), a segment (None: every one)."""

    gpu: GpuChoice | None = None
    kind: str | None = None
    segment: str | None = "all"


@dataclass(frozen=True)
class Days:
    """The days `[first, last]` (UTC dates) and the moment `now` today's value is read at."""

    first: date
    last: date
    now: datetime

    @property
    def today(self) -> date:
        return self.now.astimezone(UTC).date()


class IndexRow(NamedTuple):
    date: date
    gpu_model: str
    gpu_memory_gib: float | None
    kind: str
    segment: str
    index_usd_per_gpu_hour: float
    providers: int
    ci_low: float | None
    ci_high: float | None
    low_confidence: bool

    def flat(self) -> dict[str, Any]:
        """The row as the JSON and CSV documents give it (the date in ISO form)."""
        return self._asdict() | {"date": self.date.isoformat()}


COLUMNS = IndexRow._fields


def days_of(since: datetime, until: datetime, now: datetime) -> Days:
    """The days of the window `[since, until)`: since's UTC day to the last day starting
    before `until`, at most today."""
    first = since.astimezone(UTC).date()
    last = (until.astimezone(UTC) - timedelta(microseconds=1)).date()
    return Days(first, min(last, now.astimezone(UTC).date()), now)


def _number(day: date) -> int:
    return (day - _EPOCH).days


def _midnight(day: date) -> datetime:
    return datetime.combine(day, time(), UTC)


def _statement(template: str, filters: IndexFilters, days: Days, offer: str = "") -> Any:
    params: dict[str, Any] = {
        "i_first": _number(days.first),
        "i_last": _number(days.last),
        "i_today": _number(days.today),
        "i_now": days.now,
        "i_lower": _midnight(days.first),
        "i_upper": max(days.now, _midnight(days.last + timedelta(days=1))),
    }
    where = [gpu_filter.clause([filters.gpu] if filters.gpu else [], params, "i_gpu")]
    if filters.kind is not None:
        where.append("price_kind = $i_kind")
        params["i_kind"] = filters.kind
    segments = "true"
    if filters.segment is not None:
        segments = "segment = $i_segment"
        params["i_segment"] = filters.segment
    text = template.format(where=" AND ".join(where), segments=segments, offer=offer)
    return text, params


def index_sql(filters: IndexFilters, days: Days) -> tuple[str, dict[str, Any]]:
    """The index's SELECT and its named parameters (`$i_...`)."""
    return _statement(index_sql_text.INDEX, filters, days)  # type: ignore[no-any-return]


def index(
    store: Path | str, filters: IndexFilters, days: Days, *, timeout_s: float | None = None
) -> list[IndexRow]:
    """The index's values over `days` (module docstring), by model, memory, kind, segment and
    date; stopped after `timeout_s` seconds (QueryStopped)."""
    if days.first > days.last:
        return []
    sql, params = index_sql(filters, days)
    return [IndexRow(*row) for row in _rows(store, sql, params, timeout_s)]


def behind(
    store: Path | str, filters: IndexFilters, days: Days, *, timeout_s: float | None = None
) -> list[dict[str, Any]]:
    """The offers the index counted over `days`, each with `provider_median`, the value its
    provider gave the index."""
    if days.first > days.last:
        return []
    sql, params = _statement(index_sql_text.BEHIND, filters, days, index_sql_text.BEHIND_COLUMNS)
    with bounded(store, timeout_s) as con:
        try:
            cursor = con.execute(sql, params)
            names = [d[0] for d in cursor.description]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
        except duckdb.Error as exc:
            raise StoreError(f"reading the market index failed: {exc}") from exc


def _rows(
    store: Path | str, sql: str, params: dict[str, Any], timeout_s: float | None
) -> list[tuple[Any, ...]]:
    return fetch_rows(store, sql, params, timeout_s, "the market index")
