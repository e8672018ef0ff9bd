"""The `[storage]` table, validated: the store's path, how long `gpu-tracker sql` may run a
query and how long a write waits for the store while a reader holds it.

A reader (a long `sql`, the web dashboard) holds the file for as long as its query runs, and
DuckDB lets no process write meanwhile. So a writer waits: longer than a query may run, so a
reader can never cost a collection its fetched prices.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from collectors.common import ConfigError, parse_duration, shown, text
from storage.writes.suspect import Suspicion
from storage.writes.validate import DEFAULT_MAX_PER_GPU_HOUR_USD, PriceLimits, parse_limits
from tracker.config.keys import DURATION_PATTERN, Key, Kind, Table
from tracker.config.providers import CONTROL, suspicion_keys

DEFAULT_STORE = "prices.duckdb"
DEFAULT_QUERY_TIMEOUT = "60s"
DEFAULT_WRITE_WAIT = "120s"
# The setting a writer's lock error and log name (storage knows nothing of config keys).
WRITE_WAIT_SETTING = "[storage] write_wait"
# A day: beyond it a value is a typo, and a writer waiting that long has missed its schedule.
_MOST_S = 86400


@dataclass(frozen=True)
class StoreSettings:
    query_timeout_s: int = 60
    write_wait_s: int = 120


def parse_storage(raw: Mapping[str, Any]) -> tuple[Path, StoreSettings]:
    """[storage]: the store's path (as given: the caller resolves it beside the config file),
    query_timeout and write_wait; the write wait must outlast a query, else a reader could
    still make a collection fail."""
    got = STORAGE.read(raw)
    query_timeout, write_wait = got["query_timeout"], got["write_wait"]
    if write_wait <= query_timeout:
        raise ConfigError(
            f"storage.write_wait: {write_wait} s must be longer than storage.query_timeout "
            f"({query_timeout} s), so a collection outlasts any reader's query"
        )
    return got["path"], StoreSettings(query_timeout, write_wait)


def parse_collect(raw: Mapping[str, Any]) -> PriceLimits:
    """[collect]: what a storable price is (the bound is storage's to check)."""
    return PriceLimits(max_per_gpu_hour_usd=COLLECT.read(raw)["max_price_per_gpu_hour"])


def parse_suspicion(raw: Mapping[str, Any]) -> Suspicion:
    """[collect]: when an answer is held (docs/trust.md), for every provider without its own."""
    got = COLLECT.read(raw)
    return Suspicion(got["max_withdrawn"], got["max_jumped"], got["jump_factor"])


def duration(value: Any, key: str) -> int:
    """A duration in seconds, at most a day (`--timeout` on the command line too)."""
    seconds = parse_duration(value, key)
    if seconds > _MOST_S:
        raise ConfigError(f"{key}: {value!r} is longer than a day")
    return seconds


def _path(value: Any, key: str) -> Path:
    return store_path(text(value, key), key)


def store_path(value: str, key: str) -> Path:
    if "\x00" in value:
        raise ConfigError(f"{key}: the path holds a NUL character; the store would land elsewhere")
    if CONTROL.search(value):
        raise ConfigError(f"{key}: {shown(value, 400)} holds control characters")
    if os.sep == "/" and "\\" in value:  # DuckDB reads it as a separator: a/b, not a\b
        raise ConfigError(
            f"{key}: {shown(value, 400)} holds a backslash, which DuckDB takes for a directory "
            "separator (the store would land elsewhere)"
        )
    return Path(value)


def _max_price(value: Any, key: str) -> Decimal:
    return parse_limits(
        {"max_price_per_gpu_hour": value}, key.removesuffix(_MAX_PRICE)
    ).max_per_gpu_hour_usd


_MAX_PRICE = "max_price_per_gpu_hour"
_DAY = Kind(
    "a duration from `1s` to `1d`", duration, {"type": "string", "pattern": DURATION_PATTERN}
)
STORAGE = Table(
    "storage",
    (
        Key(
            "path",
            Kind("a file path without NUL, control characters or backslashes", _path),
            DEFAULT_STORE,
            "the DuckDB file; a relative path is beside the config file",
        ),
        Key("query_timeout", _DAY, DEFAULT_QUERY_TIMEOUT, "the longest a read of the store runs"),
        Key("write_wait", _DAY, DEFAULT_WRITE_WAIT, "the longest a write waits for the store"),
    ),
)
COLLECT = Table(
    "collect",
    (
        Key(
            _MAX_PRICE,
            Kind("US dollars above 0", _max_price, {"type": "number", "exclusiveMinimum": 0}),
            DEFAULT_MAX_PER_GPU_HOUR_USD,
            "the highest price per GPU-hour stored",
        ),
        *suspicion_keys(None),
    ),
)
