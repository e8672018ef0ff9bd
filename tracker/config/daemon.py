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
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from collectors.common import ConfigError, no_unknown, parse_duration

if TYPE_CHECKING:
    from apscheduler.triggers.cron import CronTrigger

LOG_FORMATS = ("text", "json")
DEFAULT_REVIEW_CRON = "0 9 1 1,7 *"  # 09:00 on 1 January and 1 July
_DAEMON_KEYS = {
    "jitter",
    "misfire_grace",
    "max_backoff",
    "shutdown_grace",
    "job_timeout",
    "stale_alert",
    "log_format",
}
_REVIEW_KEYS = {
    "enabled",
    "cron",
    "timezone",
    "since",
    "channels",
    "gpus",
    "tco_gpus",
    "tco_months",
    "tco_utilization",
}
# The 3-year comparison's need, bounded like a look-back: beyond these a value is a typo.
_TCO_GPUS_MAX = 100_000
_TCO_MONTHS_MAX = 120
_METRICS_KEYS = {"listen"}
_SINCE = re.compile(r"^\s*(\d+)\s*(mo|d|w|y)\s*$")
# A look-back of at most 10 years, in each unit (beyond it dates overflow and nothing is kept).
_SINCE_MAX = {"y": 10, "mo": 120, "w": 521, "d": 3652}
# The longest each [daemon] duration may be (docs/configuration.md): beyond these a value is a
# typo, and the scheduler's date arithmetic would overflow long before the process ended.
_MOST_S = {
    "jitter": 86400,
    "misfire_grace": 7 * 86400,
    "max_backoff": 30 * 86400,
    "shutdown_grace": 3600,
    "job_timeout": 7 * 86400,
}
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


def parse_daemon(raw: Mapping[str, Any]) -> DaemonSettings:
    no_unknown(raw, _DAEMON_KEYS, "daemon.")
    defaults = DaemonSettings()
    log_format = raw.get("log_format", defaults.log_format)
    if log_format not in LOG_FORMATS:
        raise ConfigError(f"daemon.log_format: expected text or json, got {log_format!r}")
    return DaemonSettings(
        jitter_s=_seconds(raw, "jitter", None, allow_zero=True),
        misfire_grace_s=_seconds(raw, "misfire_grace", defaults.misfire_grace_s),
        max_backoff_s=_seconds(raw, "max_backoff", defaults.max_backoff_s),
        shutdown_grace_s=_seconds(raw, "shutdown_grace", defaults.shutdown_grace_s),
        job_timeout_s=_seconds(raw, "job_timeout", None),
        stale_alert=_bool(raw, "stale_alert", defaults.stale_alert, "daemon."),
        log_format=log_format,
    )


def parse_review(
    raw: Mapping[str, Any], channels: set[str], gpu_models: Iterable[str] = ()
) -> ReviewSettings:
    """[review]; `channels` are the configured alert channels a review may name, `gpu_models`
    the GPU table's names `gpus` may name (in any case)."""
    no_unknown(raw, _REVIEW_KEYS, "review.")
    defaults = ReviewSettings()
    timezone = raw.get("timezone", defaults.timezone)
    try:
        ZoneInfo(str(timezone))
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ConfigError(f"review.timezone: unknown time zone {timezone!r}") from exc
    cron = raw.get("cron", defaults.cron)
    if "cron" in raw:  # the default is a valid line; the scheduler is imported only to check one
        _check_cron(cron, str(timezone))
    wanted = raw.get("channels", [])
    if not isinstance(wanted, list) or not all(isinstance(c, str) for c in wanted):
        raise ConfigError(f"review.channels: expected a list of channel names, got {wanted!r}")
    for name in wanted:
        if name not in channels:
            known = ", ".join(sorted(channels))
            raise ConfigError(f"review.channels: {name!r} is not a configured channel ({known})")
    since = raw.get("since")
    return ReviewSettings(
        enabled=_bool(raw, "enabled", defaults.enabled, "review."),
        cron=str(cron),
        timezone=str(timezone),
        since=defaults.since if since is None else parse_since(since, "review.since"),
        channels=tuple(wanted),
        gpus=_followed(raw.get("gpus", []), gpu_models),
        tco_gpus=_count(raw, "tco_gpus", defaults.tco_gpus, _TCO_GPUS_MAX),
        tco_months=_count(raw, "tco_months", defaults.tco_months, _TCO_MONTHS_MAX),
        tco_utilization=_utilization(raw, defaults.tco_utilization),
    )


def _followed(value: Any, gpu_models: Iterable[str]) -> tuple[str, ...]:
    """`review.gpus` as the GPU table spells the names, once each, in the order given."""
    if not isinstance(value, list) or not all(isinstance(g, str) for g in value):
        raise ConfigError(f"review.gpus: expected a list of GPU model names, got {value!r}")
    known = {name.lower(): name for name in gpu_models}
    found = []
    for name in value:
        if name.strip().lower() not in known:
            raise ConfigError(
                f"review.gpus: {name!r} is not a GPU model of the GPU table "
                f"({', '.join(sorted(known.values()))})"
            )
        found.append(known[name.strip().lower()])
    return tuple(dict.fromkeys(found))


def _count(raw: Mapping[str, Any], key: str, default: int, most: int) -> int:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
        raise ConfigError(f"review.{key}: expected a whole number from 1 to {most}, got {value!r}")
    return value


def _utilization(raw: Mapping[str, Any], default: float) -> float:
    """The share of the hours the GPUs run, in (0, 1], as `tco --utilization` takes it."""
    value = raw.get("tco_utilization", default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
        raise ConfigError(
            f"review.tco_utilization: expected a share of the hours above 0 and at most 1 "
            f"(0.6 for 60%), got {value!r}"
        )
    return float(value)


def parse_metrics(raw: Mapping[str, Any]) -> MetricsSettings:
    no_unknown(raw, _METRICS_KEYS, "metrics.")
    listen = raw.get("listen")
    if listen is None:
        return MetricsSettings()
    match = _LISTEN.match(listen) if isinstance(listen, str) else None
    if not match or not 0 < int(match.group("port")) < 65536:
        raise ConfigError(
            f'metrics.listen: {listen!r} is not host:port like "127.0.0.1:9108" or "[::1]:9108"'
        )
    return MetricsSettings(match.group("v6") or match.group("host"), int(match.group("port")))


def _seconds(raw: Mapping[str, Any], key: str, default: Any, *, allow_zero: bool = False) -> Any:
    if key not in raw:
        return default
    if allow_zero and isinstance(raw[key], str) and raw[key].strip() in ("0", "0s"):
        return 0
    return parse_duration(raw[key], f"daemon.{key}", most=_MOST_S[key])


def _bool(raw: Mapping[str, Any], key: str, default: bool, prefix: str) -> bool:
    value = raw.get(key, default)
    if not isinstance(value, bool):
        raise ConfigError(f"{prefix}{key}: expected true or false, got {value!r}")
    return value


def _check_cron(cron: Any, timezone: str) -> None:
    from apscheduler.triggers.cron import CronTrigger  # the daemon's: not every command's start

    try:
        CronTrigger.from_crontab(str(cron), timezone=ZoneInfo(timezone))
    except ValueError as exc:
        raise ConfigError(
            f'review.cron: {cron!r} is not a crontab line like "0 9 1 1,7 *" ({exc})'
        ) from exc
