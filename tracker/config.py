"""config.toml: read, validated and resolved against the environment. Only `tracker` reads it.

Unknown keys and bad values are ConfigErrors naming the key (`providers.aws.regions`). Secrets
never live in the file: it names the environment variable that holds each one.
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from alerts.settings import AlertSettings, parse_settings
from collectors import REGISTRY, ProviderInfo
from collectors.common import ConfigError, env_variable_name, no_unknown, parse_duration, text
from collectors.gpus import GPU_MODELS
from storage.fx import RATE_PLACES, FxRate
from storage.writes.validate import PriceLimits, parse_limits
from tracker import store_settings
from tracker.daemon.settings import (
    DaemonSettings,
    MetricsSettings,
    ReviewSettings,
    parse_daemon,
    parse_metrics,
    parse_review,
)

if TYPE_CHECKING:  # the collectors' base is imported by the commands that collect
    from collectors.base import ProviderSettings

DEFAULT_CONFIG = Path("config.toml")
DEFAULT_STORE = "prices.duckdb"
# The store a command uses when neither --db nor [storage] path says (CONTRACT.md, revision 2).
STORE_ENV = "GPU_TRACKER_DB"
_TOP_KEYS = {"storage", "providers", "alerts", "fx", "daemon", "review", "metrics", "collect"}
_STORAGE_KEYS = {"path"} | store_settings.KEYS
_COMMON_KEYS = {"enabled", "endpoint", "regions", "interval", "timeout"}
_CURRENCY = re.compile(r"^[A-Z]{3}$")
_FX_KEYS = {"units_per_usd", "usd_per_unit", "date", "source"}


@dataclass(frozen=True)
class ProviderConfig:
    name: str
    enabled: bool = True
    endpoint: str | None = None
    regions: tuple[str, ...] = ()
    interval_s: int = 3600
    timeout: float = 30.0
    options: dict[str, Any] = field(default_factory=dict)
    credential_vars: dict[str, str] = field(default_factory=dict)  # name -> env variable
    optional_credential_vars: dict[str, str] = field(default_factory=dict)

    def settings(self, env: Mapping[str, str]) -> tuple[ProviderSettings, list[str]]:
        """Collector settings with credentials resolved from `env`, and the variables missing."""
        from collectors.base import ProviderSettings

        wanted = {**self.optional_credential_vars, **self.credential_vars}
        credentials = {k: env[v] for k, v in wanted.items() if env.get(v)}
        missing = [v for k, v in self.credential_vars.items() if k not in credentials]
        settings = ProviderSettings(
            endpoint=self.endpoint,
            regions=self.regions,
            credentials=credentials,
            options=dict(self.options),
            timeout=self.timeout,
            # One interval back, plus slack for a late run: every change since the last one.
            history_window_s=self.interval_s + self.interval_s // 2,
        )
        return settings, missing


@dataclass(frozen=True)
class Config:
    source: Path | None
    store_path: Path
    providers: dict[str, ProviderConfig]
    alerts: AlertSettings = field(default_factory=AlertSettings)
    fx: tuple[FxRate, ...] = ()
    daemon: DaemonSettings = field(default_factory=DaemonSettings)
    review: ReviewSettings = field(default_factory=ReviewSettings)
    metrics: MetricsSettings = field(default_factory=MetricsSettings)
    limits: PriceLimits = field(default_factory=PriceLimits)  # [collect]: what a storable price is
    store: store_settings.StoreSettings = field(default_factory=store_settings.StoreSettings)

    def enabled(self, names: tuple[str, ...] = ()) -> list[ProviderConfig]:
        """The providers to collect: the named ones (even if disabled), else every enabled one."""
        for name in names:
            if name not in self.providers:
                raise ConfigError(f"--provider {name}: unknown provider; known: {_known()}")
        if names:
            return [self.providers[n] for n in names]
        return [p for p in self.providers.values() if p.enabled]


def load(
    path: Path | str | None = None,
    *,
    store: Path | str | None = None,
    env: Mapping[str, str] | None = None,
) -> Config:
    """Load `path`, or ./config.toml when it exists, else the built-in defaults.

    The store is `store` (--db) when given, else $GPU_TRACKER_DB when set, else the file's
    [storage] path, else prices.duckdb: the command line beats the environment beats the file.
    """
    config = _read(path)
    chosen = store or (os.environ if env is None else env).get(STORE_ENV)
    return replace(config, store_path=Path(chosen)) if chosen else config


def _read(path: Path | str | None) -> Config:
    if path is None:
        path = DEFAULT_CONFIG if DEFAULT_CONFIG.exists() else None
    if path is None:
        return from_dict({}, source=None)
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(f"--config {path}: no such file") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from exc
    return from_dict(data, source=path)


def from_dict(data: Mapping[str, Any], *, source: Path | None) -> Config:
    no_unknown(data, _TOP_KEYS, "")
    storage = _table(data, "storage")
    no_unknown(storage, _STORAGE_KEYS, "storage.")
    store_path = Path(text(storage.get("path", DEFAULT_STORE), "storage.path"))
    if not store_path.is_absolute() and source is not None:
        # A daemon's working directory is rarely the config's: resolve beside the file.
        store_path = source.parent / store_path
    providers_raw = _table(data, "providers")
    no_unknown(providers_raw, set(REGISTRY), "providers.")
    providers = {
        name: _provider(name, info, _table(providers_raw, name, prefix="providers."))
        for name, info in REGISTRY.items()
    }
    alerts = _alerts(_table(data, "alerts"))
    return Config(
        source,
        store_path,
        providers,
        alerts,
        fx=_fx(_table(data, "fx")),
        daemon=parse_daemon(_table(data, "daemon")),
        review=parse_review(_table(data, "review"), set(alerts.channels)),
        metrics=parse_metrics(_table(data, "metrics")),
        limits=parse_limits(_table(data, "collect")),
        store=store_settings.parse_store_settings(storage),
    )


def _alerts(raw: Mapping[str, Any]) -> AlertSettings:
    """[alerts]: validated by the alerts package; rule filters may name known GPUs and providers."""
    return parse_settings(raw, gpu_models=list(GPU_MODELS), providers=list(REGISTRY))


def environment() -> Mapping[str, str]:
    return os.environ


def _provider(name: str, info: ProviderInfo, raw: Mapping[str, Any]) -> ProviderConfig:
    prefix = f"providers.{name}."
    # Optional credentials too can come from another variable (gcp: `api_key_env`).
    cred_keys = {f"{k}_env" for k in (*info.credential_env, *info.optional_credential_env)}
    no_unknown(raw, _COMMON_KEYS | set(info.options) | cred_keys, prefix)
    options = {}
    for key, kind in info.options.items():
        if key in raw:
            options[key] = _typed(raw[key], kind, prefix + key)
            if key.endswith("_endpoint"):
                _url(options[key], prefix + key)
    endpoint = raw.get("endpoint")
    if endpoint is not None:
        _url(text(endpoint, prefix + "endpoint"), prefix + "endpoint")
    enabled = raw.get("enabled", True)
    if not isinstance(enabled, bool):
        raise ConfigError(f"{prefix}enabled: expected true or false, got {enabled!r}")
    timeout = raw.get("timeout", 30)
    if not isinstance(timeout, int | float) or isinstance(timeout, bool) or timeout <= 0:
        raise ConfigError(f"{prefix}timeout: expected a number of seconds > 0, got {timeout!r}")
    return ProviderConfig(
        name=name,
        enabled=enabled,
        endpoint=endpoint,
        regions=tuple(_str_list(raw.get("regions", []), prefix + "regions")),
        interval_s=parse_duration(
            raw.get("interval", info.default_interval), prefix + "interval", noun="an interval"
        ),
        timeout=float(timeout),
        options=options,
        credential_vars={
            k: env_variable_name(raw.get(f"{k}_env", v), f"{prefix}{k}_env")
            for k, v in info.credential_env.items()
        },
        optional_credential_vars={
            k: env_variable_name(raw.get(f"{k}_env", v), f"{prefix}{k}_env")
            for k, v in info.optional_credential_env.items()
        },
    )


def _fx(raw: Mapping[str, Any]) -> tuple[FxRate, ...]:
    """[fx]: per currency one dated rate, or a list of them (a rate history)."""
    rates: list[FxRate] = []
    for currency, value in raw.items():
        key = f"fx.{currency}"
        if not _CURRENCY.match(currency) or currency == "USD":
            raise ConfigError(f"{key}: expected an ISO currency code other than USD, like CNY")
        entries = value if isinstance(value, list) else [value]
        dates = set()
        for i, entry in enumerate(entries):
            rate = _fx_rate(currency, entry, f"{key}[{i}]" if isinstance(value, list) else key)
            if rate.as_of in dates:
                raise ConfigError(f"{key}: two rates dated {rate.as_of}")
            dates.add(rate.as_of)
            rates.append(rate)
    return tuple(rates)


def _fx_rate(currency: str, entry: Any, key: str) -> FxRate:
    if not isinstance(entry, Mapping):
        raise ConfigError(f"{key}: expected a table like {{ units_per_usd = 7.0197, date = ... }}")
    no_unknown(entry, _FX_KEYS, key + ".")
    given = [k for k in ("units_per_usd", "usd_per_unit") if k in entry]
    if len(given) != 1:
        raise ConfigError(f"{key}: give exactly one of units_per_usd or usd_per_unit")
    amount = entry[given[0]]
    if (
        not isinstance(amount, int | float)
        or isinstance(amount, bool)
        or not math.isfinite(amount)
        or amount <= 0
    ):
        raise ConfigError(f"{key}.{given[0]}: expected a finite number > 0, got {amount!r}")
    if "date" not in entry:
        raise ConfigError(f"{key}.date: missing; a rate is only honest with the day it is from")
    as_of = _date(entry["date"], f"{key}.date")
    source = text(entry["source"], f"{key}.source") if "source" in entry else None
    # str() first: the TOML float 7.0197 becomes Decimal("7.0197"), not its binary expansion.
    value = Decimal(str(amount))
    rate = (
        FxRate.per_usd(currency, as_of, value, source)
        if given[0] == "units_per_usd"
        else FxRate(currency, as_of, value.quantize(RATE_PLACES), source)
    )
    # The store keeps USD per unit to 9 places in DECIMAL(18, 9): outside that, refuse here
    # rather than fail every provider's write later.
    if not Decimal("0") < rate.usd_per_unit < Decimal("1e9"):
        raise ConfigError(
            f"{key}.{given[0]}: {amount!r} is out of range (USD per unit must be between "
            "0.000000001 and 1000000000)"
        )
    return rate


def _date(value: Any, key: str) -> date:
    if isinstance(value, date) and not isinstance(value, datetime):
        return value
    if isinstance(value, str):
        try:
            return date.fromisoformat(value)
        except ValueError:
            pass
    raise ConfigError(f"{key}: expected a date like 2026-01-08, got {value!r}")


def _known() -> str:
    return ", ".join(sorted(REGISTRY))


def _table(data: Mapping[str, Any], key: str, prefix: str = "") -> Mapping[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, Mapping):
        raise ConfigError(f"{prefix}{key}: expected a table ([{prefix}{key}]), got {value!r}")
    return value


def _str_list(value: Any, key: str) -> list[str]:
    if not isinstance(value, list):
        raise ConfigError(f"{key}: expected a list of strings, got {value!r}")
    return [text(v, f"{key}[{i}]") for i, v in enumerate(value)]


def _typed(value: Any, kind: Any, key: str) -> Any:
    if kind is list:
        return _str_list(value, key)
    if kind is str:
        return text(value, key)
    if isinstance(kind, tuple):  # a string that must be one of these
        if value not in kind:
            raise ConfigError(f"{key}: expected one of {', '.join(kind)}, got {value!r}")
        return value
    raise ConfigError(f"{key}: unsupported option type {kind!r}")  # a registry mistake


def _url(value: str, key: str) -> None:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"{key}: {value!r} is not an http(s) URL with a host")
