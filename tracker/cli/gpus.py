"""`gpu-tracker gpus`: what the tracker knows of GPUs, and what it does not know yet.

By default the GPU models (the bundled table with the user's [gpus.models] entries); with
`--types` or `--provider` the per-instance-type entries; with `--unknown` the instance types the
store has seen without facts, each with the config.toml entry to add. Only `--unknown` reads
the store, through the sandboxed, time-limited read every read command uses.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import click

from collectors.common import StoreError
from storage.query import QueryResult
from tracker.cli import common
from tracker.cli.common import EXIT_FAILED, EXIT_USAGE, fail, load_config, say
from tracker.cli.screen import render
from tracker.config import Config
from tracker.questions import gpus as gpus_rows
from tracker.questions.types import PROVIDER

_NUMERIC = {
    "fp16_tflops", "fp32_tflops", "gpu_count", "gpu_memory_gib", "vcpus", "memory_gib",
}  # fmt: skip
# What the on-screen table of --unknown leaves to the lines under it.
_OFF_SCREEN = ("snippet", "first_seen")


@click.command()
@click.option(
    "--unknown",
    is_flag=True,
    help="The instance types the store has seen without GPU facts, with the config.toml entry "
    "to add for each.",
)
@click.option(
    "--check",
    is_flag=True,
    help="As --unknown, and exit 1 when some type has no [gpus] entry in the config yet (for "
    "cron).",
)
@click.option("--types", is_flag=True, help="The per-instance-type entries instead of the models.")
@click.option(
    "--provider",
    type=PROVIDER,
    help="Only this provider's instance types (implies --types unless --unknown).",
)
@click.option(
    "--format", "fmt", type=click.Choice(render.FORMATS), default="table", show_default=True
)
@click.pass_context
def gpus(
    ctx: click.Context, unknown: bool, check: bool, types: bool, provider: str | None, fmt: str
) -> None:
    """The GPU models and instance types the tracker knows, or (--unknown) those it has seen
    without facts."""
    config = load_config(ctx)
    if types and (unknown or check):
        fail(ctx, "give either --types or --unknown (--check), not both", EXIT_USAGE)
    if unknown or check:
        _unknown(ctx, config, provider, fmt, check)
    elif types or provider:
        rows = gpus_rows.answer(config, types=types, provider=provider)
        _print(ctx, gpus_rows.TYPE_COLUMNS, rows, fmt, "Instance types with GPU facts")
    else:
        _print(ctx, gpus_rows.MODEL_COLUMNS, gpus_rows.answer(config), fmt, "GPU models")


def _unknown(
    ctx: click.Context, config: Config, provider: str | None, fmt: str, check: bool
) -> None:
    try:
        rows = gpus_rows.answer(config, unknown=True, provider=provider)
    except StoreError as exc:
        common.read_failed(ctx, exc, "gpus")
    missing = [row for row in rows if not row["configured"]]
    err = common.err(ctx)
    if fmt != "table":
        _print(ctx, gpus_rows.UNKNOWN_COLUMNS, rows, fmt)
    elif not rows:
        say(err, "every GPU instance type in the store has its facts")
    else:
        shown = [c for c in gpus_rows.UNKNOWN_COLUMNS if c not in _OFF_SCREEN]
        _print(ctx, shown, rows, fmt, "GPU instance types seen without facts")
        _print_snippets(ctx, missing)
    if check and missing:
        say(err, f"{len(missing)} GPU instance types without facts have no [gpus] entry yet")
        ctx.exit(EXIT_FAILED)


def _print_snippets(ctx: click.Context, missing: list[dict[str, Any]]) -> None:
    out = common.out(ctx)
    if not missing:
        say(
            out,
            "\nEvery one has a [gpus] entry in the config now: the next collection prices a type "
            "not stored, and a stored one takes its model in its open interval.",
        )
        return
    say(out, "\nAdd to config.toml, each ? filled in; the next collection prices them:\n")
    say(out, "\n\n".join(row["snippet"] for row in missing))


def _print(
    ctx: click.Context,
    columns: tuple[str, ...] | list[str],
    rows: list[dict[str, Any]],
    fmt: str,
    title: str | None = None,
) -> None:
    """Rows as a table, CSV or one JSON array (lists as JSON arrays there, else as text)."""
    out = common.out(ctx)
    values = [[row[c] if fmt == "json" else _text(row[c]) for c in columns] for row in rows]
    result = QueryResult(
        list(columns),
        ["DOUBLE" if c in _NUMERIC else "VARCHAR" for c in columns],
        [tuple(v) for v in values],
    )
    if fmt == "table":
        out.print(render.to_table(result, title))
    else:
        render.print_result(out, result, fmt)


def _text(value: Any) -> Any:
    if isinstance(value, list):
        return ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, datetime):
        return f"{value:%Y-%m-%d %H:%M}"
    return value
