"""The periodic review as an alert event, and its digest in plain text.

A review goes through the alert event log like any alert (pending until a channel accepted it,
retried with backoff, never sent twice after a restart), as one event per channel with rule
`review`, the period as its subject and the whole digest as its facts (kind `review`).
Recording is idempotent per (rule, subject, channel): a daemon that catches up on a review it
already recorded before a restart records nothing.

The digest is a JSON-able dict built by `tracker.review.build`; every channel renders it from here
(plain text) or `alerts.digest_render` (Slack blocks, HTML), so a retry sends what was true when
the review was made.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from alerts.message import amount
from alerts.notify import AlertEvent
from alerts.review import compute as compute_words
from alerts.review import market
from alerts.review import moves as move_words
from collectors.common import kind_label
from storage.review import LOCK_WAIT_S, record_once

RULE = "review"
KIND = "review"
DASH = "—"
OTHER_OFFER = "other offer"  # the move column where the cheapest offer then is not the one now


def is_review(events: Sequence[AlertEvent]) -> bool:
    """True for a batch that is one review (what the notifiers render as a digest)."""
    return len(events) == 1 and events[0].facts.get("kind") == KIND


def record(
    store_path: Path | str,
    channels: Sequence[str],
    subject: str,
    facts: dict[str, Any],
    now: datetime,
    *,
    wait_s: float = LOCK_WAIT_S,
) -> list[AlertEvent]:
    """Store the review as one pending event per channel, due now, unless that channel already
    has this subject; the events inserted."""
    detail = summary(facts)
    inserted = record_once(
        store_path, rule=RULE, subject=subject, channels=channels, detail=detail,
        facts=json.dumps(facts, sort_keys=True), now=now, wait_s=wait_s,
    )  # fmt: skip
    return [
        AlertEvent(event_id, RULE, subject, now, None, None, channel, detail, facts)
        for event_id, channel in inserted
    ]


def title(facts: dict[str, Any]) -> str:
    """`GPU price review 2026-06-01..2026-12-01`."""
    return f"GPU price review {facts['period']}"


def summary(facts: dict[str, Any]) -> str:
    """The one line stored as the event's detail."""
    fired = sum(a["count"] for a in facts["alerts"])
    return (
        f"{title(facts)} (against {facts['since']} ago): {len(facts['models'])} GPU models, "
        f"{fired} alert{'s' if fired != 1 else ''} fired"
    )


def intro(facts: dict[str, Any]) -> list[str]:
    """What the numbers are, and what is missing from them."""
    lines = [
        f"Now ({_day(facts['now'])}) against {facts['since']} ago ({_day(facts['then'])}), per GPU "
        "model and price kind:",
        "the cheapest offer per GPU-hour in USD (not stale, not sold out); * = priced in another "
        "currency, converted at its [fx] rate.",
        f"move: how the price of that one offer moved; '{OTHER_OFFER}': the cheapest then and "
        "now are two offers, whose prices make no move; each one's own price on the other side "
        "is named below.",
    ]
    if followed := facts.get("gpus"):  # absent (every model) from reviews stored before it
        lines.append(_followed(followed, {m["gpu_model"] for m in facts["models"]}))
    prices_at = facts.get("prices_at", facts["now"])  # absent from reviews stored before it
    if _day(prices_at) != _day(facts["now"]):
        lines.append(
            f"Sent late: the period and its alerts end when the review was due "
            f"({minute(facts['now'])}); the 'now' prices are those of {minute(prices_at)}."
        )
    if not facts["has_then"]:
        start = facts["history_from"]
        lines.append(
            f"The store has no prices from {_day(facts['then'])}: "
            + (f"its history starts {_day(start)}." if start else "it holds no prices yet.")
            + " Nothing to compare with; the 'then' column stays empty."
        )
    for side in ("now", "then"):
        left_out = facts["unrated"][side]
        if left_out:
            counts = ", ".join(f"{n} in {c}" for c, n in sorted(left_out.items()))
            lines.append(f"Left out {side} (no [fx] rate for their currency): {counts}.")
    return lines


