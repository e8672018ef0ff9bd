"""The History and Decide panels: a form of the command's options, then the answer as a chart
(SVG drawn on the server) and a table. The options are checked with the parameters the
commands' options are built from (`tracker.web.api.options`), so the page refuses what the
command line refuses."""

from __future__ import annotations

from datetime import UTC, datetime
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from storage.reads import dashboard
from storage.reads.series import SeriesFilters, SeriesStats, Window
from tracker.charts import labels
from tracker.questions import history as history_q
from tracker.questions import tco as tco_q
from tracker.questions import tco_words
from tracker.questions import workloads as workloads_q
from tracker.web import api, blends, charts
from tracker.web.pages import problem, table

if TYPE_CHECKING:
    from tracker.config.workloads import Workloads

WINDOWS = ("7d", "30d", "90d", "180d", "365d")  # 180d: the half-yearly review's period
_KINDS = ("", "on-demand", "spot", "reserved")
_STATS = ("series", "currency", "hours", "min", "mean", "p50", "p95", "max", "changes", "now")


def history_panel(store: Path, query: api.Query, models: list[str], timeout_s: float) -> str:
    """Pick a GPU model or an offer and a window: step charts and the statistics beside."""
    form = _history_form(query, models)
    if not query:
        return form + '<p class="note">Pick a GPU model (or an offer) and a window.</p>'
    try:
        given = api.options(api.HISTORY, query)
        window = history_q.window_of(given["since"], given["until"], datetime.now(UTC))
    except api.BadRequest as exc:
        return form + problem(str(exc))
    except click.UsageError as exc:
        return form + problem(exc.message)
    filters = history_q.filters_from(given)
    price = history_q.price_from(given)  # per GPU-hour and in USD when the form says so
    found = dashboard.statistics(
        store, filters, window, below=given["below"], price=price, timeout_s=timeout_s
    )
    if not found:
        return form + _window_note(window) + problem(
            "no series has a price in that window (widen it, or loosen the filters)")  # fmt: skip
    shown = found[: given["limit"]]
    return (
        form
        + _window_note(window)
        + _history_charts(store, shown, window, timeout_s, price)
        + _stats_table(shown, len(found), price)
    )


def _window_note(window: Window) -> str:
    """The window the charts and statistics cover, as drawn (not as the form's menu names it)."""
    days = (window.until - window.since).total_seconds() / 86400
    span = f"{days:,.0f} days" if days >= 1 else f"{days * 24:,.1f} hours"
    return (
        f'<p class="note" id="window">window drawn: {window.since.astimezone(UTC):%Y-%m-%d %H:%M}'
        f" to {window.until.astimezone(UTC):%Y-%m-%d %H:%M} UTC ({span})</p>"
    )


def _unit(price: str) -> str:
    return "GPU-hour" if "gpu_hour" in price else "instance-hour"


def _history_charts(
    store: Path, shown: list[SeriesStats], window: Any, timeout_s: float, price: str
) -> str:
    from tracker.charts import history as history_chart

    per_currency: dict[str, list[SeriesStats]] = {}
    for row in shown:
        per_currency.setdefault(row.currency, []).append(row)
    figures = []
    for currency, rows in per_currency.items():  # never two currencies on one axis
        drawn = rows[: history_chart.MAX_SERIES]
        keys = tuple(row.key for row in drawn)
        steps = dashboard.intervals(
            store, SeriesFilters(keys=keys), window, price=price, timeout_s=timeout_s
        )
        lines = [history_chart.Series(r.key.label, steps.get((r.key, r.currency), []))
                 for r in drawn]  # fmt: skip
        svg = charts.history_svg(lines, currency, window, len(rows) - len(drawn), _unit(price))
        figures.append(f'<figure class="chart" data-currency="{escape(currency)}">{svg}</figure>')
    return '<div class="charts">' + "".join(figures) + "</div>"


def _stats_table(shown: list[SeriesStats], total: int, price: str) -> str:
    rows = [
        (r.key.label, r.currency, f"{r.covered_hours:,.0f}", f"{r.min:.4f}", f"{r.mean:.4f}",
         f"{r.p50:.4f}", f"{r.p95:.4f}", f"{r.max:.4f}", str(r.changes),
         "" if r.current is None else f"{r.current:.4f}")
        for r in shown
    ]  # fmt: skip
    note = f"{len(shown)} of {total} series (cheapest mean first); prices per {_unit(price)}"
    return f'<p class="note">{note}</p>' + table("stats", _STATS, rows)


def _history_form(query: api.Query, models: list[str]) -> str:
    return (
        '<h1>Price history</h1><form id="history-form" class="filters" method="get">'
        + _select("gpu", "GPU", ["", *models], query)
        + _input("provider", "provider", query)
        + _input("region", "region", query)
        + _input("instance_type", "instance type", query)
        + _select("kind", "price kind", list(_KINDS), query)
        + _select("since", "window", list(WINDOWS), query, default="30d")
        + _input("limit", "series", query, default="12", kind="number")
        + _switch("per_gpu", "per GPU-hour", query)
        + _switch("usd", "in USD", query)
        + '<button type="submit">Show</button></form>'
    )


