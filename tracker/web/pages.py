"""The dashboard's page frame and its Now and Health panels, rendered on the server as HTML.

Every value from the store is escaped. The Now table carries each price four ways (per
instance or per GPU-hour, native currency or USD) in data attributes; the page's script
(`assets/app.js`) switches, sorts and filters without asking the server again.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from functools import lru_cache
from html import escape
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

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


def page(title: str, path: str, body: str) -> str:
    """The frame: the navigation, the panel, the page's own stylesheet and script."""
    here = ' class="here"'
    nav = "".join(
        f'<a href="{href}"{here if href == path else ""}>{name}</a>' for href, name in PANELS
    )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)} · gpu-tracker</title>"
        '<link rel="stylesheet" href="/assets/style.css"></head><body>'
        f"<header><strong>gpu-tracker</strong><nav>{nav}</nav></header>"
        f'<main id="panel">{body}</main>'
        '<script src="/assets/app.js" defer></script></body></html>'
    )


def problem(message: str) -> str:
    return f'<p class="problem" role="alert">{escape(message)}</p>'


def now_panel(offers: Offers, read_at: datetime, workloads: Workloads | None = None) -> str:
    """Every current offer, sortable and filterable (see the module docstring), saying when
    the store was read (the page is kept and rebuilt in the background: `tracker.web.cache`).
    Each offer's USD per unit of each workload rides in data attributes too, for the column
    the workload select shows (`workloads`: the config's, None: the bundled ones)."""
    from tracker.config import lazy

    works = [w for _, w in sorted((lazy.workloads() if workloads is None else workloads).items())]
    rows = [_offer_row(row, works) for row in offers.rows]
    cut = ""
    if offers.total > len(offers.rows):
        cut = (f'<p class="note">showing the cheapest {len(offers.rows)} of {offers.total} '
               "offers (per GPU-hour in USD)</p>")  # fmt: skip
    return (
        "<h1>Current offers</h1>"
        + f'<p class="note" id="as-of">as of {_seconds(read_at)}</p>'
        + _filters(offers.rows, works)
        + '<p class="note" id="shown"></p>'
        + cut
        + '<table id="offers" class="sortable"><thead><tr>'
        + "".join(f'<th data-type="{kind}">{name}</th>' for name, kind in _OFFER_COLUMNS)
        + '<th data-type="number" class="unit" title="USD per unit of work">USD/unit</th>'
        + "</tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
        + '<p class="note">sold out: listed but not available now; stale: the provider\'s '
        "last successful collection is overdue; interruption: AWS Spot Advisor band.</p>"
    )


_OFFER_COLUMNS = (
    ("GPU", "text"), ("memory GiB", "number"), ("kind", "text"), ("provider", "text"),
    ("region", "text"), ("instance type", "text"), ("GPUs", "number"), ("price", "number"),
    ("currency", "text"), ("PFLOP/$", "number"), ("interruption", "text"), ("state", "text"),
)  # fmt: skip


def _offer_row(row: dict[str, Any], works: Sequence[Workload]) -> str:
    kind = _kind(row)
    state = [w for w, on in (("sold out", row["available"] is False), ("stale", row["stale"]))
             if on]  # fmt: skip
    prices = {
        "h": row["price_per_hour"], "gh": row["price_per_gpu_hour"],
        "hu": row["price_per_hour_usd"], "ghu": row["price_per_gpu_hour_usd"],
    }  # fmt: skip
    data = "".join(f' data-{k}="{"" if v is None else f"{v:.6g}"}"' for k, v in prices.items())
    place = "/".join(p for p in (row["region"], row["zone"]) if p)
    series = [(k, row[k]) for k in ("provider", "region", "zone", "instance_type") if row[k]]
    series += [("kind", row["price_kind"]), ("term", row["term_months"]), ("since", "90d")]
    history = _escaped("/history?" + urlencode([(k, v) for k, v in series if v is not None]))
    filters = {"gpu_model": row["gpu_model"] or "unknown", "kind": kind,
               "provider": row["provider"], "region": row["region"] or "none"}  # fmt: skip
    attributes = "".join(f' data-f-{k}="{_escaped(str(v))}"' for k, v in filters.items())
    classes = " ".join(s.replace(" ", "-") for s in state)
    cells = (
        _td(row["gpu_model"] or "unknown"), _td(_number(row["gpu_memory_gib"], 0)), _td(kind),
        _td(row["provider"]), _td(place),
        f'<td><a href="{history}">{_escaped(row["instance_type"])}</a></td>',
        _td(_number(row["gpu_count"], 2)),
        f'<td class="price" data-currency="{_escaped(row["currency"])}"{data}>'
        f"{_number(row['price_per_gpu_hour_usd'], 4)}</td>",
        f'<td class="currency">{"USD" if row["price_per_hour_usd"] is not None else ""}</td>',
        _td(_number(row["pflop_per_usd"], 1)), _td(row["interruption"] or ""),
        _td(", ".join(state)), _unit_cell(row, works),
    )  # fmt: skip
    return f'<tr class="{classes}"{attributes}>{"".join(cells)}</tr>'


