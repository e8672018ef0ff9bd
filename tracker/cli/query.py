"""`gpu-tracker sql`: a read-only query to the store; `gpu-tracker runs`: a run's raw answers.

`sql` is the command a script calls again and again, so this module imports only DuckDB, click,
rich and the config (no pipeline, no alerts' delivery, no SDKs, not `latest`'s reads): its
start-up is measured against DuckDB's own (docs/performance.md, "Start-up of a query").
"""

from __future__ import annotations

import json
import sys
from datetime import UTC
from typing import TYPE_CHECKING, NoReturn

import click

from collectors.common import ConfigError, StoreError
from tracker import config as config_mod
from tracker.cli import common
from tracker.cli.common import EXIT_FAILED, EXIT_USAGE, fail, load_config
from tracker.cli.screen import render
from tracker.config.raw import raw_dir
from tracker.config.store import duration

if TYPE_CHECKING:
    from storage.runs import Run


@click.command()
@click.argument("sql")
@click.option(
    "--format", "fmt", type=click.Choice(render.FORMATS), default="table", show_default=True
)
@click.option(
    "--timeout",
    metavar="DURATION",
    help="Stop the query after this long, e.g. 90s, 5m (default: [storage] query_timeout, 60s).",
)
@click.pass_context
def sql(ctx: click.Context, sql: str, fmt: str, timeout: str | None) -> None:
    """Run a read-only SQL query over the store (views: prices, latest_prices, collection_runs).

    The query reads the store and nothing else: no other file, no network, no extension, no
    setting changes."""
    from storage.query import QueryRefused, QueryStopped, query

    config = load_config(ctx)
    try:
        limit = config.store.query_timeout_s if timeout is None else duration(timeout, "--timeout")
        # A longer query would outlast a collection's wait for the store and cost its prices.
        if limit >= config.store.write_wait_s:
            raise ConfigError(
                f"--timeout: {limit} s is not shorter than [storage] write_wait "
                f"({config.store.write_wait_s} s), the longest a collection waits for a reader; "
                "give a shorter --timeout or raise write_wait"
            )
    except ConfigError as exc:
        fail(ctx, str(exc), EXIT_USAGE)
    try:
        result = query(config.store_path, sql, timeout_s=limit)
    except QueryRefused as exc:
        fail(ctx, str(exc), EXIT_USAGE)
    except QueryStopped:
        fail(ctx, common.stopped_words(limit, "sql", option=True), EXIT_FAILED)
    except StoreError as exc:
        fail(ctx, str(exc), EXIT_FAILED)
    render.print_result(common.out(ctx), result, fmt)


@click.group()
def runs() -> None:
    """A collection run's raw answers: what each provider's API said (docs/trust.md)."""


@runs.command("show")
@click.argument("run_id", type=int)
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table")
@click.pass_context
def show(ctx: click.Context, run_id: int, fmt: str) -> None:
    """List the answers run RUN_ID kept (name, SHA-256, bytes, whether the file is kept)."""
    from storage.raw import RawStore

    config, found = _run(ctx, run_id)
    folder = raw_dir(config.raw, config.store_path)
    kept = RawStore(folder) if folder is not None else None
    answers = [
        {**k.as_json(), "file": "kept" if kept is not None and kept.has(k.sha256) else "missing"}
        for k in found.answers
    ]
    if fmt == "json":
        started = found.started_at.isoformat()
        head = {"run_id": run_id, "provider": found.provider, "status": found.status}
        common.say(common.out(ctx), json.dumps({**head, "started_at": started, "answers": answers}))
        return
    said = f"{len(answers)} raw answers" if answers else "no raw answers kept"
    started = found.started_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    lines = [
        f"run {run_id}: {found.provider} {found.status}, started {started}; {said}",
        *(f"{a['name']}  {a['sha256']}  {a['bytes']} bytes  {a['file']}" for a in answers),
    ]
    common.say(common.out(ctx), "\n".join(lines))


@runs.command("raw")
@click.argument("run_id", type=int)
@click.argument("name")
@click.pass_context
def raw(ctx: click.Context, run_id: int, name: str) -> None:
    """Write answer NAME of run RUN_ID to standard output, byte for byte as received."""
    from storage.raw import RawStore

    config, found = _run(ctx, run_id)
    answer = next((k for k in found.answers if k.name == name), None)
    if answer is None:
        names = ", ".join(k.name for k in found.answers) or "none kept"
        _refuse(ctx, f"run {run_id} has no raw answer named {name!r} (its answers: {names})")
    folder = raw_dir(config.raw, config.store_path)
    if folder is None:
        _refuse(ctx, f'run {run_id}: {name}: no raw answers are kept ([raw] keep = "0")')
    try:
        data = RawStore(folder).get(answer.sha256)
    except StoreError as exc:  # missing, or its bytes no longer match its SHA-256
        _refuse(ctx, f"run {run_id}: {name}: {exc}")
    sys.stdout.flush()
    sys.stdout.buffer.write(data)  # the bytes, never re-encoded
    sys.stdout.buffer.flush()


def _run(ctx: click.Context, run_id: int) -> tuple[config_mod.Config, Run]:
    """The config and the run RUN_ID (exit 2 naming it when the store has no such run)."""
    from storage.runs import run

    config = load_config(ctx)
    try:
        found = run(config.store_path, run_id, timeout_s=config.store.query_timeout_s)
    except StoreError as exc:
        common.read_failed(ctx, exc, "runs")
    if found is None:
        _refuse(ctx, f"run {run_id}: no such run in {config.store_path}")
    return config, found


def _refuse(ctx: click.Context, message: str) -> NoReturn:
    fail(ctx, message, EXIT_USAGE)
