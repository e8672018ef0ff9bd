"""The `gpu-tracker` command: a thin click layer over the pipeline, the store and the demo.

Exit codes (CONTRACT.md): 0 all asked work succeeded; 1 some provider failed (what succeeded is
stored); 2 usage or configuration error (nothing written).
"""

from __future__ import annotations

import logging
import sys
import tempfile
from pathlib import Path
from typing import Any, NoReturn

import click
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn

from collectors.common import ConfigError, StoreError
from storage.query import QueryRefused, query
from tracker import config as config_mod
from tracker import pipeline
from tracker.cli import alerts as cli_alerts
from tracker.cli import daemon as cli_daemon
from tracker.cli import latest as latest_mod
from tracker.cli import render
from tracker.cli import review as cli_review

EXIT_FAILED, EXIT_USAGE = 1, 2


class RichReporter(pipeline.Reporter):
    """Per-provider progress (pages fetched, records) while collecting."""

    def __init__(self, progress: Progress) -> None:
        self.bar = progress
        self.tasks: dict[str, TaskID] = {}

    def started(self, provider: str) -> None:
        self.tasks[provider] = self.bar.add_task(provider, total=None, pages=0, items=0)

    def progress(self, provider: str, pages: int, items: int) -> None:
        self.bar.update(self.tasks[provider], pages=pages, items=items)

    def finished(self, outcome: pipeline.Outcome) -> None:
        task = self.tasks[outcome.provider]
        self.bar.update(
            task, total=1, completed=1, description=f"{outcome.provider} {outcome.status}"
        )


def _progress(console: Console) -> Progress:
    return Progress(
        SpinnerColumn(),
        TextColumn("[bold]{task.description:<16}"),
        BarColumn(),
        TextColumn("{task.fields[pages]} pages, {task.fields[items]} items"),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    )


def _fail(console: Console, message: str, code: int) -> NoReturn:
    # Messages quote config keys like [providers.aws]: not markup.
    console.print(f"[bold red]error:[/] {escape(message)}", highlight=False)
    sys.exit(code)


def _config(ctx: click.Context) -> config_mod.Config:
    try:
        return config_mod.load(ctx.obj["config_path"])
    except ConfigError as exc:
        _fail(ctx.obj["err"], str(exc), EXIT_USAGE)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="config.toml to use (default: ./config.toml, else built-in defaults).",
)
@click.option("-v", "--verbose", is_flag=True, help="Log what each provider does.")
@click.pass_context
def cli(ctx: click.Context, config_path: Path | None, verbose: bool) -> None:
    """Track cloud GPU prices (on-demand, spot, reserved) in a change-only DuckDB history."""
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    ctx.obj = {
        "config_path": config_path,
        "verbose": verbose,
        "out": _console(),
        "err": _console(stderr=True),
    }


def _console(stderr: bool = False) -> Console:
    # Piped or captured output has no terminal width; rich would squeeze tables into 80
    # columns. Lines that long are fine in a file or a pager.
    stream = sys.stderr if stderr else sys.stdout
    return Console(stderr=stderr, width=None if stream.isatty() else 160)


def _run_collection(
    console: Console, config: config_mod.Config, names: tuple[str, ...], env: Any
) -> list[pipeline.Outcome]:
    if console.is_terminal:
        with _progress(console) as bar:
            outcomes = pipeline.collect(config, names, env=env, reporter=RichReporter(bar))
    else:  # a log file or a pipe: no live display, the summary says it all
        outcomes = pipeline.collect(config, names, env=env)
    console.print(render.summary(outcomes))
    for outcome in outcomes:
        if outcome.status == "skipped":
            console.print(f"[yellow]{outcome.provider} skipped:[/] {escape(outcome.error or '')}")
    return outcomes


@cli.command()
@click.option(
    "--provider",
    "providers",
    multiple=True,
    metavar="NAME",
    help="Collect only this provider (repeatable). Default: every enabled one.",
)
@click.pass_context
def collect(ctx: click.Context, providers: tuple[str, ...]) -> None:
    """Collect current prices from every enabled provider into the store, then check alerts."""
    config = _config(ctx)
    env = config_mod.environment()
    try:
        config.enabled(providers)
        outcomes = _run_collection(ctx.obj["err"], config, providers, env)
    except ConfigError as exc:
        _fail(ctx.obj["err"], str(exc), EXIT_USAGE)
    except StoreError as exc:
        _fail(ctx.obj["err"], str(exc), EXIT_FAILED)
    # After storing: a failed delivery fails the command (exit 1), never the stored prices.
    delivered = cli_alerts.after_collect(ctx, config, env)
    sys.exit(max(pipeline.exit_code(outcomes), 0 if delivered else EXIT_FAILED))