def _unit_cell(row: dict[str, Any], works: Sequence[Workload]) -> str:
    """USD per unit of each workload (`data-unit<i>`, i its place in the select; empty where
    the GPU has no throughput or the offer no USD price), shown for the one chosen."""
    usd = row["price_per_gpu_hour_usd"]
    rates = [w.per_gpu_hour(row["gpu_model"], row["gpu_memory_gib"]) for w in works]
    data = "".join(
        f' data-unit{i}="{"" if rate is None or usd is None else f"{float(usd) / rate:.6g}"}"'
        for i, rate in enumerate(rates)
    )
    return f'<td class="unit"{data}></td>'


def _kind(row: dict[str, Any]) -> str:
    if row["price_kind"] != "reserved":
        return kind_label(row["price_kind"])
    term = row["term_months"]
    words = [f"reserved {term // 12}y" if term and term % 12 == 0 else f"reserved {term}mo"]
    words += [w.replace("_", "-") for w in (row["payment_option"], row["offering_class"]) if w]
    return " ".join(words)


def _filters(rows: Sequence[dict[str, Any]], works: Sequence[Workload] = ()) -> str:
    selects = []
    for key, label in _FILTERS:
        column = {"kind": None}.get(key, key)
        values = sorted({_kind(r) if column is None else (r[key] or ("unknown" if key ==
                         "gpu_model" else "none")) for r in rows})  # fmt: skip
        options = "".join(f'<option value="{escape(v)}">{escape(v)}</option>' for v in values)
        selects.append(
            f'<label>{label} <select data-filter="{key}" name="{key}">'
            f'<option value="">any</option>{options}</select></label>'
        )
    return (
        '<form id="filters" class="filters" onsubmit="return false">'
        + "".join(selects)
        + '<label>search <input type="search" name="q" data-search placeholder="text"></label>'
        + '<label>price per <select name="per" data-per><option value="gpu">GPU-hour</option>'
        '<option value="instance">instance-hour</option></select></label>'
        + '<label>in <select name="money" data-money><option value="usd">USD</option>'
        '<option value="native">own currency</option></select></label>'
        + '<label>workload <select name="workload" data-workload><option value="">none</option>'
        + "".join(f'<option value="{escape(w.name)}">{escape(w.name)}</option>' for w in works)
        + "</select></label>"
        + '<label><input type="checkbox" data-hide="sold-out"> hide sold out</label>'
        + '<label><input type="checkbox" data-hide="stale"> hide stale</label>'
        + "</form>"
    )


def health_panel(status: Any, alerts: QueryResult, total_alerts: int) -> str:
    """Per provider the last run, its result, the data's age and the next run; recent alerts."""
    now = datetime.now(UTC)
    running = "a daemon is running" if status.running else "no daemon is running"
    head = ("provider", "last run", "result", "records", "changes", "data age", "next run",
            "error")  # fmt: skip
    body = [
        (p.provider, _when(p.last_run), p.result or "never", _text(p.records),
         _text(p.changes), _age(p.age_s(now)),
         _when(p.next_run) if status.running else "", p.error or "")
        for p in status.providers
    ]  # fmt: skip
    alert_head = [c for c in alerts.columns if c in _ALERT_COLUMNS]
    at = [alerts.columns.index(c) for c in alert_head]
    alert_rows = [[_text(row[i]) for i in at] for row in alerts.rows]
    shown = f"the latest {len(alerts.rows)} of {total_alerts}" if total_alerts else "none yet"
    return (
        f'<h1>Collection health</h1><p class="note">{running}</p>'
        + table("runs", head, body)
        + f'<h2>Alerts</h2><p class="note">{shown}</p>'
        + (table("alerts", alert_head, alert_rows) if alert_rows else "")
    )


_ALERT_COLUMNS = ("fired_at", "rule", "subject", "channel", "status", "attempts", "last_error")


def table(name: str, head: Iterable[str], rows: Iterable[Sequence[str]]) -> str:
    """A plain table of text cells (escaped here)."""
    header = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(_td(c) for c in row) + "</tr>" for row in rows)
    return f'<table id="{name}"><thead><tr>{header}</tr></thead><tbody>{body}</tbody></table>'


def _td(value: Any) -> str:
    return f"<td>{_escaped(str(value))}</td>"


@lru_cache(maxsize=8192)
def _escaped(text: str) -> str:
    # Providers, regions, kinds and instance types repeat across thousands of rows.
    return escape(text)


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
