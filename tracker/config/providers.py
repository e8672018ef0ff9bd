"""`[providers.<name>]`: the keys every provider takes (on or off, endpoint, regions, interval,
timeout, deadline), its registry's own keys, and the variables naming its credentials.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from collectors import ProviderInfo
from collectors.common import ConfigError, env_variable_name, shown, text
from storage.writes.suspect import Suspicion
from tracker.config.keys import BOOLEAN, STRING, Key, Kind, Schema, Table, duration, number

if TYPE_CHECKING:  # the collectors' base is imported by the commands that collect
    from collectors.base import ProviderSettings
    from collectors.gpus import Overrides

# Bounds (docs/configuration.md): a read timeout of up to 10 minutes; a whole collection of a
# provider within 1 s to 24 h (default 15 minutes); a schedule from 1 s to a year, so every
# duration fits DuckDB's INTEGER seconds and the scheduler's dates with room to spare.
TIMEOUT_RANGE_S = (0.1, 600.0)
DEFAULT_DEADLINE = "15m"
DEADLINE_MAX_S = 86400
INTERVAL_MAX_S = 365 * 86400
# Text a config gives a host or a region: no control characters.
CONTROL = re.compile(r"[\x00-\x1f\x7f]")


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
    # When its answer is held ([collect] with this provider's own keys over it, docs/trust.md).
    suspicion: Suspicion = field(default_factory=Suspicion)

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
            transfer_prices=True,
        )
        return settings, missing


def _endpoint(value: Any, key: str) -> str:
    _url(text(value, key), key)
    return str(value)


# The providers whose SDK takes only scheme://host[:port] and posts to "/": a path would be
# dropped silently, so it is refused when the config is read, before any request.
AT_ROOT = frozenset({"tencent"})


def _at_root(endpoint: str, key: str) -> None:
    parts = urlsplit(endpoint)
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ConfigError(
            f"{key}: {endpoint!r}: the API is served at the root of its host; give "
            "scheme://host[:port] only"
        )


def _names(value: Any, key: str) -> tuple[str, ...]:
    return tuple(_str_list(value, key))


SHARE = number(0, 1, "a share from 0 to 1")
FACTOR = number(1, 1e6, "a factor above 1", low_open=True)
# A marketplace whose listings churn withdraws far more in a normal day (docs/trust.md).
OWN_MAX_WITHDRAWN = {"vastai": 0.6}


def suspicion_keys(given: Suspicion | None) -> tuple[Key, ...]:
    """The keys of when an answer is held: [collect]'s with their defaults (`given` None),
    else a provider's, none set by default (`given`, [collect]'s, holds)."""
    own = given is not None
    return (
        Key(
            "max_withdrawn",
            SHARE,
            None if own else Suspicion.max_withdrawn,
            "over [collect]'s (vastai: 0.6)"
            if own
            else "the share of open offers an answer may withdraw before it is held",
        ),
        Key(
            "max_jumped",
            SHARE,
            None if own else Suspicion.max_jumped,
            "over [collect]'s"
            if own
            else "the share of continuing offers that may jump before an answer is held",
        ),
        Key(
            "jump_factor",
            FACTOR,
            None if own else Suspicion.jump_factor,
            "over [collect]'s" if own else "a price moved by more than this factor jumped",
        ),
    )


URL = {"type": "string", "pattern": r"^https?://\S+$"}
NAMES = {"type": "array", "items": STRING, "minItems": 1}
ENV_NAME = Kind(
    "the name of an environment variable",
    env_variable_name,
    {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$"},
)
NUMBER = number(
    *TIMEOUT_RANGE_S, f"a number of seconds from {TIMEOUT_RANGE_S[0]:g} to {TIMEOUT_RANGE_S[1]:g}"
)
# Its default is each provider's own (the registry's default_interval, docs/providers.md).
INTERVAL = Key(
    "interval",
    duration(INTERVAL_MAX_S, noun="an interval"),
    None,
    "how often it is collected (default: the provider's own)",
)
PROVIDER = Table(
    "providers.<name>",
    (
        Key("enabled", BOOLEAN, True, "whether `collect` and the daemon collect it"),
        Key(
            "endpoint",
            Kind("an http(s) URL", _endpoint, URL),
            None,
            "where its API is (default: the provider's)",
        ),
        Key(
            "regions",
            Kind("a non-empty list of names", _names, NAMES),
            None,
            "the regions collected (default: the provider's)",
        ),
        INTERVAL,
        Key("timeout", NUMBER, 30, "the wait for each answer from the API"),
        Key(
            "deadline",
            duration(DEADLINE_MAX_S),
            DEFAULT_DEADLINE,
            "the longest a whole collection runs",
        ),
        *suspicion_keys(Suspicion()),
    ),
)


def parse_provider(
    name: str, info: ProviderInfo, raw: Mapping[str, Any], collect: Suspicion | None = None
) -> ProviderConfig:
    """[providers.<name>]: the common keys, the registry's options for it, and a `<name>_env`
    key per credential (optional ones too: gcp's `api_key_env`); `collect` is [collect]'s
    suspicion, which its own keys override."""
    got = Table(PROVIDER.name, provider_keys(info)).read(raw, f"providers.{name}.")
    if name in AT_ROOT and got["endpoint"]:
        _at_root(got["endpoint"], f"providers.{name}.endpoint")
    own = {"max_withdrawn": OWN_MAX_WITHDRAWN.get(name)} | {
        key: got[key]
        for key in ("max_withdrawn", "max_jumped", "jump_factor")
        if got[key] is not None
    }
    return ProviderConfig(
        name=name,
        enabled=got["enabled"],
        endpoint=got["endpoint"],
        regions=got["regions"] or (),
        interval_s=got["interval"],
        timeout=got["timeout"],
        deadline_s=got["deadline"],
        options={key: got[key] for key in info.options if got[key] is not None},
        credential_vars={k: got[f"{k}_env"] for k in info.credential_env},
        optional_credential_vars={k: got[f"{k}_env"] for k in info.optional_credential_env},
        suspicion=replace(
            collect or Suspicion(), **{k: v for k, v in own.items() if v is not None}
        ),
    )


def provider_keys(info: ProviderInfo) -> tuple[Key, ...]:
    """A provider's keys: the common ones (its own default interval), the registry's options
    for it, and a `<name>_env` key per credential (optional ones too: gcp's `api_key_env`)."""
    creds = {**info.credential_env, **info.optional_credential_env}
    own_interval = replace(INTERVAL, default=info.default_interval)
    return (
        *(own_interval if key is INTERVAL else key for key in PROVIDER.keys),
        *(Key(k, _option(k, kind), None, "a provider option") for k, kind in info.options.items()),
        *(Key(f"{k}_env", ENV_NAME, v, f"the variable holding {k}") for k, v in creds.items()),
    )


def _option(name: str, kind: Any) -> Kind:
    """The kind of a registry option: a list of names, a string, or one of a tuple's strings;
    an `*_endpoint` or `*_url` option is a URL."""

    def check(value: Any, key: str) -> Any:
        typed = _typed(value, kind, key)
        if name.endswith(("_endpoint", "_url")):
            _url(typed, key)
        return typed

    schema: Schema = (
        URL
        if name.endswith(("_endpoint", "_url"))
        else NAMES
        if kind is list
        else {"enum": list(kind)}
        if isinstance(kind, tuple)
        else STRING
    )
    return Kind(repr(kind), check, schema)


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
        if CONTROL.search(name) or len(name) > 200 or name != name.strip():
            raise ConfigError(
                f"{key}[{i}]: {shown(name)} is not a name (spaces around it, control "
                "characters or over 200 characters)"
            )
    return names


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
        or CONTROL.search(value)
    ):
        raise ConfigError(
            f"{key}: {shown(value)} is not an http(s) URL with a host (and a port from 1 to "
            "65535, no spaces)"
        )