@cli.command()
@click.argument("sql")
@click.option(
    "--format", "fmt", type=click.Choice(render.FORMATS), default="table", show_default=True
)
@click.pass_context
def sql(ctx: click.Context, sql: str, fmt: str) -> None:
    """Run a read-only SQL query over the store (views: prices, latest_prices, collection_runs)."""
    config = _config(ctx)
    try:
        result = query(config.store_path, sql)
    except QueryRefused as exc:
        _fail(ctx.obj["err"], str(exc), EXIT_USAGE)
    except StoreError as exc:
        _fail(ctx.obj["err"], str(exc), EXIT_FAILED)
    render.print_result(ctx.obj["out"], result, fmt)


@cli.command()
@click.option("--gpu", help="GPU model, e.g. H100, A100, L4 (case-insensitive).")
@click.option("--kind", type=click.Choice(latest_mod.KINDS), help="Price kind.")
@click.option("--provider", help="Provider name, e.g. aws, azure.")
@click.option("--region", help="Provider-native region code, e.g. us-east-1, eastus.")
@click.option("--instance-type", help="Provider-native instance type.")
@click.option(
    "--sort", type=click.Choice(list(latest_mod.SORTS)), default="gpu-hour", show_default=True
)
@click.option("--limit", type=click.IntRange(1), default=20, show_default=True)
@click.option("--per-gpu", is_flag=True, help="Only the cheapest offer per GPU model and kind.")
@click.option(
    "--usd",
    is_flag=True,
    help="One USD ranking across currencies, converted with the [fx] rates; offers without a "
    "rate are left out (and counted).",
)
@click.option(
    "--format", "fmt", type=click.Choice(render.FORMATS), default="table", show_default=True
)
@click.pass_context
def latest(
    ctx: click.Context,
    /,
    sort: str,
    limit: int,
    per_gpu: bool,
    usd: bool,
    fmt: str,
    **filters: Any,
) -> None:
    """The cheapest current offers, one table per currency (or one in USD with --usd)."""
    config = _config(ctx)
    options = {"sort": sort, "limit": limit, "per_gpu": per_gpu, "usd": usd}
    _print_latest(ctx, config.store_path, latest_mod.Filters(**filters), options, fmt)


def _print_latest(
    ctx: click.Context, store: Path, filters: latest_mod.Filters, options: Any, fmt: str
) -> None:
    out: Console = ctx.obj["out"]
    try:
        result = latest_mod.cheapest(store, filters, **options)
        unrated = latest_mod.unrated(store, filters) if options.get("usd") else {}
    except StoreError as exc:
        _fail(ctx.obj["err"], str(exc), EXIT_FAILED)
    if not result.rows:
        ctx.obj["err"].print("no current prices match (run `gpu-tracker collect` first?)")
    for currency, count in unrated.items():
        ctx.obj["err"].print(
            f"left out {count} offers priced in {currency}: no rate for it in [fx]",
            markup=False,
            highlight=False,
        )
    if fmt != "table":  # one document; the currency column keeps the groups apart
        render.print_result(out, result, fmt)
        return
    for currency, table in latest_mod.by_currency(result).items():
        out.print(render.latest_table(table, currency))


@cli.command()
@click.option(
    "--keep",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Keep the demo store at this path instead of throwing it away.",
)
@click.pass_context
def demo(ctx: click.Context, keep: Path | None) -> None:
    """Run the whole pipeline offline on bundled recorded API answers."""
    from tracker.demo import demo_setup  # the loopback server is needed by this command only

    err: Console = ctx.obj["err"]
    with tempfile.TemporaryDirectory(prefix="gpu-tracker-demo-") as tmp:
        store = keep or Path(tmp) / "demo.duckdb"
        with demo_setup(store) as setup:
            err.print(
                f"demo: replaying {', '.join(setup.servers)} from loopback servers into {store}"
            )
            outcomes = _run_collection(err, setup.config, (), setup.env)
        options = {"sort": "gpu-hour", "limit": 60, "per_gpu": True}
        _print_latest(ctx, store, latest_mod.Filters(), options, "table")
    sys.exit(pipeline.exit_code(outcomes))


cli.add_command(cli_alerts.alerts)
cli.add_command(cli_daemon.daemon)
cli.add_command(cli_daemon.status_command)
cli.add_command(cli_review.review)


def main() -> None:
    cli(prog_name="gpu-tracker")
