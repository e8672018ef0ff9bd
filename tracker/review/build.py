"""The periodic review: per GPU model, the cheapest on-demand, spot and reserved offers now
against a look-back ago (six months by default: the field's advice is to re-evaluate GPU
rentals twice a year), how the best reserved discount moved, and the alerts that fired.

`build` reads the store (read-only); `Review.to_dict` is the digest every channel renders
(`alerts.digest`); `send` records it in the alert event log and delivers it with the same
guarantees as an alert; `last_due` finds the scheduled review a daemon may have missed.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TextIO
from zoneinfo import ZoneInfo

from dateutil.relativedelta import relativedelta

from alerts import AlertReport, digest
from storage import review as stored
from tracker import alerting
from tracker.config import Config
from tracker.config.daemon import ReviewSettings, Since
from tracker.review import compute, moves
from tracker.review.market import index_moves
from tracker.review.model import AlertSummary, Review, models

LAST_DUE_HORIZON = timedelta(days=400)  # a yearly cron's last fire, with room to spare
_UNITS = {"mo": "months", "d": "days", "w": "weeks", "y": "years"}


def look_back(now: datetime, since: Since) -> datetime:
    """`now` minus the look-back, in calendar months / days / weeks / years."""
    return now - relativedelta(**{_UNITS[since.unit]: since.amount})  # type: ignore[arg-type]


def build(
    store_path: Path | str,
    now: datetime,
    since: Since,
    *,
    prices_at: datetime | None = None,
    settings: ReviewSettings | None = None,
    timeout_s: float | None = None,
) -> Review:
    """The review of the store at `store_path` for the period ending `now` (aware; its time
    zone dates the period) and starting `since` before; read-only. The 'now' prices are always
    the current ones: `prices_at` says when that is, for a review made after its `now`.
    `settings` say which GPU models it follows and the 3-year need (default: every model, the
    `tco` command's need). `timeout_s`: the reads' time limit (None: none, the daemon's own)."""
    then = look_back(now, since)
    settings = settings or ReviewSettings()
    need = compute.need_of(settings)
    found = stored.read(store_path, now, then, review_rule=digest.RULE, need=need,
                        gpus=settings.gpus, timeout_s=timeout_s)  # fmt: skip
    left_out: dict[str, dict[str, int]] = {"now": {}, "then": {}}
    for side, currency, count in found.unrated:
        left_out[side][currency] = count
    alerts = tuple(AlertSummary.of(r) for r in found.alerts)
    pflop, tco = compute.pflop(found.pflop), compute.strategies(found.strategies)
    per_model = tuple(
        replace(m, pflop=pflop.get(m.gpu_model), tco=tco.get(m.gpu_model))
        for m in models(found.cheapest, found.discounts)
    )
    has_then = found.priced_at_then > 0
    market = index_moves(store_path, then, prices_at or now, settings.gpus, timeout_s=timeout_s)
    return Review(now, then, since, found.history_from, has_then, per_model, left_out, alerts,
                  prices_at, compute.need_dict(need), settings.gpus,
                  moves.moves(found.moves), market)  # fmt: skip


def channels(config: Config) -> tuple[str, ...]:
    """Where reviews go: `[review] channels`, else every configured alert channel, else the
    console."""
    if config.review.channels:
        return config.review.channels
    return tuple(c for c in config.alerts.channels if c != "console") or ("console",)


def send(
    config: Config,
    env: Mapping[str, str],
    console: TextIO,
    *,
    now: datetime,
    period_subject: datetime | str | None = None,
    store_lock: AbstractContextManager[Any] | None = None,
    since: Since | None = None,
) -> AlertReport:
    """Record the review at `now` as one event per review channel and deliver what is due.

    `period_subject` is the scheduled fire time (a datetime or its ISO text) of a review the
    daemon sends, maybe late (a catch-up after a restart): the review is then made as of that
    time (its period, look-back and alerts end there; only the 'now' prices are those of `now`,
    and it says so when that is another day), and its subject, the period, is the one the
    scheduled send has, so a catch-up of a review already recorded records nothing. Other text
    is the subject as it is. The report's `fired` holds the events recorded now (none when
    already recorded)."""
    since = since or config.review.since
    zone = ZoneInfo(config.review.timezone)
    scheduled = _scheduled(period_subject)
    guard = store_lock if store_lock is not None else nullcontext()
    with guard:
        end, prices_at = (scheduled or now).astimezone(zone), now.astimezone(zone)
        review = build(config.store_path, end, since, prices_at=prices_at, settings=config.review)
    subject = review.period if scheduled or period_subject is None else str(period_subject)
    facts = {**review.to_dict(), "period": subject}
    with guard:
        recorded = digest.record(config.store_path, channels(config), subject, facts, now)
    report = alerting.check(config, env, console, now=now, rules=(), store_lock=store_lock)
    return replace(report, fired=recorded)


def last_due(settings: ReviewSettings, now: datetime) -> datetime | None:
    """The latest scheduled fire time at or before `now` (None: none in LAST_DUE_HORIZON).
    APScheduler computes forward only: walk forward through ever longer windows back."""
    trigger = settings.trigger()
    window = timedelta(hours=1)
    while True:
        start = now - window
        fire, last = trigger.get_next_fire_time(None, start), None
        while fire is not None and fire <= now:
            last, fire = fire, trigger.get_next_fire_time(fire, fire)
        if last is not None or window >= LAST_DUE_HORIZON:
            return last
        window = min(window * 4, LAST_DUE_HORIZON)


def _scheduled(given: datetime | str | None) -> datetime | None:
    """The scheduled fire time `period_subject` names, if it names one."""
    if not isinstance(given, str):
        return given
    try:
        return datetime.fromisoformat(given)
    except ValueError:
        return None
