"""The `history` statistics as rich tables: one per currency, a series per row, named as a
person reads it (provider/region/zone/instance type, kind and term)."""

from __future__ import annotations

from collections.abc import Iterator

from rich.markup import escape
from rich.table import Table

from storage.reads.series import SeriesStats, Window

_PRICES = ("min", "p50", "mean", "p95", "max", "current")


def tables(
    rows: list[SeriesStats],
    window: Window,
    below: float | None,
    cut: str | None,
    *,
    per_gpu: bool = False,
) -> Iterator[Table]:
    """A table per currency (USD first), in the order the rows came; `cut` (what the limit
    left out) in the caption of the last; prices per GPU-hour with `per_gpu`."""
    unit = "GPU-hour" if per_gpu else "instance-hour"
    currencies = sorted({row.currency for row in rows}, key=lambda c: (c != "USD", c))
    for i, currency in enumerate(currencies):
        last = i == len(currencies) - 1
        mine = [row for row in rows if row.currency == currency]
        yield _table(mine, currency, window, below, cut if last else None, unit)


def _table(
    rows: list[SeriesStats],
    currency: str,
    window: Window,
    below: float | None,
    cut: str | None,
    unit: str,
) -> Table:
    title = (
        f"Price history ({currency} per {unit}): "
        f"{window.since:%Y-%m-%d %H:%M} to {window.until:%Y-%m-%d %H:%M} UTC"
    )
    table = Table(title=escape(title), caption_justify="left")
    table.add_column("series")
    table.add_column("hours", justify="right")
    for name in _PRICES:
        table.add_column(name, justify="right")
    table.add_column("changes", justify="right")
    if below is not None:
        table.add_column(f"< {below:g}", justify="right")
    usd = currency != "USD"
    if usd:
        table.add_column("mean USD", justify="right")
    for row in rows:
        cells = [escape(row.key.label), f"{row.covered_hours:,.1f}"]
        cells += [_price(getattr(row, name)) for name in _PRICES]
        cells.append(str(row.changes))
        if below is not None:
            cells.append("" if row.below_share is None else f"{row.below_share:.1%}")
        if usd:
            cells.append(_price(row.mean_usd))
        table.add_row(*cells)
    notes = [escape(cut)] if cut else []
    if usd and any(row.mean_usd is None for row in rows):
        notes.append(f"mean USD empty: no [fx] rate for {currency}")
    table.caption = "\n".join(notes) or None
    return table


def _price(value: float | None) -> str:
    return "" if value is None else f"{value:,.4f}"
