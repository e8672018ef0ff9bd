"""The `[daemon]`, `[review]` and `[metrics]` tables of config.toml, validated.

Only the daemon (and `gpu-tracker review` / `status`) use them; a one-shot `collect` ignores
them. Every error names the key path, like the rest of the config.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from collectors.common import ConfigError
from tracker.config.keys import (
    BOOLEAN,
    Key,
    Kind,
    Table,
    duration,
    names,
    number,
    one_of,
    refuse,
    whole,
)

if TYPE_CHECKING:
    from apscheduler.triggers.cron import CronTrigger

LOG_FORMATS = ("text", "json")
DEFAULT_REVIEW_CRON = "0 9 1 1,7 *"  # 09:00 on 1 January and 1 July
# The 3-year comparison's need, bounded like a look-back: beyond these a value is a typo.
_TCO_GPUS_MAX = 100_000
_TCO_MONTHS_MAX = 120
_SINCE = re.compile(r"^\s*(\d+)\s*(mo|d|w|y)\s*$")
SINCE = {"type": "string", "pattern": _SINCE.pattern}
# A look-back of at most 10 years, in each unit (beyond it dates overflow and nothing is kept).
_SINCE_MAX = {"y": 10, "mo": 120, "w": 521, "d": 3652}
_LISTEN = re.compile(r"^(?:\[(?P<v6>[^\]\s]+)\]|(?P<host>[^:\[\]\s]+)):(?P<port>[0-9]{1,5})$")


@dataclass(frozen=True)
class DaemonSettings:
    """How the daemon schedules: `jitter_s` None = 10% of each provider's interval, at most
    5 minutes; `max_backoff_s` caps the longer interval of a provider that keeps failing."""

    jitter_s: int | None = None
    misfire_grace_s: int = 15 * 60
    max_backoff_s: int = 6 * 3600
    shutdown_grace_s: int = 10
    job_timeout_s: int | None = None  # None: twice the provider's interval, at least 30 min
    stale_alert: bool = True
    log_format: Literal["text", "json"] = "text"

    def timeout_for(self, interval_s: int) -> int:
        """How long one collection may take before it is stopped (a failed run)."""
        if self.job_timeout_s is not None:
            return self.job_timeout_s
        return max(2 * interval_s, 1800)

    def jitter_for(self, interval_s: int) -> int:
        if self.jitter_s is not None:
            return self.jitter_s
        return min(interval_s // 10, 300)


@dataclass(frozen=True)
class Since:
    """A look-back like `6mo`: a number of calendar months, days, weeks or years."""

    amount: int
    unit: Literal["mo", "d", "w", "y"]

    def __str__(self) -> str:
        return f"{self.amount}{self.unit}"


@dataclass(frozen=True)
class ReviewSettings:
    enabled: bool = True
    cron: str = DEFAULT_REVIEW_CRON
    timezone: str = "UTC"
    since: Since = Since(6, "mo")
    channels: tuple[str, ...] = ()  # empty: every configured channel
    gpus: tuple[str, ...] = ()  # the GPU models followed, as the GPU table spells them; (): all
    # The need the cheapest 3-year strategy is priced for: the `tco` command's defaults.
    tco_gpus: int = 8
    tco_months: int = 36
    tco_utilization: float = 1.0

    def trigger(self) -> CronTrigger:
        from zoneinfo import ZoneInfo

        from apscheduler.triggers.cron import CronTrigger  # the daemon's; not every command's

        return CronTrigger.from_crontab(self.cron, timezone=ZoneInfo(self.timezone))


@dataclass(frozen=True)
class MetricsSettings:
    """`listen` None: no endpoint. `loopback` False means it is reachable from elsewhere."""

    host: str | None = None
    port: int = 9108

    @property
    def enabled(self) -> bool:
        return self.host is not None

    @property
    def loopback(self) -> bool:
        if self.host is None:
            return True
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False


def parse_since(value: Any, key: str) -> Since:
    """'6mo', '180d', '26w', '1y' -> Since."""
    match = _SINCE.match(value) if isinstance(value, str) else None
    digits = match.group(1).lstrip("0") if match else ""
    if not match or int(digits[:5] or "0") == 0:  # a few digits: int() of thousands refuses
        raise ConfigError(f'{key}: {value!r} is not a look-back like "6mo", "180d", "1y"')
    unit: Any = match.group(2)
    if len(digits) > 4 or int(digits) > _SINCE_MAX[unit]:
        raise ConfigError(
            f"{key}: {value!r} is longer than the 10 years a look-back may be "
            f"(at most {', '.join(f'{n}{u}' for u, n in _SINCE_MAX.items())})"
        )
    return Since(int(digits), unit)


def _timezone(value: Any, key: str) -> str:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError  # only where a config names a zone

    try:
        ZoneInfo(str(value))
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise refuse(key, f"unknown time zone {value!r}") from exc
    return str(value)


def _listen(value: Any, key: str) -> tuple[str, int]:
    match = _LISTEN.match(value) if isinstance(value, str) else None
    if not match or not 0 < int(match.group("port")) < 65536:
        raise refuse(key, f'{value!r} is not host:port like "127.0.0.1:9108" or "[::1]:9108"')
    return match.group("v6") or match.group("host"), int(match.group("port"))


DAEMON = Table(
    "daemon",
    (
        Key(
            "jitter",
            duration(86400, zero=True),
            None,
            "random delay of each run (default: 10% of the interval, at most 5m)",
        ),
        Key("misfire_grace", duration(7 * 86400), "15m", "how late a missed run may still start"),
        Key("max_backoff", duration(30 * 86400), "6h", "longest interval of a failing provider"),
        Key("shutdown_grace", duration(3600), "10s", "how long a stop waits for running jobs"),
        Key(
            "job_timeout",
            duration(7 * 86400),
            None,
            "longest collection (default: twice the interval, at least 30m)",
        ),
        Key("stale_alert", BOOLEAN, True, "alert when a provider's data goes stale"),
        Key("log_format", one_of(*LOG_FORMATS), "text", "the log lines' format"),
    ),
)
REVIEW = Table(
    "review",
    (
        Key("enabled", BOOLEAN, True, "whether the daemon sends the half-yearly review"),
        Key("timezone", Kind("an IANA time zone", _timezone), "UTC", "the time zone of `cron`"),
        # The line is checked with the time zone, by parse_review: the scheduler is imported
        # only to check a line given (the default is a valid one).
        Key(
            "cron",
            Kind("a crontab line", lambda v, k: str(v)),
            DEFAULT_REVIEW_CRON,
            "when it is sent",
        ),
        Key(
            "since",
            Kind("a look-back like `6mo`", parse_since, SINCE),
            "6mo",
            "the period reviewed",
        ),
        Key("channels", names("channel names"), [], "the channels sent to (default: all)"),
        Key("gpus", names("GPU model names"), [], "the GPU models followed (default: all)"),
        Key("tco_gpus", whole(1, _TCO_GPUS_MAX), 8, "GPUs of the 3-year comparison's need"),
        Key("tco_months", whole(1, _TCO_MONTHS_MAX), 36, "months of the 3-year comparison"),
        Key(
            "tco_utilization",
            number(0, 1, "a share of the hours above 0 and at most 1 (0.6 for 60%)", low_open=True),
            1.0,
            "the share of the hours the GPUs run",
        ),
    ),
)
METRICS = Table(
    "metrics",
    (
        Key(
            "listen",
            Kind("host:port", _listen),
            None,
            "the Prometheus endpoint's address (default: no endpoint)",
        ),
    ),
)


def parse_daemon(raw: Mapping[str, Any]) -> DaemonSettings:
    got = DAEMON.read(raw)
    return DaemonSettings(
        jitter_s=got["jitter"],
        misfire_grace_s=got["misfire_grace"],
        max_backoff_s=got["max_backoff"],
        shutdown_grace_s=got["shutdown_grace"],
        job_timeout_s=got["job_timeout"],
        stale_alert=got["stale_alert"],
        log_format=got["log_format"],
    )


def parse_review(
    raw: Mapping[str, Any], channels: set[str], gpu_models: Iterable[str] = ()
) -> ReviewSettings:
    """[review]; `channels` are the configured alert channels a review may name, `gpu_models`
    the GPU table's names `gpus` may name (in any case)."""
    got = REVIEW.read(raw)
    if "cron" in raw:
        _check_cron(got["cron"], got["timezone"])
    for name in got["channels"]:
        if name not in channels:
            known = ", ".join(sorted(channels))
            raise ConfigError(f"review.channels: {name!r} is not a configured channel ({known})")
    return ReviewSettings(
        enabled=got["enabled"],
        cron=got["cron"],
        timezone=got["timezone"],
        since=got["since"],
        channels=got["channels"],
        gpus=_followed(got["gpus"], gpu_models),
        tco_gpus=got["tco_gpus"],
        tco_months=got["tco_months"],
        tco_utilization=got["tco_utilization"],
    )


def _followed(wanted: tuple[str, ...], gpu_models: Iterable[str]) -> tuple[str, ...]:
    """`review.gpus` as the GPU table spells the names, once each, in the order given."""
    known = {name.lower(): name for name in gpu_models}
    found = []
    for name in wanted:
        if name.strip().lower() not in known:
            raise ConfigError(
                f"review.gpus: {name!r} is not a GPU model of the GPU table "
                f"({', '.join(sorted(known.values()))})"
            )
        found.append(known[name.strip().lower()])
    return tuple(dict.fromkeys(found))


def parse_metrics(raw: Mapping[str, Any]) -> MetricsSettings:
    listen = METRICS.read(raw)["listen"]
    return MetricsSettings() if listen is None else MetricsSettings(*listen)


def _check_cron(cron: str, timezone: str) -> None:
    from zoneinfo import ZoneInfo

    from apscheduler.triggers.cron import CronTrigger  # the daemon's: not every command's start

    try:
        CronTrigger.from_crontab(cron, timezone=ZoneInfo(timezone))
    except ValueError as exc:
        raise ConfigError(
            f'review.cron: {cron!r} is not a crontab line like "0 9 1 1,7 *" ({exc})'
        ) from exc
