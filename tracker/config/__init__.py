"""config.toml: read, validated and resolved against the environment. Only `tracker` reads it.

Unknown keys and bad values are ConfigErrors naming the key (`providers.aws.regions`). Secrets
never live in the file: it names the environment variable that holds each one.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from collectors import REGISTRY
from collectors.common import ConfigError, no_unknown
from storage.writes.validate import PriceLimits
from tracker.config import lazy
from tracker.config.daemon import (
    DAEMON,
    METRICS,
    REVIEW,
    DaemonSettings,
    MetricsSettings,
    ReviewSettings,
    parse_daemon,
    parse_metrics,
    parse_review,
)
from tracker.config.export import EXPORT, ExportSettings, parse_export
from tracker.config.fx import RATE, parse_fx
from tracker.config.keys import Table
from tracker.config.providers import CONTROL, PROVIDER, ProviderConfig, parse_provider
from tracker.config.raw import RAW, RawSettings, parse_raw
from tracker.config.store import (
    COLLECT,
    DEFAULT_STORE,
    STORAGE,
    StoreSettings,
    parse_collect,
    parse_storage,
    parse_suspicion,
)
from tracker.config.store import store_path as _store_path
from tracker.config.web import WEB, WebSettings, parse_web
from tracker.config.workloads import WORKLOAD, Workloads, parse_workloads

# The alerts' settings, the GPU table and the rates' types are imported where a config has the
# table that needs them, or a default is first read (tracker.config.lazy).
if TYPE_CHECKING:
    from alerts.settings import AlertSettings
    from collectors.gpus import GpuModel, Overrides
    from storage.fx import FxRate, GpuFacts
    from storage.reads.gpu_filter import GpuNames

__all__ = [
    "DECLARED",
    "DEFAULT_CONFIG",
    "DEFAULT_STORE",
    "STORE_ENV",
    "Config",
    "ConfigError",
    "ProviderConfig",
    "environment",
    "from_dict",
    "gpu_names",
    "load",
    "one_line",
]

DEFAULT_CONFIG = Path("config.toml")
# The store a command uses when neither --db nor [storage] path says (docs/configuration.md).
STORE_ENV = "GPU_TRACKER_DB"
_TOP_KEYS = {"storage", "providers", "alerts", "fx", "daemon", "review", "metrics", "collect",
             "export", "web", "gpus", "raw", "workloads"}  # fmt: skip
_MESSAGE_MAX = 1000
# Every declared table, in the order of docs/configuration.md's key reference.
DECLARED: tuple[Table, ...] = (
    STORAGE,
    COLLECT,
    RAW,
    PROVIDER,
    RATE,
    DAEMON,
    REVIEW,
    METRICS,
    EXPORT,
    WEB,
    WORKLOAD,
)


@dataclass(frozen=True)
class Config:
    source: Path | None
    store_path: Path
    providers: dict[str, ProviderConfig]
    alerts: lazy.Lazy[AlertSettings] = lazy.Lazy(lazy.alerts)  # noqa: RUF009 (a descriptor: built when read)
    fx: tuple[FxRate, ...] = ()
    # [gpus]: the user's instance type and model entries over the bundled GPU table.
    gpus: lazy.Lazy[Overrides] = lazy.Lazy(lazy.gpus)  # noqa: RUF009
    daemon: DaemonSettings = field(default_factory=DaemonSettings)
    review: ReviewSettings = field(default_factory=ReviewSettings)
    metrics: MetricsSettings = field(default_factory=MetricsSettings)
    export: ExportSettings = field(default_factory=ExportSettings)
    web: WebSettings = field(default_factory=WebSettings)  # [web]: the daemon's dashboard
    store: StoreSettings = field(default_factory=StoreSettings)
    raw: RawSettings = field(default_factory=RawSettings)  # [raw]: the answers kept
    limits: PriceLimits = field(default_factory=PriceLimits)  # [collect]: what a storable price is
    workloads: lazy.Lazy[Workloads] = lazy.Lazy(lazy.workloads)  # noqa: RUF009 ([workloads])
    # What chose the store, for messages about it: `storage.path`, `--db` or the variable.
    store_key: str = "storage.path"

    @cached_property
    def gpu_facts(self) -> GpuFacts:
        """What the store's FLOPs-per-dollar columns know of each GPU: the GPU table with the
        user's [gpus] entries. Worked out when first read: a command that stores nothing (`sql`)
        never parses the GPU table (docs/performance.md, "Start-up of a query")."""
        from collectors.gpus import bundled_models, form_factor_rules

        return lazy.gpu_facts(
            {**bundled_models(), **self.gpus.models}, form_factor_rules(self.gpus)
        )

    def enabled(self, names: tuple[str, ...] = ()) -> list[ProviderConfig]:
        """The providers to collect: the named ones (even if disabled), else every enabled one."""
        for name in names:
            if name not in self.providers:
                known = ", ".join(sorted(REGISTRY))
                raise ConfigError(f"--provider {name}: unknown provider; known: {known}")
        if names:
            return [self.providers[n] for n in names]
        return [p for p in self.providers.values() if p.enabled]


def gpu_names(models: Mapping[str, GpuModel] | None = None) -> GpuNames:
    """The names a filter may give a GPU by (`A100`, `A100 80GB`, `H100 NVL`): each model's
    name and aliases, its memory variants and the variants' own names (of the bundled models
    when no `models` are given)."""
    from collectors.gpus import bundled_models
    from storage.reads.gpu_filter import names_of

    models = bundled_models() if models is None else models
    return names_of(
        (m.name, m.aliases, m.memory_gib, {v.memory_gib: v.name for v in m.variants})
        for m in models.values()
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
    return lazy.with_changes(config, store_path=_store_path(str(chosen), key), store_key=key)


def _read(path: Path | str | None) -> Config:
    if path is None:
        path = DEFAULT_CONFIG if DEFAULT_CONFIG.exists() else None
    if path is None:
        return from_dict({}, source=None)
    import tomllib  # only where there is a file to read

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
    message = CONTROL.sub(lambda m: repr(m.group())[1:-1], message)
    return message if len(message) <= _MESSAGE_MAX else message[: _MESSAGE_MAX - 3] + "..."


def from_dict(data: Mapping[str, Any], *, source: Path | None) -> Config:
    no_unknown(data, _TOP_KEYS, "")
    store_path, store = parse_storage(_table(data, "storage"))
    if not store_path.is_absolute() and source is not None:
        # A daemon's working directory is rarely the config's: resolve beside the file.
        store_path = source.parent / store_path
    providers_raw = _table(data, "providers")
    no_unknown(providers_raw, set(REGISTRY), "providers.")
    gpus_raw = _table(data, "gpus")
    # The GPU table is parsed only where the config needs it ([gpus], alert rules, review.gpus),
    # the alerts' settings only with [alerts]: without them the result is the same (the
    # defaults), and `sql` starts faster (docs/performance.md, "Start-up against DuckDB's own").
    tables: dict[str, Any] = {}
    if gpus_raw:
        from collectors import gpus as gpu_table

        tables["gpus"] = gpu_table.parse_overrides(gpus_raw, gpu_table.bundled_models(), REGISTRY)

    def models() -> dict[str, GpuModel]:
        from collectors.gpus import bundled_models

        return {**bundled_models(), **(tables["gpus"].models if "gpus" in tables else {})}

    collect_raw = _table(data, "collect")
    suspicion = parse_suspicion(collect_raw)
    providers = {
        name: replace(
            parse_provider(name, info, _table(providers_raw, name, prefix="providers."), suspicion),
            gpus=tables.get("gpus") or None,
        )
        for name, info in REGISTRY.items()
    }
    alerts_raw = _table(data, "alerts")
    channels: tuple[str, ...] = ("console",)  # the channel there always is (alerts.settings)
    if alerts_raw:
        # No rules, no GPU filter to check: parse_settings reads the names for rules only.
        tables["alerts"] = _alerts(alerts_raw, models() if alerts_raw.get("rules") else {})
        channels = tables["alerts"].channels
    if workloads_raw := _table(data, "workloads"):  # over the bundled ones
        tables["workloads"] = parse_workloads(workloads_raw, gpu_names(models()))
    fx_raw = _table(data, "fx")
    return Config(
        source,
        store_path,
        providers,
        fx=parse_fx(fx_raw) if fx_raw else (),
        daemon=parse_daemon(_table(data, "daemon")),
        review=_review(_table(data, "review"), set(channels), models),
        metrics=parse_metrics(_table(data, "metrics")),
        export=parse_export(_table(data, "export")),
        web=parse_web(_table(data, "web")),
        store=store,
        raw=parse_raw(_table(data, "raw"), source),
        limits=parse_collect(collect_raw),
        **tables,
    )


def _alerts(raw: Mapping[str, Any], models: Mapping[str, GpuModel]) -> AlertSettings:
    """[alerts]: validated by the alerts package; rule filters may name known GPUs (the user's
    [gpus.models] included) and providers."""
    from alerts.settings import parse_settings

    return parse_settings(raw, gpu_models=gpu_names(models), providers=list(REGISTRY))


def _review(
    raw: Mapping[str, Any], channels: set[str], models: Callable[[], Mapping[str, GpuModel]]
) -> ReviewSettings:
    """[review]: `gpus` may name the known GPUs (the user's [gpus.models] included)."""
    return parse_review(raw, channels, models() if raw.get("gpus") else ())


def environment() -> Mapping[str, str]:
    return os.environ


def _table(data: Mapping[str, Any], key: str, prefix: str = "") -> Mapping[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, Mapping):
        raise ConfigError(f"{prefix}{key}: expected a table ([{prefix}{key}]), got {value!r}")
    return value
