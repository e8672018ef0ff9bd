"""One collection: every selected provider fetched and parsed in parallel, stored one by one.

Providers are independent: one that fails (or lacks credentials) is recorded as such and the
others land. Each provider's prices are written in one transaction by the store, so a provider
whose fetch breaks halfway leaves nothing of that run behind but a `failed` row.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from collectors import collector_class
from collectors.base import ParseResult, ProviderSettings
from collectors.common import CollectorError, MissingCredentials, StoreError, flat
from storage.connection import StoreDamaged
from storage.store import Store
from storage.writes.answer import write_args
from tracker.collecting import retention
from tracker.collecting.deadline import within
from tracker.collecting.failure import hold, one_line, redact, secrets_of
from tracker.collecting.isolation import Abandoned, Fetched
from tracker.collecting.keeping import attached, fetch_and_parse
from tracker.collecting.outcome import Outcome, Reporter, exit_code
from tracker.config import Config, ProviderConfig
from tracker.config.raw import raw_dir, state_dir

__all__ = ["Fetcher", "Outcome", "Reporter", "collect", "exit_code"]

# Fetches and parses one provider: (name, settings with credentials, observed_at).
Fetcher = Callable[[str, ProviderSettings, datetime], Fetched]

log = logging.getLogger("tracker.pipeline")


def collect(
    config: Config,
    names: tuple[str, ...] = (),
    *,
    env: Mapping[str, str],
    reporter: Reporter | None = None,
    store: Store | None = None,
    write_lock: threading.Lock | None = None,
    fetcher: Fetcher | None = None,
    now: datetime | None = None,
    accept_suspect: bool = False,
) -> list[Outcome]:
    """Collect every enabled provider (or the named ones) into the store. `write_lock` is held
    around every store session; the daemon passes the one all its jobs share, and a `fetcher`
    that fetches and parses in a child process (`tracker.collecting.isolation`); by default
    it happens here, with progress reported. `now` dates the collection (default: the clock);
    the demo dates its earlier snapshots with it. `accept_suspect` applies an answer that
    would be held (`collect --accept-suspect`; the daemon never does). The answers are kept
    (`[raw]`), and those no run within `[raw] keep` names dropped after (docs/trust.md)."""
    providers = config.enabled(names)
    # Before anything is asked: an error text that echoes a credential is masked everywhere.
    hold(secrets_of(config, env))
    reporter = reporter or Reporter()
    wait_s = config.store.write_wait_s  # outlasts any reader's query ([storage] write_wait)
    store = store or Store(
        config.store_path,
        lock_wait_s=wait_s,
        fx_rates=config.fx,
        gpu_facts=config.gpu_facts,
        limits=config.limits,
    )
    # One DuckDB session at a time, even within this process.
    write_lock = write_lock or threading.Lock()

    # Where a collector keeps what it saw between runs (AWS: the offer files' GPU rows), and
    # where the answers are kept (None: `[raw] keep = "0"`).
    folders = (state_dir(config.store_path), raw_dir(config.raw, config.store_path))

    def run(provider: ProviderConfig) -> Outcome:
        if accept_suspect:
            provider = replace(provider, suspicion=replace(provider.suspicion, accept=True))
        return _collect_one(provider, env, reporter, store, write_lock, fetcher, now, folders)

    if not providers:
        return []
    if len(providers) == 1:  # the daemon's case: its job's own thread will do
        outcomes = [run(providers[0])]
    else:
        with ThreadPoolExecutor(len(providers), thread_name_prefix="collect") as pool:
            outcomes = list(pool.map(run, providers))
    if folders[1] is not None:
        retention.drop_old(folders[1], config, write_lock)
    return outcomes


def _collect_one(
    provider: ProviderConfig,
    env: Mapping[str, str],
    reporter: Reporter,
    store: Store,
    write_lock: threading.Lock,
    fetcher: Fetcher | None,
    now: datetime | None = None,
    folders: tuple[Path | None, Path | None] = (None, None),
) -> Outcome:
    outcome = Outcome(provider.name)
    started_at = now or datetime.now(UTC)
    clock = time.monotonic()
    reporter.started(provider.name)
    try:
        fetched = _fetch(provider, env, reporter, outcome, started_at, fetcher, folders)
        _store(provider, fetched, store, write_lock, outcome, started_at)
    except (Abandoned, StoreDamaged):  # the daemon is stopping; or the store file is unusable
        raise  # (StoreDamaged: not a provider's failure, and no run can be recorded in it)
    except MissingCredentials as exc:
        outcome.status, outcome.error = "skipped", str(exc)
    except (CollectorError, StoreError) as exc:
        outcome.status, outcome.error = "failed", one_line(provider.name, exc) or str(exc)
        if outcome.error != str(exc):
            outcome.detail = str(exc)
            log.info("%s failed: %s", provider.name, flat(str(exc)))
    except Exception as exc:  # a bug in one collector must not stop the others
        log.exception("%s: unexpected error", provider.name)
        outcome.status, outcome.error = "failed", f"{provider.name}: {type(exc).__name__}: {exc}"
    outcome.seconds = time.monotonic() - clock
    # What an API echoed back (its 401 quoting the Authorization header) is never printed or
    # stored; the log lines above were masked as they were made.
    # An HTML error page or a colour escape in an answer: one plain line, wherever it goes.
    outcome.error = flat(redact(outcome.error)) if outcome.error else outcome.error
    outcome.detail = flat(redact(outcome.detail)) if outcome.detail else outcome.detail
    if outcome.status not in ("ok", "held"):  # a held run is stored by its write
        _record_unsuccessful(store, write_lock, outcome, started_at, provider.interval_s)
    reporter.finished(outcome)
    return outcome


def _fetch(
    provider: ProviderConfig,
    env: Mapping[str, str],
    reporter: Reporter,
    outcome: Outcome,
    started_at: datetime,
    fetcher: Fetcher | None,
    folders: tuple[Path | None, Path | None],
) -> Fetched:
    settings, missing = provider.settings(env)
    if missing:
        raise MissingCredentials(provider.name, " and ".join(missing))
    settings = replace(settings, state_dir=folders[0])
    try:
        if fetcher is not None:  # the daemon's child keeps the answers in its own folder
            return fetcher(provider.name, settings, started_at)
        return _fetch_here(provider.name, settings, reporter, outcome, started_at, folders[1])
    except Exception as exc:  # a failed parse's answers are kept, for its record
        outcome.kept = attached(exc)
        raise


def _fetch_here(
    name: str,
    settings: ProviderSettings,
    reporter: Reporter,
    outcome: Outcome,
    started_at: datetime,
    raw: Path | None,
) -> Fetched:
    """Fetch, keep (in `raw`; None: not kept) and parse in this process, within the deadline."""

    def progress(pages: int, items: int) -> None:
        outcome.pages = pages
        reporter.progress(name, pages, items)

    # Imported before the clock starts: the deadline is for the API, not for a busy machine
    # loading an SDK.
    kind = collector_class(name)

    def work() -> Fetched:
        collector = kind(settings, progress)
        collector.check_credentials()
        parsed, kept = fetch_and_parse(collector, started_at, raw)
        # The configured regions, else the provider's own.
        return Fetched(parsed, collector.regions or None, kept)

    # The child process of the daemon's fetcher is killed at the deadline; here, given up.
    return within(name, settings.deadline_s, work)


def _store(
    provider: ProviderConfig,
    fetched: Fetched,
    store: Store,
    write_lock: threading.Lock,
    outcome: Outcome,
    started_at: datetime,
) -> None:
    parsed, covered = fetched.parsed, fetched.covered
    outcome.kept = fetched.kept  # listed on the run, whatever becomes of its write
    outcome.unknown_instance_types = parsed.unknown_instance_types
    outcome.skipped_rows = parsed.skipped_rows
    outcome.notes = list(parsed.notes)
    outcome.gpus = parsed.gpu_summary()
    if outcome.gpus.without_facts:
        log.info(
            "%s: GPU types without facts: %s", provider.name, ", ".join(outcome.gpus.without_facts)
        )
    for note in parsed.notes:
        log.info("%s: %s", provider.name, note)
    # Only offers of no region (sold out everywhere) from a collection of some regions: as
    # suspect as no record at all (a `regions` typo leaves just those).
    if not parsed.records or (covered and all(r.region is None for r in parsed.records)):
        _refuse_empty(provider.name, parsed, covered, store, write_lock)
    with write_lock:
        result = store.write_run(
            provider.name,
            started_at=started_at,
            observed_at=started_at,
            interval_seconds=provider.interval_s,
            suspicion=provider.suspicion,
            raw=fetched.kept,
            **write_args(parsed, covered),
        )
    outcome.records, outcome.changed = result.records, result.changed
    if result.held:
        outcome.status = "held"
        outcome.error = f"{result.held}; nothing stored, the next answer decides (docs/trust.md)"
        log.warning("%s held: %s", provider.name, outcome.error)
    elif result.suspect:
        outcome.notes.append(f"applied though suspect: {result.suspect}")
        log.warning("%s: %s", provider.name, outcome.notes[-1])
    outcome.invalid = dict(result.skipped)
    if result.skipped:
        log.warning("%s: %s", provider.name, outcome.invalid_summary())


def _refuse_empty(
    name: str,
    parsed: ParseResult,
    covered: tuple[str, ...] | None,
    store: Store,
    write_lock: threading.Lock,
) -> None:
    """An answer without records (or, `covered` given, with none in those regions) is stored
    only when it is news: every priced offer sold out, closing offers still current in the asked
    regions. Otherwise it is far likelier a changed API, a bad filter or a `regions` typo than
    every GPU offer withdrawn at once, and storing it would close the provider's history."""
    if not parsed.records and not parsed.sold_out:
        raise CollectorError(name, "the API answered but no GPU price was found in it")
    with write_lock:  # one connection configuration per file within this process
        still_open = store.open_offers(name, covered)
    if not still_open:
        raise CollectorError(
            name,
            f"every offer in the answer is sold out or not in the asked regions "
            f"({', '.join(covered or ['all'])}); check `regions`",
        )


def _record_unsuccessful(
    store: Store, write_lock: threading.Lock, outcome: Outcome, started_at: datetime, interval: int
) -> None:
    try:
        with write_lock:
            store.record_run(
                outcome.provider,
                outcome.status,
                started_at=started_at,
                error=outcome.detail or outcome.error,
                interval_seconds=interval,
                raw=outcome.kept,
            )
    except StoreDamaged:  # the whole command fails on it (exit 2), not this provider
        raise
    except Exception as exc:  # a full disk, say: one line, and the other providers go on
        outcome.status = "failed"
        said = str(exc) if isinstance(exc, StoreError) else f"{type(exc).__name__}: {exc}"
        # The same full disk that lost the prices: said once.
        why = " either" if outcome.error and said in outcome.error else f": {said}"
        outcome.error = flat(redact(f"{outcome.error}; and the run could not be recorded{why}"))
