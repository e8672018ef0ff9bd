"""The periodic review's digest for Slack (Block Kit) and for the HTML part of an email.

Slack allows 50 blocks a message and 3000 characters in a text: a header, the intro, one section
per GPU model (a monospace table), the alerts and a footer; GPU models beyond what fits are
counted in the footer, and a text that would be too long is cut at a line, saying so.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from alerts.digest import (
    alert_lines,
    compute_rows,
    intro,
    model_table,
    offer_words,
    rows,
    table,
    title,
)
from alerts.review import compute as compute_words
from alerts.review import market
from alerts.review import moves as move_words

MAX_BLOCKS = 50
MAX_TEXT = 3000
_FIXED_BLOCKS = 4  # header, intro, alerts, footer; and what compute costs where there is any
_CUT = "\n… (cut here: gpu-tracker review shows all)"


def slack_message(facts: dict[str, Any]) -> dict[str, Any]:
    """The Block Kit payload of one review."""
    models, compute, opening = facts["models"], compute_rows(facts), market.lines(facts)
    moved = move_words.block(facts, offer_words)
    room = MAX_BLOCKS - _FIXED_BLOCKS - (1 if compute else 0) - (1 if moved else 0)
    room -= 1 if opening else 0
    shown, more = models[:room], len(models) - room
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": title(facts)[:150]}},
        _section("\n".join(_escape(line) for line in intro(facts))),
    ]
    if opening:  # how the market moved, before the offers' own moves
        blocks.append(_section(_escape(opening[0]), code="\n".join(opening[1:])))
    for model in shown:
        lines = model_table(model)
        blocks.append(_section(f"*{_escape(model['gpu_model'])}*", code="\n".join(lines)))
    if not models:
        blocks.append(_section("No prices to show, now or then."))
    if moved:
        words, code = _escape(moved[0]), "\n".join(moved[2:])
        blocks.append(_section(words, code=code))
    if compute:
        words = "\n".join(_escape(line) for line in compute_words.intro(facts))
        code = "\n".join(table(compute_words.TITLE, "change", compute))
        blocks.append(_section(words, code=code))
    blocks.append(_section("\n".join(_escape(line) for line in alert_lines(facts))))
    footer = f"gpu-tracker review, against {facts['since']} ago"
    if more > 0:
        footer += f"; +{more} more GPU models: `gpu-tracker review`"
    blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": footer}]})
    return {"text": title(facts), "blocks": blocks}


def html_body(facts: dict[str, Any], pictures: Sequence[tuple[str, str]] = ()) -> str:
    """The HTML part of the email: the same content as the plain text, as tables; `pictures`
    (content id, alt text) shown after what compute costs, as `cid:` images."""
    parts = [f"<h2>{html.escape(title(facts))}</h2>"]
    parts.extend(f"<p>{html.escape(line)}</p>" for line in intro(facts))
    if opening := market.rows(facts):  # how the market moved, before the offers' own moves
        parts.append(f"<h3>{html.escape(market.TITLE)}</h3>")
        parts.append(_html_table(["", "then", "now", "move"], opening))
    for model in facts["models"]:
        parts.append(f"<h3>{html.escape(model['gpu_model'])}</h3>")
        parts.append(_html_table(["", "then", "now", "move", "cheapest now", "cheapest then"],
                                 rows(model)))  # fmt: skip
    if moved := move_words.rows(facts, offer_words):
        parts.append(f"<h3>{html.escape(move_words.TITLE.capitalize())}</h3>")
        parts.extend(f"<p>{html.escape(line)}</p>" for line in move_words.intro(facts))
        parts.append(_html_table(list(move_words.COLUMNS), moved, right=(3, 4, 5, 6)))
    if lines := compute_rows(facts):
        words = compute_words.intro(facts)
        heading, _, rest = words[0].partition("; ")  # the heading, then what `change` means
        parts.append(f"<h3>{html.escape(heading)}</h3>")
        parts.extend(
            f"<p>{html.escape(line)}</p>" for line in [rest[:1].upper() + rest[1:], *words[1:]]
        )
        parts.append(_html_table(["", "then", "now", "change", "best now", "best then"], lines))
    parts.extend(
        f"<p><img src='cid:{html.escape(cid)}' alt='{html.escape(alt)}' "
        "style='max-width: 100%'></p>"
        for cid, alt in pictures
    )
    alerts = alert_lines(facts)
    parts.append(f"<h3>{html.escape(alerts[0])}</h3>")
    if len(alerts) > 1:
        parts.append("<ul>" + "".join(f"<li>{html.escape(a.strip())}</li>" for a in alerts[1:]))
        parts.append("</ul>")
    body = "\n".join(parts)
    return (
        f"<!DOCTYPE html>\n<html><body style='font-family: sans-serif'>\n{body}\n</body></html>\n"
    )


def _html_table(
    header: list[str], body: Sequence[tuple[str, ...]], right: Sequence[int] = (1, 2, 3)
) -> str:
    head = "".join(f"<th align='left'>{html.escape(h)}</th>" for h in header)
    lines = [
        "<tr>"
        + "".join(
            f"<td align='{'right' if i in right else 'left'}'>{html.escape(cell)}</td>"
            for i, cell in enumerate(row)
        )
        + "</tr>"
        for row in body
    ]
    return f"<table cellpadding='4'><tr>{head}</tr>{''.join(lines)}</table>"


def _section(text: str, *, code: str | None = None) -> dict[str, Any]:
    """A mrkdwn section; `code` goes in a monospace block, cut at a line to fit MAX_TEXT."""
    if code is not None:
        room = MAX_TEXT - len(text) - len(_CUT) - 8
        text = f"{text}\n```{_cut(_escape(code), room)}```"
    else:
        text = _cut(text, MAX_TEXT - len(_CUT))
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def _cut(text: str, room: int) -> str:
    """`text`, or as many of its lines as fit in `room` and a note that it was cut."""
    if len(text) <= room:
        return text
    end = text.rfind("\n", 0, room)
    return text[: end if end > 0 else room] + _CUT


def _escape(text: str) -> str:
    # The three characters Slack's mrkdwn reserves (links and mentions).
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