def decide_panel(
    store: Path,
    query: api.Query,
    models: list[str],
    timeout_s: float,
    workloads: Workloads | None = None,
) -> str:
    """The TCO of a need: the best option per strategy, as bars and as a table; with a
    baseline, the blended plans too; what of the switching options it applied; with a
    workload, its units and USD per unit (`workloads`: the config's, None: the bundled)."""
    form = _decide_form(query, models, workloads)
    if not query:
        return form + '<p class="note">Say what you need: a GPU, how many, for how long.</p>'
    try:
        given = api.options(api.TCO, query)
        need, work = api.work_need(tco_q.need_from(given), given, workloads)
    except api.BadRequest as exc:
        return form + problem(str(exc))
    baseline = given["baseline"]
    if (refused := tco_q.baseline_problem(baseline, need)) is not None:
        return form + problem(refused)
    answer = dashboard.tco(store, need, baseline=baseline, timeout_s=timeout_s)
    if not answer.rows:
        return form + problem(tco_words.no_candidate(answer))
    answer = workloads_q.with_units(answer, work) if work else answer
    notes = "".join(f'<p class="note">{escape(line)}</p>' for line in
                    tco_words.left_out_lines(answer))  # fmt: skip
    return (
        form
        + f"<h2>{escape(labels.title(answer))}</h2>"
        + blends.applied(answer)
        + f'<figure class="chart">{charts.tco_svg(answer)}</figure>'
        + _sizes_tables(answer)
        + blends.blended(answer)
        + notes
        + f'<p class="note">{len(answer.rows)} candidates; every one: '
        f'<a href="/api/tco?{escape(_query_string(query))}">/api/tco</a></p>'
    )


def _sizes_tables(answer: Any) -> str:
    """The best option per strategy, one table per memory size of the GPU (each size ranked
    apart: `vs best` within it, as the command's tables); the first, the cheapest size's, is
    `#tco`."""
    head = ("strategy", "offer", "instances", "total USD", "USD/GPU-h", "PFLOP/$",
            *workloads_q.headers(answer), "vs best")  # fmt: skip
    groups = labels.sizes(labels.best_per_strategy(answer))
    parts = []
    for i, (gib, best) in enumerate(groups):
        cheapest = best[0]["total_usd"]
        rows = [
            (labels.strategy(r), labels.offer(r), str(r["instances"]),
             f"{r['total_usd']:,.2f}", f"{r['usd_per_gpu_hour']:.4f}",
             "" if r["pflop_per_usd"] is None else f"{r['pflop_per_usd']:,.1f}",
             *workloads_q.cells(r), tco_words.distance(r["total_usd"], cheapest))
            for r in best
        ]  # fmt: skip
        if len(groups) > 1:
            parts.append(f"<h3>{escape(labels.title(answer, gib))}</h3>")
        parts.append(table("tco" if i == 0 else f"tco-{i + 1}", head, rows))
    return "".join(parts)


def _per_node_field(query: api.Query) -> str:
    """GPUs per node (`per_node`): only machines of at least that many GPUs are candidates."""
    return _input("per_node", "GPUs per node", query, default="1", kind="number",
                  extra=' min="1" step="1"')  # fmt: skip


def _decide_form(query: api.Query, models: list[str], workloads: Workloads | None) -> str:
    from tracker.config import lazy

    work = sorted(lazy.workloads() if workloads is None else workloads)
    return (
        "<h1>Decide: total cost of a need</h1>"
        '<form id="tco-form" class="filters" method="get">'
        + _select("gpu", "GPU", models, query, default="H100")
        + _input("gpus", "GPUs", query, default="8", kind="number")
        + _per_node_field(query)
        + _input("months", "months", query, default="36", kind="number")
        + _input(
            "utilization",
            "utilization",
            query,
            default="1.0",
            kind="number",
            extra=' step="0.05" min="0.05" max="1"',
        )
        + _input("provider", "provider", query)
        + _switching_fields(query)
        + _select("workload", "workload", ["", *work], query).replace(">any<", ">none<", 1)
        + _input("amount", "units of work", query, kind="number", extra=' step="any" min="0"')
        + '<button type="submit">Compare</button></form>'
    )


# Switching and blending (docs/web.md, Decide): the form's fields; `blends` says the rest.


def _switching_fields(query: api.Query) -> str:
    """Migration cost, the provider rented from now, and the GPUs to reserve as a baseline."""
    from collectors import REGISTRY

    return (
        _input("migration_cost", "migration cost USD", query, kind="number",
               extra=' min="0" step="any" placeholder="0"')
        + _select("current", "current provider", ["", *sorted(REGISTRY)], query, blank="none")
        + _input("baseline", "baseline GPUs reserved", query, kind="number",
                 extra=' min="1" step="1" placeholder="none"')
    )  # fmt: skip


def _value(query: api.Query, name: str, default: str = "") -> str:
    values = query.get(name)
    return values[-1] if values else default


def _select(
    name: str,
    label: str,
    values: list[str],
    query: api.Query,
    default: str = "",
    blank: str = "any",
) -> str:
    chosen = _value(query, name, default)
    if chosen and chosen.lower() not in {v.lower() for v in values}:
        # A value from a link or a bookmark (since=2026-06-01): shown as asked, never as the
        # menu's first entry, which the browser would show otherwise.
        values = [*values, chosen]
    options = "".join(
        f'<option value="{escape(v)}"{" selected" if v.lower() == chosen.lower() else ""}>'
        f"{escape(v) or blank}</option>"
        for v in values
    )
    return f'<label>{label} <select name="{name}">{options}</select></label>'


def _input(
    name: str, label: str, query: api.Query, default: str = "", kind: str = "text", extra: str = ""
) -> str:
    value = escape(_value(query, name, default))
    return f'<label>{label} <input type="{kind}" name="{name}" value="{value}"{extra}></label>'


def _switch(name: str, label: str, query: api.Query) -> str:
    """A checkbox sent as `name=true` (history's --per-gpu, --usd), checked as the URL says."""
    on = _value(query, name, "").lower() in ("1", "true", "yes", "on")
    checked = " checked" if on else ""
    return f'<label><input type="checkbox" name="{name}" value="true"{checked}> {label}</label>'


def _query_string(query: api.Query) -> str:
    from urllib.parse import urlencode

    return urlencode([(k, v) for k, values in query.items() for v in values])