def _followed(followed: list[str], shown: set[str]) -> str:
    """`Only the GPU models followed ([review] gpus): A100, H100; no offer of H100 now or then.`"""
    line = f"Only the GPU models followed ([review] gpus): {', '.join(followed)}"
    if missing := [g for g in followed if g not in shown]:
        line += f"; no offer of {', '.join(missing)} now or then"
    return line + "."


def rows(model: dict[str, Any]) -> list[tuple[str, str, str, str, str, str]]:
    """One GPU model's lines: label, then, now, move, and which offers those are (now, then:
    `the same offer` when it did not change)."""
    lines = []
    for k in model["kinds"]:
        label = kind_label(k["price_kind"])
        lines.append((label, _price(k["then"]), _price(k["now"]), _move(k, "move_pct", "%"),
                      *_where(k)))  # fmt: skip
    d = model.get("reserved_discount")
    if d:
        lines.append(("reserved discount", _pct(d["then"]), _pct(d["now"]),
                      _move(d, "points", " pp"), *_where(d)))  # fmt: skip
    return lines


def model_table(model: dict[str, Any]) -> list[str]:
    """One GPU model as aligned lines: per kind then, now, move; then where each one is."""
    return table(model["gpu_model"], "move", rows(model))


def compute_rows(facts: dict[str, Any]) -> list[tuple[str, str, str, str, str, str]]:
    """Per GPU model its PFLOP-per-dollar and 3-year-cost rows (`alerts.review.compute`)."""
    label = compute_words.cost_label(facts.get("need"))
    return [row for m in facts["models"] for row in compute_words.rows(m, offer_words, label)]


def compute_block(facts: dict[str, Any]) -> list[str]:
    """What compute costs then and now, as aligned lines (none for a review from before it)."""
    lines = compute_rows(facts)
    if not lines:
        return []
    return [*compute_words.intro(facts), "", *table(compute_words.TITLE, "change", lines)]


def table(title: str, move: str, lines: list[tuple[str, str, str, str, str, str]]) -> list[str]:
    """Rows as aligned lines: label, then, now, `move`; then where each one is."""
    head = [(title, "then", "now", move), *(r[:4] for r in lines)]
    widths = [max(len(r[i]) for r in head) for i in range(4)]
    text = [
        "  ".join([r[0].ljust(widths[0]), *(c.rjust(widths[i + 1]) for i, c in enumerate(r[1:]))])
        for r in head
    ]
    width = max((len(r[0]) for r in lines), default=0)
    for label, *_, now, then in lines:
        text.append(f"  {label.ljust(width)}  now:  {now}")
        text.append(f"  {' ' * width}  then: {then}")
    return text


def alert_lines(facts: dict[str, Any]) -> list[str]:
    """The alerts that fired in the period, one line per rule."""
    alerts = facts["alerts"]
    if not alerts:
        return [f"No alerts fired since {_day(facts['then'])}."]
    total = sum(a["count"] for a in alerts)
    rules = f"{len(alerts)} rule{'s' if len(alerts) != 1 else ''}"
    lines = [f"Alerts fired since {_day(facts['then'])}: {total} ({rules})"]
    for a in alerts:
        lines.append(
            f"  {a['rule']}: {a['count']}x{' ' if a['channels'] else ', '}{channel_words(a)}, last "
            f"{minute(a['last_fired_at'])}: {a['last_detail']}"
        )
    return lines


def channel_words(alert: dict[str, Any]) -> str:
    """`to console, slack`, and the channels that have not accepted some of them: `to console;
    not delivered: slack (1 failed, 2 pending)`."""
    words = f"to {', '.join(alert['channels'])}" if alert["channels"] else ""
    missed: dict[str, list[str]] = {}
    for u in alert.get("undelivered", []):  # absent from reviews stored before it
        missed.setdefault(u["channel"], []).append(f"{u['count']} {u['status']}")
    if missed:
        listed = ", ".join(f"{c} ({', '.join(counts)})" for c, counts in missed.items())
        words += ("; " if words else "") + f"not delivered: {listed}"
    return words


def plain_text(facts: dict[str, Any]) -> str:
    """The whole digest as plain text (console, email, `gpu-tracker review --format text`)."""
    blocks = [[title(facts), *intro(facts)]]
    if opening := market.lines(facts):  # the market first, then the offers' own moves
        blocks.append(opening)
    if not facts["models"]:
        blocks.append(["No prices to show, now or then."])
    blocks.extend(model_table(m) for m in facts["models"])
    if moved := move_words.block(facts, offer_words):
        blocks.append(moved)
    if compute := compute_block(facts):
        blocks.append(compute)
    blocks.append(alert_lines(facts))
    return "\n\n".join("\n".join(b) for b in blocks) + "\n"


