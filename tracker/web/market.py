"""The Market panel (`/market`), the offers behind one index value (`/market?date=...`) and
`/api/index`, the `index` command's JSON (docs/web.md, "Market").

The panel shows today's index per followed GPU ([review] gpus; every GPU when none is
followed) and kind, per segment, with its move over 30 and 180 days, and the chart of one GPU
and kind; each value links to the offers behind it: each provider's median and the offers it
came from. The parameters are checked with those the command's options are built from.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import click
from markupsafe import Markup

from collectors.common import kind_label
from storage.reads.gpu_filter import GpuChoice
from storage.reads.index import read
from storage.reads.index.read import IndexFilters, IndexRow
from tracker.questions import index as index_q
from tracker.web import api
from tracker.web.pages import render

SPAN_DAYS = 180  # the chart and the longer move
MOVES = (30, SPAN_DAYS)


def api_index(store: Path, query: api.Query, *, timeout_s: float | None) -> list[dict[str, Any]]:
    """What `gpu-tracker index --format json` prints."""
    given = api.options(api.INDEX, query)
    try:
        days = index_q.days_from(given)
    except click.UsageError as exc:
        raise api.BadRequest(exc.message) from exc
    filters = index_q.filters_from(given)
    rows = read.index(store, filters, days, timeout_s=timeout_s)
    if not rows and (problems := index_q.unknown_gpu(store, filters, timeout_s)):
        raise api.BadRequest("; ".join(problems))
    return api.bounded(index_q.document(rows))


def market_page(store: Path, query: api.Query, followed: Sequence[str], timeout_s: float) -> str:
    """Today's index per followed GPU, kind and segment, its moves, and one GPU's chart."""
    if "date" in query:
        return _behind_panel(store, query, timeout_s)
    now = datetime.now(UTC)
    today = now.date()

    def on(day: date) -> list[IndexRow]:  # one day's values: a short read, even at 25M rows
        every = IndexFilters(segment=None)
        found = read.index(store, every, read.Days(day, day, now), timeout_s=timeout_s)
        return [r for r in found if not wanted or r.gpu_model.lower() in wanted]

    wanted = {name.lower() for name in followed}
    rows = on(today)
    title = "Market index"
    if not rows:
        message = "no offer counts for the index yet (run a collection first)"
        return render("market.html", "/market", heading=title, message=message)
    past = {days: {_key(r): r for r in on(today - timedelta(days=days))} for days in MOVES}
    head = ("GPU", "kind", "segment", "USD/GPU-h", "providers", "95% interval", "30 days",
            "180 days", "note")  # fmt: skip
    cells = [_today_cells(r, [past[days].get(_key(r)) for days in MOVES]) for r in rows]
    chosen = _chosen(query, rows)
    one = IndexFilters(GpuChoice(chosen.gpu_model, chosen.gpu_memory_gib), chosen.kind, None)
    span = read.days_of(now - timedelta(days=SPAN_DAYS), now, now)
    drawn = read.index(store, one, span, timeout_s=timeout_s)
    return render(
        "market.html",
        "/market",
        heading=title,
        message="",
        behind=False,
        today=today,
        read_at=f"{now:%H:%M}",
        head=head,
        rows=cells,
        chart=_chart(drawn, (_gpu(chosen), chosen.kind)),
    )


def _behind_panel(store: Path, query: api.Query, timeout_s: float) -> str:
    """The offers behind one day's value: per provider its median, and its offers."""
    rest = {k: v for k, v in query.items() if k != "date"}
    try:
        given = api.options(api.INDEX, rest)
        day = date.fromisoformat(query["date"][0])
    except api.BadRequest as exc:
        return render("market.html", "/market", heading="Behind the index", message=str(exc))
    except ValueError:
        message = f"date={query['date'][0]!r}: expected an ISO date (2026-11-02)"
        return render("market.html", "/market", heading="Behind the index", message=message)
    filters = index_q.filters_from(given)
    now = datetime.now(UTC)
    offers = read.behind(
        store, filters, read.Days(day, min(day, now.date()), now), timeout_s=timeout_s
    )
    title = f"Behind the index: {_words(filters)}, {day}"
    if not offers:
        return render("market.html", "/market", heading=title, message="no offer counted that day")
    head = ("GPU", "kind", "segment", "provider", "provider median", "region", "zone",
            "instance type", "USD/GPU-h", "price/GPU-h", "currency")  # fmt: skip
    cells = [
        [str(c) for c in (
            _gpu_of(o["gpu_model"], o["gpu_memory_gib"]), kind_label(o["kind"]), o["segment"],
            o["provider"], f"{o['provider_median']:.4f}", o["region"] or "", o["zone"] or "",
            o["instance_type"], f"{o['price_per_gpu_hour_usd']:.4f}",
            f"{o['price_per_gpu_hour']:.4f}", o["currency"])]
        for o in offers
    ]  # fmt: skip
    return render(
        "market.html", "/market", heading=title, message="", behind=True, head=head, rows=cells
    )


