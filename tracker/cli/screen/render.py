"""Turning results into what a person or a script reads: rich tables, CSV, JSON, the run summary."""

from __future__ import annotations

import csv
import io
import json
import re
import uuid
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from tracker.questions.documents import plain

if TYPE_CHECKING:  # the pipeline is imported by the commands that collect, when they run
    from storage.query import QueryResult
    from tracker.collecting.pipeline import Outcome

FORMATS = ("table", "csv", "json")
_STATUS_STYLE = {
    "ok": "green",
    "failed": "bold red",
    "skipped": "yellow",
    "held": "bold yellow",
}


def to_json(result: QueryResult) -> str:
    """One JSON array of objects (docs/commands.md), timestamps as ISO-8601; strict JSON (a NaN or
    an infinity is null). DECIMALs are JSON numbers with every digit stored, as in the CSV:
    a float would round a 38-digit one to 17."""
    # json writes no Decimal as a number: each goes out as a string behind a marker no value
    # can hold (random per call), and the quotes around the marked ones are then dropped.
    marker = f"decimal-{uuid.uuid4().hex}:"
    rows = [
        {c: _marked(v, marker) for c, v in zip(result.columns, row, strict=True)}
        for row in result.rows
    ]
    text = json.dumps(rows, indent=2, default=str, allow_nan=False)
    return re.sub(f'"{marker}(-?[0-9.]+)"', r"\1", text)


def _marked(value: Any, marker: str) -> Any:
    if isinstance(value, Decimal) and value.is_finite():
        # 32.770000 -> 32.77, 100.000 -> 100, as the float printed them (not normalize(): it
        # rounds to the context's 28 digits)
        digits = format(value, "f")
        return marker + (digits.rstrip("0").rstrip(".") if "." in digits else digits)
    return plain(value)


def to_csv(result: QueryResult) -> str:
    """CSV with DECIMALs written exactly as stored (never a float in exponent form)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(result.columns)
    writer.writerows([[_exact(v) for v in row] for row in result.rows])
    return out.getvalue()


def _exact(value: Any) -> Any:
    if isinstance(value, Decimal):
        return format(value, "f")  # all digits, no exponent: 1E+2 -> 100, 1E-7 -> 0.0000001
    return plain(value)


def to_table(result: QueryResult, title: str | None = None) -> Table:
    table = Table(title=None if title is None else escape(title), show_lines=False)
    for column, kind in zip(result.columns, result.types, strict=True):
        numeric = kind in ("DOUBLE", "INTEGER", "BIGINT", "HUGEINT", "FLOAT") or "DECIMAL" in kind
        table.add_column(escape(column), justify="right" if numeric else "left")
    for row in result.rows:
        table.add_row(*("" if v is None else escape(str(plain(v))) for v in row))
    return table


# What the `latest` table leaves to the documents (the offer key's own fields, the GPU's facts
# its `gpus` column says in words), and how many places a price shows on screen.
_LATEST_HIDDEN = (
    "currency", "stale", "available", "price_kind", "term_months", "payment_option",
    "offering_class", "gpu_model", "gpu_count", "gpu_memory_gib",
)  # fmt: skip
_LATEST_PLACES = {"per_hour": 4, "per_gpu_hour": 4, "pflop_per_usd": 1}


def latest_table(result: QueryResult, currency: str, *, cut: str | None = None) -> Table:
    """The `latest` offers of one currency: compact, the currency in the title, stale and sold
    out marked, and `cut` (how many offers the limit left out) in the caption."""
    title = f"Cheapest current offers ({currency})"
    if "priced_in" in result.columns:
        title = f"Cheapest current offers ({currency}; other currencies converted with [fx])"
    # Titles and headers are rich markup: "[fx]" would vanish as a tag, so text is escaped.
    table = Table(title=escape(title), caption_justify="left")
    headers = {
        "per_hour": f"{currency}/h",
        "per_gpu_hour": f"{currency}/GPU-h",
        "pflop_per_usd": "PFLOP/$",
        "usd_per_unit": "USD/unit",
    }
    shown = [c for c in result.columns if c not in _LATEST_HIDDEN]
    # The interruption band is AWS spot's alone: its column shows where a row has one.
    at = result.columns.index("interruption") if "interruption" in result.columns else None
    if at is not None and all(row[at] is None for row in result.rows):
        shown.remove("interruption")
    for column in shown:
        table.add_column(
            escape(headers.get(column, column)), justify="right" if column in headers else "left"
        )
    # Only --include-sold-out brings sold-out offers: then a column says which they are.
    sold_out = [dict(zip(result.columns, row, strict=True)).get("available") is False
                for row in result.rows]  # fmt: skip
    if any(sold_out):
        table.add_column("available")
    stale_seen = False
    for row, gone in zip(result.rows, sold_out, strict=True):
        values = dict(zip(result.columns, row, strict=True))
        cells = [_latest_cell(c, values[c]) for c in shown]
        if values.get("stale"):
            cells[0] += " *"
            stale_seen = True
        table.add_row(*cells, *((["sold out" if gone else ""]) if any(sold_out) else []))
    notes = [escape(cut)] if cut else []
    if stale_seen:
        notes.append("* stale: the provider's last successful collection is overdue")
    table.caption = "\n".join(notes) or None
    return table


def _latest_cell(column: str, value: Any) -> str:
    if value is None:
        return ""
    places = _LATEST_PLACES.get(column)
    if places is not None and isinstance(value, float | Decimal):
        value = round(float(value), places)
    return escape(str(value))


def print_result(console: Console, result: QueryResult, fmt: str) -> None:
    if fmt == "json":
        console.print(to_json(result), markup=False, highlight=False, soft_wrap=True)
    elif fmt == "csv":
        console.print(to_csv(result), markup=False, highlight=False, soft_wrap=True, end="")
    else:
        console.print(to_table(result))


def summary(outcomes: list[Outcome]) -> Table:
    """The one-screen summary after a collection."""
    table = Table(title="Collection summary")
    for column in ("provider", "status", "records", "changed", "pages", "time"):
        table.add_column(column, justify="left" if column in ("provider", "status") else "right")
    table.add_column("notes")
    for o in outcomes:
        style = _STATUS_STYLE.get(o.status, "")
        table.add_row(
            escape(o.provider),
            f"[{style}]{o.status}[/]",
            str(o.records),
            str(o.changed),
            str(o.pages),
            f"{o.seconds:.1f}s",
            escape(_notes(o)),
        )
    return table


def _some(names: list[str]) -> str:
    return ", ".join(names[:6]) + (f" (+{len(names) - 6} more)" if len(names) > 6 else "")


def _notes(o: Outcome) -> str:
    notes = list(o.notes)
    if o.error:
        notes.append(o.error)
    unnamed = sorted(set(o.gpus.without_facts) - o.unknown_instance_types) if o.gpus else []
    if unnamed:
        notes.append(f"GPU not in the GPU table, stored under the API's name: {_some(unnamed)}")
    if o.unknown_instance_types:
        names = sorted(o.unknown_instance_types)
        notes.append(f"unknown GPU instance types, not stored: {_some(names)}")
    if unnamed or o.unknown_instance_types:
        notes.append("see gpu-tracker gpus --unknown")
    if o.skipped_rows:
        notes.append(f"{o.skipped_rows} rows skipped (non-Linux, zero, duplicate ...)")
    if o.invalid:
        notes.append(o.invalid_summary() + " (not stored)")
    if o.gpus is not None and o.gpus.priced:  # last: the notes above are the ones to act on
        notes.append(f"GPU types: {o.gpus.priced} priced, {o.gpus.from_api} from API facts")
    return "; ".join(notes)
