"""The JSON documents of `latest`, `history` and `tco` (`--format json`), built in one place, so
the commands and the web dashboard's API (`/api/latest`, `/api/history`, `/api/tco`) answer the
same arrays."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from storage.latest import Cheapest
from storage.reads.series import SeriesStats
from storage.reads.tco import Tco
from tracker.cli import render, tco_table


def latest(found: Cheapest) -> list[dict[str, Any]]:
    """The offers `latest` shows, one object each (the currency column keeps groups apart)."""
    return render.records(found.result)


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
    return render.records(tco_table.as_result(tco_rows(answer, limit)))


def dumps(document: list[dict[str, Any]]) -> str:
    """The document as the commands print it."""
    return json.dumps(document, indent=2, default=str)
