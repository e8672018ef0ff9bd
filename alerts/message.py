"""What an alert says, in words: the stored `detail`, the facts a message is drawn from, and
the plain-text table of alternatives every channel shows.

The facts are computed once, when the alert fires, and stored with the event: a retry days
later sends what was true when it fired, not what is true when the channel came back.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any

from alerts.notify import AlertEvent
from alerts.rules import Rule
from collectors.common import duration_words, kind_label


def facts(rule: Rule, row: dict[str, Any]) -> dict[str, Any]:
    """The JSON-able facts of one fired subject (an `alert_obs` row with its alternatives)."""
    currency = row["price_currency"]
    unit = None if currency is None else f"{currency}/{'h' if rule.per == 'instance' else 'GPU-h'}"
    result: dict[str, Any] = {
        "kind": rule.kind,
        "headline": _headline(rule, row, unit),
        "offer": offer_line(row),
        "unit": unit,
        "price": row["price"],
        "reference": row["reference"],
        "converted_from": row["offer_currency"] if row["converted"] else None,
        "alternatives": [dict(a) for a in row.get("alternatives") or []],
    }
    result["value_text"], result["threshold_text"] = _value_texts(rule, row, unit)
    result["where"] = where_words(row)
    result["instance"] = instance_words(row) if row["instance_type"] else None
    for key in ("provider", "region", "zone", "instance_type", "price_kind", "gpu_model"):
        result[key] = row[key]
    return result


def detail(f: dict[str, Any]) -> str:
    """The one line stored in alert_events.detail."""
    return f"{f['headline']}: {f['offer']}" if f["offer"] else str(f["headline"])


def offer_line(row: dict[str, Any]) -> str:
    """`aws us-east-1 (use1-az4) p5.48xlarge, 8x H100, spot` (empty for a provider alert)."""
    if row["instance_type"] is None:
        return ""
    return f"{where_words(row)} {instance_words(row)}"


def where_words(row: dict[str, Any]) -> str:
    """`aws us-east-1 (use1-az4)`; the provider alone for a provider alert."""
    if row["region"] is None:
        return str(row["provider"] or "the market")
    return f"{row['provider']} {row['region']}" + (f" ({row['zone']})" if row["zone"] else "")


def instance_words(row: dict[str, Any]) -> str:
    """`p5.48xlarge, 8x H100, spot`, and where the price was converted from."""
    gpus = f"{number(row['gpu_count'])}x {row['gpu_model']}"
    words = f"{row['instance_type']}, {gpus}, {kind_words(row)}"
    if row["converted"]:
        words += f" (priced in {row['offer_currency']}, converted to USD)"
    return words


def kind_words(row: dict[str, Any]) -> str:
    """`spot`, `on-demand`, `reserved 3y all-upfront`."""
    words = [kind_label(str(row["price_kind"]))]
    term = row.get("term_months")
    if term:
        words.append(f"{term // 12}y" if term % 12 == 0 else f"{term}mo")
    if row.get("payment_option"):
        words.append(str(row["payment_option"]).replace("_", "-"))
    return " ".join(words)


def amount(value: Any) -> str:
    """A price as people write it: two decimals at least, six at most, no float noise."""
    if value is None:
        return "?"
    whole, _, fraction = f"{Decimal(str(round(float(value), 6))):f}".partition(".")
    return f"{whole}.{fraction.rstrip('0').ljust(2, '0')}"


def number(value: Any) -> str:
    """A count or percent without trailing zeros: `8`, `0.5`, `12.5`."""
    if value is None:
        return "?"
    return f"{Decimal(str(round(float(value), 6))).normalize():f}"


def alternatives_table(f: dict[str, Any]) -> list[str]:
    """The three best alternatives as aligned plain-text lines (no links), or none; a column
    names the currency of those converted to the alert's (only when there is one)."""
    alternatives = f.get("alternatives") or []
    rows = [
        (
            a["provider"],
            # RunPod's prices and a Vultr plan listed nowhere name no region: an empty cell
            (a["region"] or "") + (f" ({a['zone']})" if a.get("zone") else ""),
            a["instance_type"],
            amount(a["price"]),
            a.get("converted_from") or "",  # absent from alerts stored before it was kept
        )
        for a in alternatives
    ]
    if not rows:
        return []
    header = ("provider", "region", "instance", f["unit"] or "price", "converted from")
    columns = 5 if any(r[4] for r in rows) else 4
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(columns)]
    return [
        "  ".join(
            cell.rjust(widths[i]) if i == 3 else cell.ljust(widths[i])
            for i, cell in enumerate(r[:columns])
        ).rstrip()
        for r in [header, *rows]
    ]


