"""The History and Decide panels: a form of the command's options, then the answer as a chart
(SVG drawn on the server) and a table, rendered from `templates/`. The options are checked with
the parameters the commands' options are built from (`tracker.web.api.options`), so the page
refuses what the command line refuses."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

import click

from storage.reads import dashboard
from storage.reads.series import Interval, OfferKey, SeriesStats, Window
from tracker.charts import labels
from tracker.questions import history as history_q
from tracker.questions import tco as tco_q
from tracker.questions import tco_words
from tracker.questions import workloads as workloads_q
from tracker.web import api, blends, charts
from tracker.web.pages import render

if TYPE_CHECKING:
    from tracker.config.workloads import Workloads

WINDOWS = ("7d", "30d", "90d", "180d", "365d")  # 180d: the half-yearly review's period
_KINDS = ("", "on-demand", "spot", "reserved")
_STATS = ("series", "currency", "hours", "min", "mean", "p50", "p95", "max", "changes", "now")
Field = dict[str, Any]


def history_page(store: Path, query: api.Query, models: list[str], timeout_s: float) -> str:
    """Pick a GPU model or an offer and a window: step charts and the statistics beside."""
    page: dict[str, Any] = {"fields": _history_form(query, models), "hint": "", "window": "",
                            "message": "", "charts": []}  # fmt: skip
    if not query:
        page["hint"] = "Pick a GPU model (or an offer) and a window."
        return render("history.html", "/history", **page)
    try:
        given = api.options(api.HISTORY, query)
        window = history_q.window_of(given["since"], given["until"], datetime.now(UTC))
    except api.BadRequest as exc:
        return render("history.html", "/history", **{**page, "message": str(exc)})
    except click.UsageError as exc:
        return render("history.html", "/history", **{**page, "message": exc.message})
    filters = history_q.filters_from(given)
    price = history_q.price_from(given)  # per GPU-hour and in USD when the form says so
    found = dashboard.history(
        store, filters, window, lambda stats: _drawn(stats[: given["limit"]]),
        below=given["below"], price=price, timeout_s=timeout_s,
    )  # fmt: skip
    page["window"] = _window_note(window)
    if not found.stats:
        page["message"] = "no series has a price in that window (widen it, or loosen the filters)"
        return render("history.html", "/history", **page)
    shown = found.stats[: given["limit"]]
    rows = [
        (r.key.label, r.currency, f"{r.covered_hours:,.0f}", f"{r.min:.4f}", f"{r.mean:.4f}",
         f"{r.p50:.4f}", f"{r.p95:.4f}", f"{r.max:.4f}", str(r.changes),
         "" if r.current is None else f"{r.current:.4f}")
        for r in shown
    ]  # fmt: skip
    note = (f"{len(shown)} of {len(found.stats)} series (cheapest mean first); prices per "
            f"{_unit(price)}")  # fmt: skip
    page["charts"] = _history_charts(shown, found.steps, window, price)
    return render("history.html", "/history", **page, note=note, stats_head=_STATS, stats=rows)


def _window_note(window: Window) -> str:
    """The window the charts and statistics cover, as drawn (not as the form's menu names it)."""
    days = (window.until - window.since).total_seconds() / 86400
    span = f"{days:,.0f} days" if days >= 1 else f"{days * 24:,.1f} hours"
    return (
        f"window drawn: {window.since.astimezone(UTC):%Y-%m-%d %H:%M}"
        f" to {window.until.astimezone(UTC):%Y-%m-%d %H:%M} UTC ({span})"
    )


def _unit(price: str) -> str:
    return "GPU-hour" if "gpu_hour" in price else "instance-hour"


def _per_currency(shown: list[SeriesStats]) -> dict[str, list[SeriesStats]]:
    """The series shown, per currency (never two currencies on one axis)."""
    per_currency: dict[str, list[SeriesStats]] = {}
    for row in shown:
        per_currency.setdefault(row.currency, []).append(row)
    return per_currency


def _drawn(shown: list[SeriesStats]) -> tuple[OfferKey, ...]:
    """The series the charts draw: at most `charts.MAX_SERIES` of each currency."""
    rows = _per_currency(shown).values()
    return tuple(row.key for some in rows for row in some[: charts.MAX_SERIES])


def _history_charts(
    shown: list[SeriesStats],
    steps: dict[tuple[OfferKey, str], list[Interval]],
    window: Window,
    price: str,
) -> list[dict[str, Any]]:
    figures = []
    for currency, rows in _per_currency(shown).items():
        drawn = rows[: charts.MAX_SERIES]
        lines = [charts.Series(r.key.label, steps.get((r.key, r.currency), [])) for r in drawn]
        svg = charts.history_svg(lines, currency, window, len(rows) - len(drawn), _unit(price))
        figures.append({"currency": currency, "svg": svg})
    return figures


def _history_form(query: api.Query, models: list[str]) -> list[Field]:
    return [
        select("gpu", "GPU", ["", *models], query),
        text("provider", "provider", query),
        text("region", "region", query),
        text("instance_type", "instance type", query),
        select("kind", "price kind", list(_KINDS), query),
        select("since", "window", list(WINDOWS), query, default="30d"),
        text("limit", "series", query, default="12", kind="number"),
        switch("per_gpu", "per GPU-hour", query),
        switch("usd", "in USD", query),
    ]


def decide_page(
    store: Path,
    query: api.Query,
    models: list[str],
    timeout_s: float,
    workloads: Workloads | None = None,
) -> str:
    """The TCO of a need: the best option per strategy, as bars and as a table; with a
    baseline, the blended plans too; what of the switching options it applied; with a
    workload, its units and USD per unit (`workloads`: the config's, None: the bundled)."""
    page: dict[str, Any] = {"fields": _decide_form(query, models, workloads), "hint": "",
                            "message": "", "answer": None}  # fmt: skip
    if not query:
        page["hint"] = "Say what you need: a GPU, how many, for how long."
        return render("decide.html", "/decide", **page)
    try:
        given = api.options(api.TCO, query)
        need, work = api.work_need(tco_q.need_from(given), given, workloads)
    except api.BadRequest as exc:
        return render("decide.html", "/decide", **{**page, "message": str(exc)})
    baseline = given["baseline"]
    if (refused := tco_q.baseline_problem(baseline, need)) is not None:
        return render("decide.html", "/decide", **{**page, "message": refused})
    answer = dashboard.tco(store, need, baseline=baseline, timeout_s=timeout_s)
    if not answer.rows:
        page["message"] = tco_words.no_candidate(answer)
        return render("decide.html", "/decide", **page)
    answer = workloads_q.with_units(answer, work) if work else answer
    page["answer"] = {
        "title": labels.title(answer),
        "applied": blends.applied(answer),
        "chart": charts.tco_svg(answer),
        "head": ("strategy", "offer", "instances", "total USD", "USD/GPU-h", "PFLOP/$",
                 *workloads_q.headers(answer), "vs best"),
        "sizes": _sizes(answer),
        "blends": blends.blended(answer),
        "notes": tco_words.left_out_lines(answer),
        "count": len(answer.rows),
        "query": urlencode([(k, v) for k, values in query.items() for v in values]),
    }  # fmt: skip
    return render("decide.html", "/decide", **page)


def _sizes(answer: Any) -> list[dict[str, Any]]:
    """The best option per strategy, one table per memory size of the GPU (each size ranked
    apart: `vs best` within it, as the command's tables); the first, the cheapest size's, is
    `#tco`."""
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
        title = labels.title(answer, gib) if len(groups) > 1 else ""
        parts.append({"title": title, "id": "tco" if i == 0 else f"tco-{i + 1}", "rows": rows})
    return parts


def _decide_form(query: api.Query, models: list[str], workloads: Workloads | None) -> list[Field]:
    from collectors import REGISTRY
    from tracker.config import lazy

    work = sorted(lazy.workloads() if workloads is None else workloads)
    return [
        select("gpu", "GPU", models, query, default="H100"),
        text("gpus", "GPUs", query, default="8", kind="number"),
        # GPUs per node: only machines of at least that many GPUs are candidates.
        text("per_node", "GPUs per node", query, default="1", kind="number",
             extra=(("min", "1"), ("step", "1"))),
        text("months", "months", query, default="36", kind="number"),
        text("utilization", "utilization", query, default="1.0", kind="number",
             extra=(("step", "0.05"), ("min", "0.05"), ("max", "1"))),
        text("provider", "provider", query),
        # Switching and blending (docs/web.md, Decide): migration cost, the provider rented
        # from now, and the GPUs to reserve as a baseline; `blends` says the rest.
        text("migration_cost", "migration cost USD", query, kind="number",
             extra=(("min", "0"), ("step", "any"), ("placeholder", "0"))),
        select("current", "current provider", ["", *sorted(REGISTRY)], query, blank="none"),
        text("baseline", "baseline GPUs reserved", query, kind="number",
             extra=(("min", "1"), ("step", "1"), ("placeholder", "none"))),
        select("workload", "workload", ["", *work], query, blank="none"),
        text("amount", "units of work", query, kind="number",
             extra=(("step", "any"), ("min", "0"))),
    ]  # fmt: skip


def _value(query: api.Query, name: str, default: str = "") -> str:
    values = query.get(name)
    return values[-1] if values else default


def select(
    name: str,
    label: str,
    values: list[str],
    query: api.Query,
    default: str = "",
    blank: str = "any",
) -> Field:
    """A menu; a value from a link or a bookmark (since=2026-06-01) is added and shown as
    asked, never as the menu's first entry, which the browser would show otherwise."""
    chosen = _value(query, name, default)
    if chosen and chosen.lower() not in {v.lower() for v in values}:
        values = [*values, chosen]
    return {"type": "select", "name": name, "label": label, "values": values,
            "chosen": chosen, "blank": blank}  # fmt: skip


def text(
    name: str,
    label: str,
    query: api.Query,
    default: str = "",
    kind: str = "text",
    extra: tuple[tuple[str, str], ...] = (),
) -> Field:
    value = _value(query, name, default)
    return {"type": "input", "name": name, "label": label, "value": value, "kind": kind,
            "extra": extra}  # fmt: skip


def switch(name: str, label: str, query: api.Query) -> Field:
    """A checkbox sent as `name=true` (history's --per-gpu, --usd), checked as the URL says."""
    on = _value(query, name, "").lower() in ("1", "true", "yes", "on")
    return {"type": "switch", "name": name, "label": label, "on": on}
