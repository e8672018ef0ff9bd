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
from collectors import gpus as gpu_table
from collectors.common import (
    ConfigError,
    env_variable_name,
    no_unknown,
    parse_duration,
    shown,
    text,
)
from collectors.gpus import GPU_MODELS, GpuModel, Overrides
from storage.fx import RATE_PLACES, FxRate, GpuFact
from storage.reads.gpu_filter import GpuNames, names_of
from storage.writes.validate import PriceLimits, parse_limits
from tracker import store_settings
from tracker.daemon.export import ExportSettings, parse_export
from tracker.daemon.settings import (
    DaemonSettings,
    MetricsSettings,
    ReviewSettings,
    parse_daemon,
    parse_metrics,
    parse_review,
)
from tracker.web.settings import WebSettings, parse_web

if TYPE_CHECKING:  # the collectors' base is imported by the commands that collect
    from collectors.base import ProviderSettings

DEFAULT_CONFIG = Path("config.toml")
DEFAULT_STORE = "prices.duckdb"
# The store a command uses when neither --db nor [storage] path says (docs/configuration.md).
STORE_ENV = "GPU_TRACKER_DB"
_TOP_KEYS = {
    "storage",
    "providers",
    "alerts",
    "fx",
    "daemon",
    "review",
    "metrics",
    "collect",
    "export",
    "web",
    "gpus",
}
_STORAGE_KEYS = {"path"} | store_settings.KEYS
_COMMON_KEYS = {"enabled", "endpoint", "regions", "interval", "timeout", "deadline"}
# Bounds (docs/configuration.md): a read timeout of up to 10 minutes; a whole collection of a
# provider within 1 s to 24 h (default 15 minutes); a schedule from 1 s to a year, so every
# duration fits DuckDB's INTEGER seconds and the scheduler's dates with room to spare.
TIMEOUT_RANGE_S = (0.1, 600.0)
DEFAULT_DEADLINE = "15m"
DEADLINE_MAX_S = 86400
INTERVAL_MAX_S = 365 * 86400
# Text a config gives a host, a region or a path: no control characters (a NUL cuts a path
# short in the C library below, so the store would silently land elsewhere).
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_MESSAGE_MAX = 1000
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
    deadline_s: int = 900
    options: dict[str, Any] = field(default_factory=dict)
    credential_vars: dict[str, str] = field(default_factory=dict)  # name -> env variable
    optional_credential_vars: dict[str, str] = field(default_factory=dict)
    gpus: Overrides | None = None  # the config's [gpus] entries, for every collector

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
            deadline_s=self.deadline_s,
            # One interval back, plus slack for a late run: every change since the last one.
            history_window_s=self.interval_s + self.interval_s // 2,
            gpus=self.gpus,
        )
        return settings, missing


@dataclass(frozen=True)
class Config:
    source: Path | None
    store_path: Path
    providers: dict[str, ProviderConfig]
    alerts: AlertSettings = field(default_factory=AlertSettings)
    fx: tuple[FxRate, ...] = ()
    # What the store's FLOPs-per-dollar columns know of each GPU (the GPU table).
    gpu_facts: tuple[GpuFact, ...] = field(default_factory=lambda: _gpu_facts())
    # [gpus]: the user's instance type and model entries over the bundled GPU table.
    gpus: Overrides = field(default_factory=Overrides)
    daemon: DaemonSettings = field(default_factory=DaemonSettings)
    review: ReviewSettings = field(default_factory=ReviewSettings)
    metrics: MetricsSettings = field(default_factory=MetricsSettings)
    export: ExportSettings = field(default_factory=ExportSettings)
    web: WebSettings = field(default_factory=WebSettings)  # [web]: the daemon's dashboard
    store: store_settings.StoreSettings = field(default_factory=store_settings.StoreSettings)
    limits: PriceLimits = field(default_factory=PriceLimits)  # [collect]: what a storable price is
    # What chose the store, for messages about it: `storage.path`, `--db` or the variable.
    store_key: str = "storage.path"

    def enabled(self, names: tuple[str, ...] = ()) -> list[ProviderConfig]:
        """The providers to collect: the named ones (even if disabled), else every enabled one."""
        for name in names:
            if name not in self.providers:
                raise ConfigError(f"--provider {name}: unknown provider; known: {_known()}")
        if names:
            return [self.providers[n] for n in names]
        return [p for p in self.providers.values() if p.enabled]


