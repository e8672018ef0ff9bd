"""`gpu-tracker reparse`: each provider's history rebuilt from its kept raw answers with
today's parsers (docs/trust.md, "Reparse").

Per provider, the replay starts at its first run from which on every applied or held run has
all its answers kept (R0): older runs' answers were pruned or never kept, and their history
stays as it is. Every kept file of every run to replay is read and checked against its SHA-256
before anything is written: one that no longer matches refuses the whole reparse.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from collectors import collector_class
from collectors.base import ProviderSettings
from collectors.common import CollectorError, ConfigError, StoreError
from collectors.transfer import with_flat_rates
from storage.raw import RawDamaged, RawMissing, RawStore
from storage.store import Store
from storage.writes.answer import Answer, write_args
from storage.writes.reparse import Rebuilt, StoredRun, rebuild
from tracker.config import Config, ProviderConfig
from tracker.config.raw import raw_home


class Refused(StoreError):
    """A kept answer that can no longer be trusted: nothing is written."""


@dataclass(frozen=True)
class Plan:
    """One provider's reparse: the runs to replay (from R0 on; empty: none can be)."""

    provider: str
    runs: list[StoredRun]
    stored: int  # its applied and held runs, replayable or not


@dataclass(frozen=True)
class Done:
    """The reparse's outcome, per provider: what the replay changed, or why it was skipped."""

    plans: list[Plan]
    rebuilt: list[Rebuilt]


def raw_folder(config: Config) -> Path:
    """Where the kept answers are: `[raw] dir` when the config sets one, else beside the
    store (`<store>.state/raw/`)."""
    return raw_home(config.raw, config.store_path)


def replayable(runs: Sequence[StoredRun], raw: RawStore) -> list[StoredRun]:
    """The runs from R0 on: the longest tail of `runs` whose answers are all kept."""
    start = len(runs)
    while start > 0 and _kept(runs[start - 1], raw):
        start -= 1
    return list(runs[start:])


def _kept(run: StoredRun, raw: RawStore) -> bool:
    return bool(run.kept) and all(raw.has(k.sha256) for k in run.kept or ())


def verify(plans: Sequence[Plan], raw: RawStore) -> None:
    """Read every file the plans replay, each once, checked against its name (Refused)."""
    seen: set[str] = set()
    for plan in plans:
        for run in plan.runs:
            for kept in run.kept or ():
                if kept.sha256 in seen:
                    continue
                try:
                    raw.get(kept.sha256)
                except (RawDamaged, RawMissing) as exc:
                    raise Refused(
                        f"{plan.provider}: run {run.run_id}, answer {kept.name!r}: {exc};"
                        " nothing was reparsed"
                    ) from exc
                seen.add(kept.sha256)


class _Parser:
    """Today's parse of a run's kept answers, as the collection would have written it."""

    def __init__(self, provider: ProviderConfig, raw: RawStore) -> None:
        # No credentials: parse is pure, and a replay asks no API anything.
        settings, _ = provider.settings({})
        self.settings: ProviderSettings = settings
        self.kind = collector_class(provider.name)
        self.raw = raw
        # The answers of the run before: an hourly answer repeats the last one more often than
        # not, and is then neither read nor decoded again.
        self.last: dict[str, tuple[str, Any]] = {}

    def __call__(self, run: StoredRun) -> Answer:
        # The regions the run covered (None: the provider's all, as an empty setting says).
        settings = replace(self.settings, regions=run.covered or ())
        collector = self.kind(settings)
        payloads = self._payloads(run)
        try:
            parsed = collector.parse(payloads, observed_at=run.observed_at)
        except Exception as exc:  # a parse that fails on an answer it once read: said, per run
            said = str(exc).removeprefix(f"{collector.name}: ") or type(exc).__name__
            raise CollectorError(
                collector.name, f"run {run.run_id}: its kept answers no longer parse: {said}"
            ) from exc
        parsed = with_flat_rates(collector.name, parsed)  # as the collection had them
        return Answer(**write_args(parsed, collector.regions or None))

    def _payloads(self, run: StoredRun) -> dict[str, Any]:
        payloads: dict[str, Any] = {}
        for kept in run.kept or ():
            last = self.last.get(kept.name)
            if last is None or last[0] != kept.sha256:
                # Decoded afresh each time: a parse may change what it is given.
                text = self.raw.get(kept.sha256)
                last = self.last[kept.name] = (kept.sha256, text)
            payloads[kept.name] = json.loads(last[1])
        return payloads


def reparse(config: Config, names: tuple[str, ...] = (), *, dry_run: bool = False) -> Done:
    """Rebuild the named providers' histories (default: every provider with runs)."""
    if not config.store_path.exists():
        raise ConfigError(f"no store at {config.store_path}: nothing to reparse")
    store = Store(
        config.store_path,
        lock_wait_s=config.store.write_wait_s,
        fx_rates=config.fx,
        gpu_facts=config.gpu_facts,
        limits=config.limits,
    )
    raw = RawStore(raw_folder(config))
    wanted = config.enabled(names) if names else None
    with rebuild(store) as session:
        # A provider no longer known (renamed, removed) has no parser left: left alone.
        known = sorted(set(session.runs) & set(config.providers))
        providers = [p.name for p in wanted] if wanted else known
        plans = [
            Plan(name, replayable(session.runs.get(name, []), raw), len(session.runs.get(name, [])))
            for name in providers
        ]
        verify(plans, raw)
        rebuilt = []
        for plan in plans:
            if plan.runs:
                provider = config.providers[plan.provider]
                parse = _Parser(provider, raw)
                rebuilt.append(
                    session.replay(
                        plan.provider, plan.runs, parse, provider.suspicion, dry_run=dry_run
                    )
                )
    return Done(plans, rebuilt)


def report(done: Done, *, dry_run: bool) -> list[str]:
    """The summary: per provider, what the replay changed (or would), or why it was left."""
    rebuilt = {r.provider: r for r in done.rebuilt}
    lines = []
    for plan in done.plans:
        r = rebuilt.get(plan.provider)
        if r is None:
            lines.append(
                f"{plan.provider}: no run has all its raw answers kept"
                f" ({plan.stored} applied or held runs stored); left alone"
            )
            continue
        since = plan.runs[0].observed_at
        verb = "would replay" if dry_run else "replayed"
        line = (
            f"{r.provider}: {verb} {r.runs} of {plan.stored} runs, from run {r.first_run}"
            f" ({since:%Y-%m-%d %H:%M} UTC): intervals {r.added} added, {r.removed} removed,"
            f" {r.repriced} repriced, {r.redated} redated"
        )
        if r.released:
            line += f"; {r.released} held runs applied now"
        if r.held:
            line += f"; {r.held} runs held"
        lines.append(line)
    if dry_run:
        lines.append("dry run: nothing was written")
    return lines
