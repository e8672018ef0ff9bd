"""`gpu-tracker alerts ...`: check the rules now, send a test message, list rules and events.

Also how `collect` reports the alerts run that follows it. Secrets never reach the screen: the
channels are described by the variable that holds their secret, not by its value.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from collectors.common import ConfigError, StoreError, duration_words
from tracker import config as config_mod
from tracker.cli import common
from tracker.cli.common import EXIT_FAILED, EXIT_USAGE, fail
from tracker.cli.common import load_config as _config
from tracker.cli.common import say as _say

if TYPE_CHECKING:  # the alerts machinery is imported by these commands when they run
    from alerts import AlertReport, Rule
    from alerts.settings import AlertSettings


@click.group()
def alerts() -> None:
    """Alert rules: check them now, send a test message, list rules and recent alerts."""


@alerts.command()
@click.option(
    "--dry-run", is_flag=True, help="Print what would fire; change nothing, send nothing."
)
@click.pass_context
def check(ctx: click.Context, dry_run: bool) -> None:
    """Evaluate the alert rules over the store now and deliver what is due."""
    from tracker import alerting

    config = _config(ctx)
    try:
        report = alerting.check(config, config_mod.environment(), sys.stdout, dry_run=dry_run)
    except StoreError as exc:
        fail(ctx, str(exc), EXIT_FAILED)
    print_report(common.err(ctx), report)
    sys.exit(0 if report.ok else EXIT_FAILED)


@alerts.command("test")
@click.option(
    "--channel",
    type=click.Choice(["slack", "email", "console"]),
    required=True,
    help="The channel to send a test message through.",
)
@click.pass_context
def test_message(ctx: click.Context, channel: str) -> None:
    """Send a test message through one channel."""
    from alerts import ChannelError
    from tracker import alerting

    config = _config(ctx)
    try:
        alerting.send_test(config, config_mod.environment(), channel, sys.stdout)
    except ConfigError as exc:
        fail(ctx, str(exc), EXIT_USAGE)
    except ChannelError as exc:
        fail(ctx, str(exc), EXIT_FAILED)
    _say(common.err(ctx), f"test message sent through {channel}")


@alerts.command("list")
@click.option("--limit", type=click.IntRange(1), default=20, show_default=True,
              help="How many recent alerts to show.")  # fmt: skip
@click.pass_context
def list_rules(ctx: click.Context, limit: int) -> None:
    """Show the configured rules and channels, and the most recent alerts."""
    from storage.alerts.log import recent, recent_on
    from storage.reads.sandbox import bounded

    config = _config(ctx)
    out = common.out(ctx)
    out.print(rules_table(config.alerts))
    out.print(channels_text(config.alerts), markup=False, highlight=False)
    try:
        if config.store_path.exists():  # under the time limit of every read command
            with bounded(config.store_path, config.store.query_timeout_s) as con:
                result, total = recent_on(con, limit)
        else:
            result, total = recent(config.store_path, limit)  # none: no store yet
    except StoreError as exc:
        common.read_failed(ctx, exc, "alerts")
    if not result.rows:
        out.print("no alerts yet", markup=False)
        return
    table = Table(title=f"Recent alerts (last {len(result.rows)} of {total})")
    for column in result.columns:
        table.add_column(column)
    for row in result.rows:
        table.add_row(*("" if v is None else escape(str(v)) for v in row))
    if total > len(result.rows):
        table.caption = f"{total - len(result.rows)} older alerts left out (--limit {limit})"
    out.print(table)


def after_collect(ctx: click.Context, config: config_mod.Config, env: Any) -> bool:
    """The alerts run that follows a collection; False when a delivery (or the run) failed."""
    from tracker import alerting

    if not alerting.wanted(config):
        return True
    try:
        report = alerting.check(config, env, sys.stdout)
    except StoreError as exc:
        _say(common.err(ctx), f"alerts: {exc}")
        return False
    print_report(common.err(ctx), report)
    return report.ok


def print_report(console: Console, report: AlertReport) -> None:
    if report.dry_run:
        _say(console, f"dry run: {len(report.fired)} alerts would fire")
        for event in report.fired:
            _say(console, f"  {event.rule} -> {event.channel}: {event.detail}")
        if report.due:
            _say(console, f"and {len(report.due)} pending alerts would be sent again")
        return
    rules = sorted({e.rule for e in report.fired})
    _say(console, f"alerts: {len(report.fired)} new" + (f" ({', '.join(rules)})" if rules else ""))
    for d in report.deliveries:
        if d.error is None:
            _say(console, f"  {d.channel}: {d.events} sent")
        else:
            _say(console, f"  {d.channel}: {d.events} NOT sent: {d.error}")
    if report.pending:
        _say(console, f"  {report.pending} alerts pending, retried on later runs")
    if report.gave_up:
        _say(console, f"  {report.gave_up} alerts given up after the last attempt (status failed)")


def rules_table(settings: AlertSettings) -> Table:
    table = Table(title="Alert rules")
    for column in ("name", "kind", "threshold", "filters", "window", "channels"):
        table.add_column(column)
    for rule in settings.rules:
        table.add_row(
            escape(rule.name),
            rule.kind,
            escape(_threshold(rule)),
            escape(_filters(rule)),
            duration_words(rule.window_s),
            ", ".join(rule.channels),
        )
    return table


def channels_text(settings: AlertSettings) -> str:
    """Where alerts go, naming the variables that hold the secrets (never their values)."""
    lines = ["channels: console (always)"]
    if settings.slack:
        lines.append(f"  slack: incoming webhook from ${settings.slack.webhook_url_env}")
    if settings.email:
        e = settings.email
        lines.append(
            f"  email: {e.smtp_host}:{e.smtp_port} ({e.security}) to {', '.join(e.recipients)}, "
            f"login from ${e.username_env} / ${e.password_env}"
        )
    return "\n".join(lines)


def _threshold(rule: Rule) -> str:
    from alerts.message import number

    if rule.index is not None:  # the market index: its GPU, kind and segment, and condition
        i = rule.index
        return f"{i.gpu.label} {i.price_kind} {i.segment} {i.condition} {number(i.value)}"
    if rule.threshold is None:
        return ""
    if rule.spec.unit == "percent":
        return f"{number(rule.threshold)}%"
    unit = "h" if rule.per == "instance" else "GPU-h"
    return f"{number(rule.threshold)} {rule.currency}/{unit}"


def _filters(rule: Rule) -> str:
    from alerts.message import number

    parts = [rule.currency or ""] if rule.spec.unit == "percent" and rule.currency else []
    for name, values in vars(rule.filters).items():
        if values:
            parts.append(f"{name}={','.join(map(_written, values))}")
    if rule.hysteresis:
        parts.append(f"hysteresis={number(rule.hysteresis)}")
    if rule.cooldown_s:
        parts.append(f"cooldown={duration_words(rule.cooldown_s)}")
    return " ".join(parts)


def _written(value: Any) -> str:
    """A filter value as a user writes it in config.toml: `H100`, `A100 80GB`."""
    from storage.reads.gpu_filter import GpuChoice

    return value.label if isinstance(value, GpuChoice) else str(value)
