"""`gpu-tracker collect`, `gpu-tracker demo` and `gpu-tracker reparse`: the commands that write
prices into a store (reparse: again, from the kept answers).

The pipeline, the collectors' SDKs and the alerts are imported when one of them runs, never at
the start-up of every command.
"""

from __future__ import annotations

import shlex
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from collectors.common import CollectorError, ConfigError, StoreError
from storage.connection import probe
from tracker import config as config_mod
from tracker.cli import common
from tracker.cli.common import EXIT_FAILED, EXIT_USAGE, fail, load_config
from tracker.collecting.preflight import check_store_path
from tracker.questions.types import PROVIDER

F = TypeVar("F", bound=Callable[..., Any])

# What the demo suggests running on the store it kept.
_DEMO_SQL = "SELECT provider, count(*) AS offers FROM latest_prices GROUP BY ALL ORDER BY 1"


def _providers(what: str) -> Callable[[F], F]:
    """`--provider NAME`, repeatable, for a command that does `what` to each one named."""
    return click.option(
        "--provider",
        "providers",
        multiple=True,
        type=PROVIDER,
        metavar="NAME",
        help=f"{what} (repeatable; any case, aliases such as lambda accepted).",
    )


@click.command()
@_providers("Collect only this provider. Default: every enabled one")
@click.option(
    "--accept-suspect",
    is_flag=True,
    help="Apply an answer that would otherwise be held as suspect (docs/trust.md) at once.",
)
@click.pass_context
def collect(ctx: click.Context, providers: tuple[str, ...], accept_suspect: bool) -> None:
    """Collect current prices from every enabled provider into the store, then check alerts."""
    from tracker.cli import alerts as cli_alerts
    from tracker.cli.screen.collecting import run_collection
    from tracker.collecting.pipeline import exit_code

    config = load_config(ctx)
    env = config_mod.environment()
    providers = tuple(dict.fromkeys(providers))  # `aws AWS` is one provider, collected once
    try:
        config.enabled(providers)
        # Before any fetch: a store that cannot be written would throw every answer away.
        check_store_path(config.store_path, config.store_key, config.source)
        probe(config.store_path)  # a damaged store file fails before any fetch, too (exit 2)
        outcomes = run_collection(
            common.err(ctx), config, providers, env, accept_suspect=accept_suspect
        )
    except ConfigError as exc:
        fail(ctx, str(exc), EXIT_USAGE)
    except StoreError as exc:
        fail(ctx, str(exc), EXIT_FAILED)
    # After storing: a failed delivery fails the command (exit 1), never the stored prices.
    delivered = cli_alerts.after_collect(ctx, config, env)
    sys.exit(max(exit_code(outcomes), 0 if delivered else EXIT_FAILED))


@click.command()
@click.option(
    "--keep",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Keep the demo store at this path instead of throwing it away (and say how to query it).",
)
@click.pass_context
def demo(ctx: click.Context, keep: Path | None) -> None:
    """Run the whole pipeline offline on bundled recorded API answers."""
    from tracker.cli.history import print_latest
    from tracker.cli.screen.collecting import run_collection
    from tracker.collecting.demo import (
        demo_setup,  # the loopback servers are needed by this command only
        earlier_summary,
        illustrative_note,
    )
    from tracker.collecting.pipeline import exit_code

    err = common.err(ctx)
    with tempfile.TemporaryDirectory(prefix="gpu-tracker-demo-") as tmp:
        store = keep or Path(tmp) / "demo.duckdb"
        with demo_setup(store) as setup:
            common.say(
                err,
                f"demo: replaying {', '.join(setup.servers)} from loopback servers into {store}",
            )
            at, outcomes = setup.collect_earlier()  # so the history shows prices moving
            for line in earlier_summary(at, outcomes):
                common.say(err, line)
            outcomes += run_collection(err, setup.config, (), setup.env)
        options = {"sort": "gpu-hour", "limit": 60, "per_gpu": True}
        print_latest(ctx, store, options, "table", timeout_s=setup.config.store.query_timeout_s)
        if setup.illustrative:
            common.say(common.out(ctx), illustrative_note(setup.illustrative))
    for line in next_steps(keep):
        common.say(err, line)
    sys.exit(exit_code(outcomes))


def next_steps(kept: Path | None) -> list[str]:
    """What to run after the demo: on the store it kept, or how to keep one."""
    if kept is None:
        return ["the demo store was thrown away; `gpu-tracker demo --keep demo.duckdb` keeps it"]
    db = shlex.quote(str(kept.resolve()))
    return [
        f"the demo store is kept at {kept.resolve()}; query it with:",
        f"  gpu-tracker --db {db} latest --gpu H100",
        f"  gpu-tracker --db {db} sql {shlex.quote(_DEMO_SQL)}",
        f"  (or export GPU_TRACKER_DB={db} and leave out --db)",
    ]


@click.command()
@_providers("Rebuild only this provider's history. Default: every provider with runs")
@click.option("--dry-run", is_flag=True, help="Say what would change; write nothing.")
@click.pass_context
def reparse(ctx: click.Context, providers: tuple[str, ...], dry_run: bool) -> None:
    """Rebuild history from the kept raw answers with today's parsers (docs/trust.md)."""
    from tracker.collecting.reparse import reparse as rebuild
    from tracker.collecting.reparse import report

    config = load_config(ctx)
    try:
        done = rebuild(config, tuple(dict.fromkeys(providers)), dry_run=dry_run)
    except ConfigError as exc:
        fail(ctx, str(exc), EXIT_USAGE)
    except (StoreError, CollectorError) as exc:  # nothing of the provider it names written
        from tracker.collecting.reparse import Refused

        fail(ctx, str(exc), EXIT_USAGE if isinstance(exc, Refused) else EXIT_FAILED)
    for line in report(done, dry_run=dry_run):
        common.say(common.out(ctx), line)


@click.command()
@click.pass_context
def compact(ctx: click.Context) -> None:
    """Lay the price history out again so current prices read fast (docs/performance.md)."""
    from storage.store import Store

    config = load_config(ctx)
    if not config.store_path.exists():
        fail(ctx, f"no store at {config.store_path}: nothing to compact", EXIT_USAGE)
    try:
        done = Store(config.store_path, lock_wait_s=config.store.write_wait_s).compact()
    except StoreError as exc:
        fail(ctx, str(exc), EXIT_FAILED)
    assert done is not None  # asked with no threshold, it always compacts
    common.say(
        common.out(ctx),
        f"compacted {config.store_path}: {done.intervals:,} intervals; the open ones in "
        f"{done.spread_before:,} of {done.groups:,} row groups before, {done.spread_after:,} "
        f"now ({done.seconds:.1f} s)",
    )