def gpu_names(models: Mapping[str, GpuModel] = GPU_MODELS) -> GpuNames:
    """The names a filter may give a GPU by (`A100`, `A100 80GB`, `H100 NVL`): each model's
    name and aliases, its memory variants and the variants' own names."""
    return names_of(
        (m.name, m.aliases, m.memory_gib, {v.memory_gib: v.name for v in m.variants})
        for m in models.values()
    )


def _gpu_facts(models: Mapping[str, GpuModel] = GPU_MODELS) -> tuple[GpuFact, ...]:
    """A row per model, and one per memory variant with its own FP16 figure (H100 NVL)."""
    return tuple(
        fact
        for m in models.values()
        for fact in (
            GpuFact(m.name, m.fp16_tflops),
            *(
                GpuFact(m.name, v.fp16_tflops, v.memory_gib)
                for v in m.variants
                if v.fp16_tflops is not None
            ),
        )
    )


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
    if store:
        key = "--db"
        chosen: Path | str | None = store
    else:
        key, chosen = STORE_ENV, (os.environ if env is None else env).get(STORE_ENV)
    if not chosen:
        return config
    return replace(config, store_path=_store_path(str(chosen), key), store_key=key)


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
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path}: not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset {exc.start}); "
            "TOML files are UTF-8"
        ) from exc
    except OSError as exc:  # a directory, no permission, an I/O error
        raise ConfigError(f"--config {path}: cannot be read ({exc.strerror or exc})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from exc
    try:
        return from_dict(data, source=path)
    except ConfigError as exc:  # every message names the file as well as the key
        raise ConfigError(one_line(f"{path}: {exc}")) from exc


def one_line(message: str) -> str:
    """A message as one line of sane length: a key or value quoted raw (a TOML key may hold a
    newline, or be a pasted megabyte) shows its control characters escaped, and is cut."""
    message = _CONTROL.sub(lambda m: repr(m.group())[1:-1], message)
    return message if len(message) <= _MESSAGE_MAX else message[: _MESSAGE_MAX - 3] + "..."


def from_dict(data: Mapping[str, Any], *, source: Path | None) -> Config:
    no_unknown(data, _TOP_KEYS, "")
    storage = _table(data, "storage")
    no_unknown(storage, _STORAGE_KEYS, "storage.")
    store_path = _store_path(
        text(storage.get("path", DEFAULT_STORE), "storage.path"), "storage.path"
    )
    if not store_path.is_absolute() and source is not None:
        # A daemon's working directory is rarely the config's: resolve beside the file.
        store_path = source.parent / store_path
    providers_raw = _table(data, "providers")
    no_unknown(providers_raw, set(REGISTRY), "providers.")
    gpus = gpu_table.parse_overrides(_table(data, "gpus"), GPU_MODELS, REGISTRY)
    models = {**GPU_MODELS, **gpus.models}
    providers = {
        name: replace(
            _provider(name, info, _table(providers_raw, name, prefix="providers.")),
            gpus=gpus or None,
        )
        for name, info in REGISTRY.items()
    }
    alerts = _alerts(_table(data, "alerts"), models)
    return Config(
        source,
        store_path,
        providers,
        alerts,
        fx=_fx(_table(data, "fx")),
        gpu_facts=_gpu_facts(models),
        gpus=gpus,
        daemon=parse_daemon(_table(data, "daemon")),
        review=parse_review(_table(data, "review"), set(alerts.channels), models),
        metrics=parse_metrics(_table(data, "metrics")),
        export=parse_export(_table(data, "export")),
        web=parse_web(_table(data, "web")),
        store=store_settings.parse_store_settings(storage),
        limits=parse_limits(_table(data, "collect")),
    )


def _alerts(raw: Mapping[str, Any], models: Mapping[str, GpuModel] = GPU_MODELS) -> AlertSettings:
    """[alerts]: validated by the alerts package; rule filters may name known GPUs (the user's
    [gpus.models] included) and providers."""
    return parse_settings(raw, gpu_models=gpu_names(models), providers=list(REGISTRY))


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
            if key.endswith(("_endpoint", "_url")):
                _url(options[key], prefix + key)
    endpoint = raw.get("endpoint")
    if endpoint is not None:
        _url(text(endpoint, prefix + "endpoint"), prefix + "endpoint")
    enabled = raw.get("enabled", True)
    if not isinstance(enabled, bool):
        raise ConfigError(f"{prefix}enabled: expected true or false, got {enabled!r}")
    return ProviderConfig(
        name=name,
        enabled=enabled,
        endpoint=endpoint,
        regions=tuple(_str_list(raw["regions"], prefix + "regions")) if "regions" in raw else (),
        interval_s=parse_duration(
            raw.get("interval", info.default_interval),
            prefix + "interval",
            noun="an interval",
            most=INTERVAL_MAX_S,
        ),
        timeout=_timeout(raw.get("timeout", 30), prefix + "timeout"),
        deadline_s=parse_duration(
            raw.get("deadline", DEFAULT_DEADLINE), prefix + "deadline", most=DEADLINE_MAX_S
        ),
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
    """A non-empty list of names without control characters. An empty list is refused: read
    as "none" it would collect nothing, read as "all" it would silently ignore the user; leaving
    the key out is how to say "the provider's own"."""
    if not isinstance(value, list):
        raise ConfigError(f"{key}: expected a list of strings, got {shown(value)}")
    if not value:
        raise ConfigError(f"{key}: an empty list; leave the key out for the default")
    names = [text(v, f"{key}[{i}]") for i, v in enumerate(value)]
    for i, name in enumerate(names):
        if _CONTROL.search(name) or len(name) > 200 or name != name.strip():
            raise ConfigError(
                f"{key}[{i}]: {shown(name)} is not a name (spaces around it, control "
                "characters or over 200 characters)"
            )
    return names


def _timeout(value: Any, key: str) -> float:
    low, high = TIMEOUT_RANGE_S
    if (
        not isinstance(value, int | float)
        or isinstance(value, bool)
        or not math.isfinite(value)
        or not low <= value <= high
    ):
        raise ConfigError(
            f"{key}: expected a number of seconds from {low:g} to {high:g}, got {shown(value)}"
        )
    return float(value)


def _store_path(value: str, key: str) -> Path:
    if "\x00" in value:
        raise ConfigError(f"{key}: the path holds a NUL character; the store would land elsewhere")
    if _CONTROL.search(value):
        raise ConfigError(f"{key}: {shown(value, 400)} holds control characters")
    if os.sep == "/" and "\\" in value:  # DuckDB reads it as a separator: a/b, not a\b
        raise ConfigError(
            f"{key}: {shown(value, 400)} holds a backslash, which DuckDB takes for a directory "
            "separator (the store would land elsewhere)"
        )
    return Path(value)


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
    """An http(s) URL with a host, a valid port, and nothing a client would quietly re-encode
    or cut (spaces, control characters)."""
    parts = urlsplit(value)
    try:
        port = parts.port  # ValueError when out of 0-65535 or not a number
    except ValueError:
        port = -1
    if (
        parts.scheme not in ("http", "https")
        or not parts.hostname
        or port == -1
        or port == 0
        or any(c.isspace() for c in value)
        or _CONTROL.search(value)
    ):
        raise ConfigError(
            f"{key}: {shown(value)} is not an http(s) URL with a host (and a port from 1 to "
            "65535, no spaces)"
        )
