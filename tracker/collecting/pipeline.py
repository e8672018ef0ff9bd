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
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from collectors import collector_class
from collectors.base import GpuSummary, ParseResult, ProviderSettings
from collectors.common import CollectorError, MissingCredentials, StoreError, flat
from storage.connection import StoreDamaged
from storage.store import Store
from storage.writes.answer import write_args
from storage.writes.validate import summary
from tracker.collecting.deadline import within
from tracker.collecting.failure import hold, one_line, redact, secrets_of
from tracker.collecting.isolation import Abandoned, Fetched
from tracker.config import Config, ProviderConfig

# Fetches and parses one provider: (name, settings with credentials, observed_at).
Fetcher = Callable[[str, ProviderSettings, datetime], Fetched]

log = logging.getLogger("tracker.pipeline")


@dataclass
class Outcome:
    """What happened to one provider in one collection (the run summary's row)."""

    provider: str
    status: str = "ok"  # ok | failed | skipped | held (nothing stored: docs/trust.md)
    records: int = 0
    changed: int = 0
    pages: int = 0
    seconds: float = 0.0
    error: str | None = None  # one readable line
    detail: str | None = None  # the whole error, where the line shortens it (-v, the store)
    unknown_instance_types: set[str] = field(default_factory=set)
    skipped_rows: int = 0
    # Prices the store's validation refused, by reason; none of them stored.
    invalid: dict[str, int] = field(default_factory=dict)
    # What the collector says of how it collected (AWS: which source answered).
    notes: list[str] = field(default_factory=list)
    # GPU types priced, how many from the API's own facts, which have none yet.
    gpus: GpuSummary | None = None

    def invalid_summary(self) -> str:
        """'3 prices skipped: 2 zero after rounding, 1 above the ceiling'; '' when none."""
        return summary(self.invalid)


class Reporter:
    """Receives progress; the CLI draws it, the daemon logs it. Does nothing by default."""

    def started(self, provider: str) -> None:
        pass

    def progress(self, provider: str, pages: int, items: int) -> None:
        pass

    def finished(self, outcome: Outcome) -> None:
        pass


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
    would be held (`collect --accept-suspect`; the daemon never does)."""
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

    # Where a collector keeps what it saw between runs (AWS: the offer files' GPU rows).
    state_dir = config.store_path.parent / f"{config.store_path.name}.state"

    def run(provider: ProviderConfig) -> Outcome:
        if accept_suspect:
            provider = replace(provider, suspicion=replace(provider.suspicion, accept=True))
        return _collect_one(provider, env, reporter, store, write_lock, fetcher, now, state_dir)

    if not providers:
        return []
    if len(providers) == 1:  # the daemon's case: its job's own thread will do
        return [run(providers[0])]
    with ThreadPoolExecutor(max_workers=len(providers), thread_name_prefix="collect") as pool:
        return list(pool.map(run, providers))


def _collect_one(
    provider: ProviderConfig,
    env: Mapping[str, str],
    reporter: Reporter,
    store: Store,
    write_lock: threading.Lock,
    fetcher: Fetcher | None,
    now: datetime | None = None,
    state_dir: Path | None = None,
) -> Outcome:
    outcome = Outcome(provider.name)
    started_at = now or datetime.now(UTC)
    clock = time.monotonic()
    reporter.started(provider.name)
    try:
        fetched = _fetch(provider, env, reporter, outcome, started_at, fetcher, state_dir)
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
    state_dir: Path | None = None,
) -> Fetched:
    settings, missing = provider.settings(env)
    if missing:
        raise MissingCredentials(provider.name, " and ".join(missing))
    settings = replace(settings, state_dir=state_dir)
    if fetcher is not None:
        return fetcher(provider.name, settings, started_at)

    def progress(pages: int, items: int) -> None:
        outcome.pages = pages
        reporter.progress(provider.name, pages, items)

    # Imported before the clock starts: the deadline is for the API, not for a busy machine
    # loading an SDK.
    kind = collector_class(provider.name)

    def work() -> Fetched:
        collector = kind(settings, progress)
        collector.check_credentials()
        parsed = collector.parse(collector.fetch(), observed_at=started_at)
        # The configured regions, else the provider's own.
        return Fetched(parsed, collector.regions or None)

    # The child process of the daemon's fetcher is killed at the deadline; here, given up.
    return within(provider.name, settings.deadline_s, work)


def _store(
    provider: ProviderConfig,
    fetched: Fetched,
    store: Store,
    write_lock: threading.Lock,
    outcome: Outcome,
    started_at: datetime,
) -> None:
    parsed, covered = fetched.parsed, fetched.covered
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
            )
    except StoreDamaged:  # the whole command fails on it (exit 2), not this provider
        raise
    except Exception as exc:  # a full disk, say: one line, and the other providers go on
        outcome.status = "failed"
        said = str(exc) if isinstance(exc, StoreError) else f"{type(exc).__name__}: {exc}"
        # The same full disk that lost the prices: said once.
        why = " either" if outcome.error and said in outcome.error else f": {said}"
        outcome.error = flat(redact(f"{outcome.error}; and the run could not be recorded{why}"))


def exit_code(outcomes: list[Outcome]) -> int:
    """The exit code (docs/commands.md): 0 all asked work succeeded (skips included), 1 some
    provider failed or was held."""
    return 1 if any(o.status in ("failed", "held") for o in outcomes) else 0
