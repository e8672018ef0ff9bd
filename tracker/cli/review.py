"""`gpu-tracker review`: the periodic review on demand, printed (table, text, JSON) or sent to
the review channels now."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from collectors.common import ConfigError, StoreError
from tracker import config as config_mod
from tracker.cli import common
from tracker.cli.alerts import print_report
from tracker.cli.common import EXIT_FAILED, EXIT_USAGE, fail, load_config
from tracker.config.daemon import parse_since

FORMATS = ("table", "json", "text")


@click.command()
@click.option(
    "--since",
    "since_text",
    metavar="LOOK-BACK",
    help="Compare with this long ago: 6mo, 180d, 26w, 1y (default: [review] since, 6mo).",
)
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@click.option(
    "--send",
    is_flag=True,
    help="Deliver the review to the review channels now instead of printing it.",
)
@click.pass_context  # fmt: skip
def review(ctx: click.Context, since_text: str | None, fmt: str, send: bool) -> None:
    """Per GPU model, the cheapest on-demand, spot and reserved offers now against a look-back
    ago, how the best reserved discount moved, what compute costs (PFLOP per USD, the cheapest
    3-year strategy), and the alerts that fired."""
    config = load_config(ctx)
    try:
        since = config.review.since if since_text is None else parse_since(since_text, "--since")
    except ConfigError as exc:
        fail(ctx, str(exc), EXIT_USAGE)
    if send:
        _send(ctx, config, since)
        return
    from tracker.review import build as review_mod  # the store and the alerts' digest

    now = datetime.now(UTC).astimezone(ZoneInfo(config.review.timezone))
    try:
        facts = review_mod.build(
            config.store_path,
            now,
            since,
            settings=config.review,
            timeout_s=config.store.query_timeout_s,
        ).to_dict()
    except StoreError as exc:
        common.read_failed(ctx, exc, "review")
    out: Console = common.out(ctx)
    if fmt == "json":
        out.print(json.dumps(facts, indent=2), markup=False, highlight=False, soft_wrap=True)
    elif fmt == "text":
        from alerts import digest

        out.print(digest.plain_text(facts), markup=False, highlight=False, soft_wrap=True, end="")
    else:
        print_table(out, facts)


def print_table(out: Console, facts: dict[str, Any]) -> None:
    """The review as rich tables: the prices per GPU model and kind, then the alerts."""
    from alerts import digest  # the review's wording, shared with the email and Slack
    from alerts.review import market

    for line in digest.intro(facts):
        out.print(line, markup=False, highlight=False)
    for line in market.lines(facts):  # how the market moved, before the offers' own moves
        out.print(line, markup=False, highlight=False)
    table = Table(title=escape(digest.title(facts)), caption_justify="left")
    for column in ("GPU", "", "then", "now", "move", "cheapest now", "cheapest then"):
        table.add_column(column, justify="right" if column in ("then", "now", "move") else "left")
    for model in facts["models"]:
        for i, row in enumerate(digest.rows(model)):
            table.add_row(escape(model["gpu_model"]) if i == 0 else "", *map(escape, row))
        table.add_section()
    table.caption = escape("USD per GPU-hour; * converted from its own currency at the [fx] rate")
    out.print(table)
    _print_moves(out, facts)
    _print_compute(out, facts)
    lines = digest.alert_lines(facts)
    if not facts["alerts"]:
        out.print(lines[0], markup=False, highlight=False)
        return
    alerts = Table(title=escape(lines[0]))  # it names rules, which config.toml names
    for column in ("rule", "alerts", "channels", "last fired", "last detail"):
        alerts.add_column(column, justify="right" if column == "alerts" else "left")
    for a in facts["alerts"]:
        alerts.add_row(escape(a["rule"]), str(a["count"]),
                       escape(digest.channel_words(a).removeprefix("to ")),
                       digest.minute(a["last_fired_at"]), escape(a["last_detail"]))  # fmt: skip
    out.print(alerts)


def _print_moves(out: Console, facts: dict[str, Any]) -> None:
    """The largest like-for-like moves, as a table after the prices (none without any)."""
    from alerts import digest
    from alerts.review import moves as move_words

    rows = move_words.rows(facts, digest.offer_words)
    if not rows:
        return
    table = Table(title=escape(move_words.TITLE.capitalize()), caption_justify="left",
                  caption=escape(" ".join(move_words.intro(facts))))  # fmt: skip
    for i, column in enumerate(move_words.COLUMNS):
        table.add_column(column, justify="right" if i >= 3 else "left")
    for row in rows:
        table.add_row(*map(escape, row))
    out.print(table)


def _print_compute(out: Console, facts: dict[str, Any]) -> None:
    """What compute costs, then and now, as a table after the prices (none in a store without
    those figures)."""
    from alerts import digest
    from alerts.review import compute as compute_words

    rows = digest.compute_rows(facts)
    if not rows:
        return
    words = compute_words.intro(facts)
    table = Table(title=escape(words[0]), caption=escape(" ".join(words[1:])),
                  caption_justify="left")  # fmt: skip
    for column in ("", "then", "now", "change", "best now", "best then"):
        table.add_column(column, justify="right" if column in ("then", "now", "change") else "left")
    for row in rows:
        table.add_row(*map(escape, row))
    out.print(table)


def _send(ctx: click.Context, config: config_mod.Config, since: Any) -> None:
    from tracker.review import build as review_mod

    err: Console = common.err(ctx)
    env = config_mod.environment()
    try:
        report = review_mod.send(config, env, sys.stdout, now=datetime.now(UTC), since=since)
    except StoreError as exc:
        fail(ctx, str(exc), EXIT_FAILED)
    if report.fired:
        names = ", ".join(e.channel for e in report.fired)
        err.print(f"review {report.fired[0].subject}: recorded for {names}", markup=False)
    else:
        err.print(
            "review: already recorded for this period on every review channel; nothing new "
            "(see `gpu-tracker alerts list`)",
            markup=False,
        )
    print_report(err, report)
    sys.exit(0 if report.ok else EXIT_FAILED)
