"""`gpu-tracker export`: the history as hive-partitioned Parquet for other engines, written
incrementally to a directory or an object store (docs/export.md)."""

from __future__ import annotations

import click

from collectors.common import ConfigError, StoreError
from tracker import config as config_mod
from tracker.cli import common
from tracker.cli.common import EXIT_FAILED, EXIT_USAGE, fail, load_config, say
from tracker.config.export import check_to
from tracker.exporting import summary, target

FORMATS = ("parquet",)


@click.command()
@click.option(
    "--to",
    "to",
    required=True,
    metavar="DIR_OR_URL",
    help="A directory, or s3://bucket/prefix, gs://bucket/prefix, az://container/prefix "
    "(credentials from each cloud's usual chain).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="parquet",
    show_default=True,
    help="The file format (Parquet is the one every engine reads).",
)
@click.pass_context
def export(ctx: click.Context, to: str, fmt: str) -> None:
    """Write the prices history as Parquet partitioned by provider and month (and the
    collection runs under runs/); only what changed since the last export is rewritten."""
    from storage.export import export as run_export

    config = load_config(ctx)
    try:
        destination = target(check_to(to, "--to"), config_mod.environment())
    except ConfigError as exc:
        fail(ctx, str(exc), EXIT_USAGE)
    try:
        report = run_export(config.store_path, destination)
    except ConfigError as exc:
        fail(ctx, f"--to {to}: {exc}", EXIT_USAGE)
    except (StoreError, OSError) as exc:
        fail(ctx, f"export to {to} failed: {exc}", EXIT_FAILED)
    say(common.out(ctx), f"exported {config.store_path} to {to} ({fmt}): {summary(report)}")