def plain_text(events: Sequence[AlertEvent]) -> str:
    """Every alert of one message as plain text: the line, the numbers, the alternatives."""
    blocks = []
    for event in events:
        f = event.facts
        lines = [f"{event.rule}: {f.get('headline') or event.detail}"]
        if f.get("offer"):
            lines.append(f"  {f['offer']}")
        if f.get("value_text"):
            lines.append(f"  value {f['value_text']}, threshold {f['threshold_text']}")
        table = alternatives_table(f)
        if table:
            lines.append("  Best alternatives:")
            lines.extend(f"    {line}" for line in table)
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"


def subject_line(events: Sequence[AlertEvent]) -> str:
    """`3 GPU price alerts: cheap-h100-spot, aws-stale`."""
    names = list(dict.fromkeys(e.rule for e in events))
    shown = ", ".join(names[:4]) + (f" (+{len(names) - 4} more)" if len(names) > 4 else "")
    return f"{len(events)} GPU price alert{'s' if len(events) != 1 else ''}: {shown}"


def test_event(channel: str, now: datetime) -> AlertEvent:
    """What `gpu-tracker alerts test` sends: clearly a test, through the real message path."""
    headline = "test message from gpu-tracker: alerts sent to this channel arrive"
    return AlertEvent(0, "test", "test", now, None, None, channel, headline, {"headline": headline})


def _value_texts(rule: Rule, row: dict[str, Any], unit: str | None) -> tuple[str, str]:
    value, t = row["value"], rule.threshold
    comparison = rule.spec.comparison
    if rule.index is not None and rule.index.condition == "move":
        return _percent(100 * value), _percent(100 * rule.index.value)
    if comparison == "stale":
        hours = number(rule.window_s / 3600) if rule.window_s else "?"
        return ("never" if value is None else f"{value:.1f} h", f"{hours} h")
    if comparison == "low":
        return f"{amount(value)} {unit}", f"{amount(row['reference'])} {unit} (lowest before)"
    if rule.spec.unit == "price":
        return f"{amount(value)} {unit}", f"{amount(t)} {unit}"
    return f"{float(value):.1f}%", f"{number(t)}%"


def _percent(value: Any) -> str:
    return f"{float(value):.1f}%"


def _headline(rule: Rule, row: dict[str, Any], unit: str | None) -> str:
    value, ref, t = row["value"], row["reference"], rule.threshold
    price = f"{amount(row['price'])} {unit}"
    kind = rule.kind
    if kind == "spot_price_below":
        return f"spot price {price} is at or under {amount(t)} {unit}"
    if kind in ("spot_discount_above", "reserved_discount_above", "reserved_discount_below"):
        bound = "at least" if kind.endswith("above") else "at most"
        return (
            f"{kind_words(row)} is {_percent(value)} under on-demand "
            f"({amount(row['price'])} vs {amount(ref)} {unit}), {bound} {number(t)}%"
        )
    if kind == "price_change":
        moved = "fell" if value < 0 else "rose"
        return (
            f"{kind_words(row)} price {moved} {_percent(abs(value))} in "
            f"{duration_words(rule.window_s)} ({amount(ref)} -> {price}), at least {number(t)}%"
        )
    if kind == "index" and rule.index is not None:
        return index_headline(rule, row)
    if kind == "new_low":
        return (
            f"new {duration_words(rule.window_s)} low for {row['gpu_model']} {kind_words(row)}: "
            f"{price} (lowest before: {amount(ref)})"
        )
    window = duration_words(rule.window_s)
    if value is None:
        return f"{row['provider']}: no successful collection yet (limit {window})"
    return f"{row['provider']}: no successful collection for {value:.1f} h (limit {window})"


def index_headline(rule: Rule, row: dict[str, Any]) -> str:
    """`H100 80GB on-demand market index (all) 2.5 USD/GPU-h is at or under 2.6 USD/GPU-h`."""
    assert rule.index is not None
    settings = rule.index
    what = row["subject"].split("/", 2)[1]
    name = f"{what} {kind_label(settings.price_kind)} market index ({settings.segment})"
    value = f"{amount(row['price'])} USD/GPU-h"
    if settings.condition == "move":
        moved = "fell" if row["value"] < 0 else "rose"
        return (
            f"{name} {moved} {_percent(abs(100 * row['value']))} in "
            f"{duration_words(rule.window_s)} ({amount(row['reference'])} -> {value}), at least "
            f"{_percent(100 * settings.value)}"
        )
    bound = "at or under" if settings.condition == "below" else "at or over"
    return f"{name} {value} is {bound} {amount(settings.value)} USD/GPU-h"
