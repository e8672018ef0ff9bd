"""The dashboard's pages rendered from Jinja2 templates (`templates/`, autoescaping on: every
value from the store is escaped by the template engine, never by hand), and the context of the
Now and Health panels.

The Now page sends its offers as data (one JSON array per offer in the page, not thousands of
rows of HTML: a tenth of the time to make and a third of the bytes), each price four ways (per
instance or per GPU-hour, native currency or USD); the page's script (`assets/app.js`) builds
the table from it (as text, never as HTML) and switches, sorts and filters without asking the
server again.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Any
from urllib.parse import quote_plus

import jinja2

from collectors.common import kind_label
from storage.query import QueryResult
from storage.reads.dashboard import Offers

if TYPE_CHECKING:
    from tracker.config.workloads import Workload, Workloads

PANELS = (
    ("/", "Now"),
    ("/history", "History"),
    ("/decide", "Decide"),
    ("/market", "Market"),
    ("/health", "Health"),
)
_FILTERS = (("gpu_model", "GPU"), ("kind", "price kind"), ("provider", "provider"),
            ("region", "region"))  # fmt: skip
_OFFER_COLUMNS = (
    ("GPU", "text"), ("memory GiB", "number"), ("kind", "text"), ("provider", "text"),
    ("region", "text"), ("instance type", "text"), ("GPUs", "number"), ("price", "number"),
    ("currency", "text"), ("PFLOP/$", "number"), ("interruption", "text"), ("state", "text"),
)  # fmt: skip
_ALERT_COLUMNS = ("fired_at", "rule", "subject", "channel", "status", "attempts", "last_error")


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    """The templates, loaded once per process; autoescaping on for every template."""
    return jinja2.Environment(
        loader=jinja2.PackageLoader("tracker.web", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )


def render(template: str, path: str, **context: Any) -> str:
    """A whole page: `template` in the frame, the navigation marking `path`."""
    title = context.pop("title", None) or dict(PANELS).get(path, "error")
    chosen = environment().get_template(template)
    return chosen.render(panels=PANELS, path=path, title=title, **context)


def error_page(path: str, message: str) -> str:
    return render("error.html", path, title="error", message=message)


def now_page(offers: Offers, read_at: datetime, workloads: Workloads | None = None) -> str:
    """Every current offer, sortable and filterable (see the module docstring), saying when
    the store was read (the page is kept and rebuilt in the background: `tracker.web.cache`).
    Each offer's USD per unit of each workload rides in data attributes too, for the column
    the workload select shows (`workloads`: the config's, None: the bundled ones)."""
    from tracker.config import lazy

    works = [w for _, w in sorted((lazy.workloads() if workloads is None else workloads).items())]
    rates = _Rates(works)
    cut = None
    if offers.total > len(offers.rows):
        cut = {"shown": len(offers.rows), "total": offers.total}
    return render(
        "now.html",
        "/",
        as_of=_seconds(read_at),
        selects=_selects(offers.rows),
        works=[w.name for w in works],
        cut=cut,
        columns=_OFFER_COLUMNS,
        rows=[_offer_row(row, rates) for row in offers.rows],
    )


class _Rates(dict[tuple[Any, Any], list[float | None]]):
    """Each workload's throughput per GPU model and memory, looked up once per pair."""

    def __init__(self, works: Sequence[Workload]) -> None:
        super().__init__()
        self.works = works

    def __missing__(self, key: tuple[Any, Any]) -> list[float | None]:
        found = self[key] = [w.per_gpu_hour(*key) for w in self.works]
        return found


@lru_cache(maxsize=16384)
def _quoted(value: str) -> str:
    # As urlencode quotes; providers, regions, kinds and types repeat across thousands of rows.
    return quote_plus(value, safe="")


def _offer_row(row: dict[str, Any], rates: _Rates) -> list[Any]:
    """One offer as the script reads it (`offerRow` in assets/app.js, in this order)."""
    kind = _kind(row)
    state = [w for w, on in (("sold out", row["available"] is False), ("stale", row["stale"]))
             if on]  # fmt: skip
    prices = (row["price_per_hour"], row["price_per_gpu_hour"], row["price_per_hour_usd"],
              row["price_per_gpu_hour_usd"])  # fmt: skip
    series = [(k, row[k]) for k in ("provider", "region", "zone", "instance_type") if row[k]]
    series += [("kind", row["price_kind"]), ("term", row["term_months"]), ("since", "90d")]
    usd = row["price_per_gpu_hour_usd"]
    query = "&".join(f"{k}={_quoted(str(v))}" for k, v in series if v is not None)
    return [
        " ".join(s.replace(" ", "-") for s in state),
        row["gpu_model"] or "unknown", _number(row["gpu_memory_gib"], 0), kind, row["provider"],
        "/".join(p for p in (row["region"], row["zone"]) if p), row["region"] or "none",
        "/history?" + query,
        row["instance_type"], _number(row["gpu_count"], 2), row["currency"],
        ["" if v is None else f"{v:.6g}" for v in prices], _number(usd, 4),
        "USD" if row["price_per_hour_usd"] is not None else "",
        _number(row["pflop_per_usd"], 1), row["interruption"] or "", ", ".join(state),
        # USD per unit of each workload (`data-unit<i>`, i its place in the select; empty where
        # the GPU has no throughput or the offer no USD price), shown for the one chosen.
        ["" if r is None or usd is None else f"{float(usd) / r:.6g}"
         for r in rates[row["gpu_model"], row["gpu_memory_gib"]]],
    ]  # fmt: skip


def _kind(row: dict[str, Any]) -> str:
    if row["price_kind"] != "reserved":
        return kind_label(row["price_kind"])
    term = row["term_months"]
    words = [f"reserved {term // 12}y" if term and term % 12 == 0 else f"reserved {term}mo"]
    words += [w.replace("_", "-") for w in (row["payment_option"], row["offering_class"]) if w]
    return " ".join(words)


def _selects(rows: Sequence[dict[str, Any]]) -> list[tuple[str, str, list[str]]]:
    """The Now panel's filters: per filtered column, the values its offers have."""
    selects = []
    for key, label in _FILTERS:
        if key == "kind":
            values = {_kind(r) for r in rows}
        else:
            blank = "unknown" if key == "gpu_model" else "none"
            values = {r[key] or blank for r in rows}
        selects.append((key, label, sorted(values)))
    return selects


def health_page(status: Any, alerts: QueryResult, total_alerts: int) -> str:
    """Per provider the last run, its result, the data's age and the next run; recent alerts."""
    now = datetime.now(UTC)
    head = ("provider", "last run", "result", "records", "changes", "data age", "next run",
            "error")  # fmt: skip
    rows = [
        (p.provider, _when(p.last_run), p.result or "never", _text(p.records),
         _text(p.changes), _age(p.age_s(now)),
         _when(p.next_run) if status.running else "", p.error or "")
        for p in status.providers
    ]  # fmt: skip
    alert_head = [c for c in alerts.columns if c in _ALERT_COLUMNS]
    at = [alerts.columns.index(c) for c in alert_head]
    return render(
        "health.html",
        "/health",
        running="a daemon is running" if status.running else "no daemon is running",
        head=head,
        rows=rows,
        shown=f"the latest {len(alerts.rows)} of {total_alerts}" if total_alerts else "none yet",
        alert_head=alert_head,
        alert_rows=[[_text(row[i]) for i in at] for row in alerts.rows],
    )


def _number(value: float | None, places: int) -> str:
    if value is None:
        return ""
    text = f"{value:,.{places}f}"
    return text.rstrip("0").rstrip(".") if places and "." in text and places == 2 else text


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, datetime):
        return _when(value)
    return str(value)


def _when(moment: datetime | None) -> str:
    return "" if moment is None else f"{moment.astimezone(UTC):%Y-%m-%d %H:%M} UTC"


def _seconds(moment: datetime) -> str:
    return f"{moment.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC"


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "no data"
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f} {unit}"
    return f"{seconds:.0f} s"
