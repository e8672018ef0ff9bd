"""`gpu-tracker daemon` and `gpu-tracker status`."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from collectors.common import ConfigError, StoreError
from tracker import config as config_mod
from tracker.cli import common
from tracker.cli.common import EXIT_FAILED, EXIT_USAGE, fail, load_config
from tracker.config.daemon import LOG_FORMATS

if TYPE_CHECKING:  # the scheduler and the store's status queries load when a command runs
    from tracker.running import status

_RESULT_STYLE = {
    "ok": "green",
    "failed": "bold red",
    "skipped": "yellow",
    "held": "bold yellow",
}


@click.command()
@click.option(
    "--log-format",
    type=click.Choice(LOG_FORMATS),
    default=None,
    help="Log lines as text or as JSON objects (default: daemon.log_format, else text).",
)
@click.pass_context
def daemon(ctx: click.Context, log_format: str | None) -> None:
    """Run in the foreground: collect each provider on its interval, alert, review."""
    from tracker.collecting import logs
    from tracker.daemon.entry import serve

    config = load_config(ctx)
    chosen: Any = log_format or config.daemon.log_format
    verbose = common.verbose(ctx)
    logs.setup(chosen, verbose=verbose)
    if not config.enabled():
        fail(ctx, "no provider is enabled: nothing to schedule", EXIT_USAGE)
    try:
        code = serve(
            config, config_mod.environment(), log_format=chosen, verbose=verbose, start_web=_web
        )
    except ConfigError as exc:
        fail(ctx, str(exc), EXIT_USAGE)
    except StoreError as exc:
        fail(ctx, str(exc), EXIT_FAILED)
    sys.exit(code)


@click.command("status")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json"]),
    default="table",
    show_default=True,
)
@click.pass_context
def status_command(ctx: click.Context, fmt: str) -> None:
    """Per provider: last run, result, records, changes, data age and the next scheduled run."""
    from tracker.running import status

    config = load_config(ctx)
    try:
        found = status.gather(config)
    except StoreError as exc:
        common.read_failed(ctx, exc, "status")
    now = datetime.now(UTC)
    out: Console = common.out(ctx)
    if fmt == "json":
        running = found.running
        document = {
            "daemon": {"running": running, "pid": found.daemon.pid if found.daemon else None},
            "providers": [p.as_json(now) for p in found.providers],
        }
        out.print_json(json.dumps(document))
        return
    out.print(_daemon_line(found, now), highlight=False)
    out.print(_table(found, now))


def _daemon_line(found: status.Status, now: datetime) -> str:
    if not found.running:
        return "daemon: not running (next runs are known only while it runs)"
    if found.daemon is None:
        return "daemon: running (its schedule file cannot be read: next runs unknown)"
    state = found.daemon
    review = f"; next review {_when(state.review_next, now)}" if state.review_next else ""
    return f"daemon: running (pid {state.pid}, since {_when(state.started_at, now)}){review}"


def _table(found: status.Status, now: datetime) -> Table:
    table = Table(show_edge=False)
    for column in ("provider", "last run", "result", "records", "changes", "data age"):
        table.add_column(column, justify="right" if column in ("records", "changes") else "left")
    table.add_column("interval")
    table.add_column("next run")
    for row in found.providers:
        result = row.result or "never run"
        style = _RESULT_STYLE.get(result, "dim")
        if row.result == "failed" and row.failures > 1:
            result += f" ({row.failures} in a row)"
        table.add_row(
            row.provider + ("" if row.enabled else " (disabled)"),
            _ago(row.last_run, now),
            f"[{style}]{escape(result)}[/]",
            "" if row.records is None else str(row.records),
            "" if row.changes is None else str(row.changes),
            _duration(row.age_s(now)),
            _interval(row),
            _next(row, found.daemon is not None, now),
        )
    return table


def _interval(row: status.ProviderStatus) -> str:
    normal = _duration(row.interval_s)
    if row.current_interval_s and row.current_interval_s != row.interval_s:
        return f"{_duration(row.current_interval_s)} (backed off from {normal})"
    return normal


def _next(row: status.ProviderStatus, running: bool, now: datetime) -> str:
    if row.running_since is not None:
        return f"collecting ({_ago(row.running_since, now)})"
    if not running or not row.enabled:
        return "-"
    return _ago(row.next_run, now)


def _ago(moment: datetime | None, now: datetime) -> str:
    """`3 min ago`, `in 2 h`: the table's times (JSON has them in full)."""
    if moment is None:
        return "-"
    seconds = (now - moment).total_seconds()
    return f"{_duration(seconds)} ago" if seconds >= 0 else f"in {_duration(-seconds)}"


def _when(moment: datetime | None, now: datetime) -> str:
    if moment is None:
        return "-"
    seconds = (now - moment).total_seconds()
    words = f"{_duration(abs(seconds))} ago" if seconds >= 0 else f"in {_duration(-seconds)}"
    return f"{moment:%Y-%m-%d %H:%M:%S} UTC ({words})"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f} {unit}".replace(".0 ", " ")
    return f"{seconds:.0f} s"


def _web(config: config_mod.Config) -> Any:
    """The dashboard on [web] listen, warning when other machines can reach it."""
    import logging

    from tracker.config.web import NO_LOGIN
    from tracker.web.server import start_for

    running = start_for(config, config.web, "web.listen")
    log = logging.getLogger("tracker.web")
    if not config.web.loopback:
        log.warning("web.listen: " + NO_LOGIN.format(address=config.web.address))
    log.info("web: serving the dashboard on %s", running.url)
    return running
