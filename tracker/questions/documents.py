"""The JSON documents of `latest`, `history` and `tco` (`--format json`), built in one place, so
the commands and the web dashboard's API (`/api/latest`, `/api/history`, `/api/tco`) answer the
same arrays."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from datetime import date, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from tracker.questions import tco_words

if TYPE_CHECKING:  # `sql` prints with `plain` and `records`: the questions' reads not loaded
    from storage.latest import Cheapest
    from storage.query import QueryResult
    from storage.reads.series import SeriesStats
    from storage.reads.tco import Tco


# The table's own words for an offer's kind; a document names it by the offer key's fields
# (`price_kind` on_demand, spot or reserved, and the term), as every command's JSON does.
_TABLE_ONLY = ("kind",)


def latest_result(found: Cheapest) -> QueryResult:
    """The offers `latest` shows as a document's rows: every field but the table's own."""
    from storage.query import QueryResult

    kept = [i for i, c in enumerate(found.result.columns) if c not in _TABLE_ONLY]
    result = found.result
    return QueryResult(
        [result.columns[i] for i in kept],
        [result.types[i] for i in kept] if result.types else [],
        [tuple(row[i] for i in kept) for row in result.rows],
    )


def latest(found: Cheapest) -> list[dict[str, Any]]:
    """The offers `latest` shows, one object each (the currency column keeps groups apart)."""
    return records(latest_result(found))


def history(rows: Sequence[SeriesStats]) -> list[dict[str, Any]]:
    """One object per series: the offer key and its statistics."""
    return [row.flat() for row in rows]


def tco_rows(answer: Tco, limit: int | None) -> list[dict[str, Any]]:
    """The candidates cheapest first (with a baseline: the blended plans, the question asked),
    the first `limit` of them when a limit is given."""
    rows = answer.blends if answer.baseline else answer.rows
    return rows[:limit] if limit else rows


def tco(answer: Tco, limit: int | None) -> list[dict[str, Any]]:
    """The `tco` document: `tco_rows` as plain JSON values."""
    return records(tco_words.as_result(tco_rows(answer, limit)))


def dumps(document: list[dict[str, Any]]) -> str:
    """The document as the commands print it."""
    return json.dumps(document, indent=2, default=str)


def plain(value: Any) -> Any:
    """A value as plain JSON takes it: ISO moments, floats, None for NaN and infinities."""
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Decimal):
        value = float(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None  # JSON has no NaN or Infinity: a browser's or jq's parser refuses them
    return value


def records(result: QueryResult) -> list[dict[str, Any]]:
    """The rows as objects of plain JSON values (the web API answers these too)."""
    return [{c: plain(v) for c, v in zip(result.columns, row, strict=True)} for row in result.rows]