def _key(row: IndexRow) -> tuple[str, str, str]:
    return (_gpu(row), row.kind, row.segment)


def _today_cells(row: IndexRow, then: Sequence[IndexRow | None]) -> list[Any]:
    """The row's cells: text, or a link (`{"href", "text"}`) to the offers behind a value and
    to the chart of a GPU."""
    link = "/market?" + urlencode(
        {"gpu": _gpu(row), "kind": row.kind, "segment": row.segment, "date": row.date.isoformat()}
    )
    interval = "-" if row.ci_low is None else f"{row.ci_low:.4f} to {row.ci_high:.4f}"
    value = {"href": link, "text": f"{row.index_usd_per_gpu_hour:.4f}"}
    moves = [_move(row, before) for before in then]
    chart = "/market?" + urlencode({"gpu": _gpu(row), "kind": row.kind})
    gpu = {"href": chart, "text": _gpu(row)}
    note = "low confidence" if row.low_confidence else ""
    return [gpu, kind_label(row.kind), row.segment, value,
            str(row.providers), interval, *moves, note]  # fmt: skip


def move(now: IndexRow, then: IndexRow | None) -> float | None:
    """The index's move as a share from `then` (None: that day had no value) to `now`."""
    return None if then is None else now.index_usd_per_gpu_hour / then.index_usd_per_gpu_hour - 1


def _move(now: IndexRow, then: IndexRow | None) -> str:
    share = move(now, then)
    return "-" if share is None else f"{share:+.1%}"


def _chosen(query: api.Query, rows: list[IndexRow]) -> IndexRow:
    """The GPU and kind the chart draws: the query's (`?gpu=H100 80GB&kind=spot`), else the
    first."""
    gpu = (query.get("gpu") or [""])[0].lower()
    kind = (query.get("kind") or [""])[0].replace("-", "_")
    for row in rows:
        if (not gpu or _gpu(row).lower() == gpu) and (not kind or row.kind == kind):
            return row
    return rows[0]


def _chart(rows: list[IndexRow], chosen: tuple[str, str]) -> Markup:
    from tracker.web.charts import index_svg

    title = f"{chosen[0]} {kind_label(chosen[1])} market index, last {SPAN_DAYS} days"
    return index_svg(rows, title)


def _gpu(row: IndexRow) -> str:
    return _gpu_of(row.gpu_model, row.gpu_memory_gib)


def _gpu_of(model: str, memory: float | None) -> str:
    return model if memory is None else f"{model} {memory:g}GB"


def _words(filters: IndexFilters) -> str:
    gpu = filters.gpu.label if filters.gpu else "every GPU"
    kind = kind_label(filters.kind) if filters.kind else "every kind"
    return f"{gpu}, {kind}, {filters.segment or 'every segment'}"