def offer_words(offer: dict[str, Any] | None) -> str:
    """`aws us-east-1 (use1-az1) p4d.24xlarge`, the term, payment and class of a reserved one
    (`, 3y all-upfront standard`), the native price of a converted one."""
    if offer is None:
        return DASH
    # RunPod prices no region: its offers read `runpod community/...`, never `runpod None`.
    words = " ".join(p for p in (offer["provider"], offer["region"]) if p)
    words += f" ({offer['zone']})" if offer.get("zone") else ""
    words += f" {offer['instance_type']}"
    term = offer.get("term_months")
    if term:
        words += f", {term // 12}y" if term % 12 == 0 else f", {term}mo"
        if offer.get("payment_option"):
            words += " " + str(offer["payment_option"]).replace("_", "-")
    if offer.get("offering_class"):  # AWS prices a standard and a convertible RI apart
        words += f" {offer['offering_class']}"
    if "discount_pct" in offer:  # both prices in one currency: nothing converted
        price, on_demand = amount(offer["price"]), amount(offer["on_demand_price"])
        return f"{words}: {price} vs on-demand {on_demand} {offer['currency']}/GPU-h"
    if offer["currency"] != "USD":
        words += f" ({amount(offer['price'])} {offer['currency']}/GPU-h, converted)"
    return words


def _where(move: dict[str, Any]) -> tuple[str, str]:
    """Which offers are cheapest now and then; where they are two, each one's own price on the
    other side and how it moved."""
    now, then = move["now"], move["then"]
    if now is not None and then is not None and _identity(now) == _identity(then):
        return offer_words(now), "the same offer"
    now_words, then_words = offer_words(now), offer_words(then)
    if move.get("same_offer") is False and "now_offer_then" in move:  # reviews from before it
        now_words += "; " + _across(move["now_offer_then"], move["now_offer_move_pct"], "then")
        then_words += "; " + _across(move["then_offer_now"], move["then_offer_move_pct"], "now")
    return now_words, then_words


def _across(offer: dict[str, Any] | None, move_pct: float | None, when: str) -> str:
    """`was 2.10 then (-14.3%)`, `is 6.88 now (-44.0%)`, `no price then`."""
    if offer is None:
        return f"no price {when}"
    verb = "was" if when == "then" else "is"
    if offer.get("price_usd") is None:  # no rate on that side: its own price, unranked
        return f"{verb} {amount(offer['price'])} {offer['currency']} {when}"
    return f"{verb} {_price(offer).strip()} {when} ({_signed(move_pct, '%')})"


def _move(move: dict[str, Any], key: str, unit: str) -> str:
    if move.get("same_offer") is False:  # two offers' prices are no move
        return OTHER_OFFER
    return _signed(move[key], unit)


def _identity(offer: dict[str, Any]) -> tuple[Any, ...]:
    keys = ["provider", "region", "zone", "instance_type", "term_months", "payment_option",
            "offering_class", "currency"]  # fmt: skip
    if "discount_pct" in offer:  # its prices are not in the table: changed ones are spelled out
        keys += ["price", "on_demand_price"]
    return tuple(offer.get(k) for k in keys)


def _price(offer: dict[str, Any] | None) -> str:
    if offer is None or offer.get("price_usd") is None:
        return DASH
    return amount(offer["price_usd"]) + ("*" if offer["currency"] != "USD" else " ")


def _pct(offer: dict[str, Any] | None) -> str:
    return DASH if offer is None else f"{offer['discount_pct']:.1f}%"


def _signed(value: float | None, unit: str) -> str:
    # A move too small to show is +0.0, not -0.0.
    return DASH if value is None else f"{round(value, 1) + 0.0:+.1f}{unit}"


def _day(iso: str) -> str:
    return iso[:10]


def minute(iso: str) -> str:
    return datetime.fromisoformat(iso).strftime("%Y-%m-%d %H:%M %Z").strip()
