"""The declared config keys (tracker/config/keys.py): docs/configuration.md's key reference lists
each one with what it accepts, and each table read empty gives its settings' defaults."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from collectors.common import ConfigError
from storage.writes.validate import PriceLimits
from tracker.config import DECLARED
from tracker.config.daemon import (
    DaemonSettings,
    MetricsSettings,
    ReviewSettings,
    parse_daemon,
    parse_metrics,
    parse_review,
)
from tracker.config.export import ExportSettings, parse_export
from tracker.config.keys import Key, Table, whole
from tracker.config.store import StoreSettings, parse_collect, parse_storage
from tracker.config.web import WebSettings, parse_web

DOCS = Path(__file__).parents[2] / "docs" / "configuration.md"
SECTION = "## Every key"
ROW = re.compile(
    r"^\| `(?P<key>[^`]+)` \| (?P<accepts>.*?) \| (?P<default>.*?) \| (?P<doc>.*?) \|$"
)


def shown_default(key: Key) -> str:
    """A default as the reference writes it: its TOML value, or "none" (no setting)."""
    value: Any = key.default
    if value is None:
        return "none"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, str):
        return f'`"{value}"`'
    if isinstance(value, Decimal):
        return f"`{value}`"
    return f"`{value}`"


def declared() -> dict[str, tuple[str, str, str]]:
    return {
        f"{table.name}.{key.name}": (key.kind.accepts, shown_default(key), key.doc)
        for table in DECLARED
        for key in table.keys
    }


def documented() -> dict[str, tuple[str, str, str]]:
    text = DOCS.read_text(encoding="utf-8")
    assert SECTION in text, f"docs/configuration.md has no {SECTION!r} section"
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    rows = [ROW.match(line) for line in section.splitlines() if line.startswith("| `")]
    assert all(rows), "a row of the key reference is not | `key` | accepts | default | doc |"
    return {m["key"]: (m["accepts"], m["default"], m["doc"]) for m in rows if m}


def test_every_declared_key_is_documented_and_every_documented_key_declared() -> None:
    docs, keys = documented(), declared()
    assert sorted(set(keys) - set(docs)) == [], "declared, not in docs/configuration.md"
    assert sorted(set(docs) - set(keys)) == [], "in docs/configuration.md, not declared"
    wrong = [f"{k}: docs say {docs[k]}, declared {keys[k]}" for k in keys if docs[k] != keys[k]]
    assert not wrong, "\n".join(wrong)


def test_every_table_read_empty_gives_the_settings_defaults() -> None:
    assert parse_daemon({}) == DaemonSettings()
    assert parse_review({}, set()) == ReviewSettings()
    assert parse_metrics({}) == MetricsSettings()
    assert parse_export({}) == ExportSettings()
    assert parse_web({}) == WebSettings()
    assert parse_storage({}) == (Path("prices.duckdb"), StoreSettings())
    assert parse_collect({}) == PriceLimits()


def test_the_reader_names_the_key_path() -> None:
    table = Table("t", (Key("n", whole(1, 3), 2, "a count"),))
    assert table.read({}) == {"n": 2}
    assert table.read({"n": 3}, "a.b.") == {"n": 3}
    with pytest.raises(ConfigError, match=r"^a\.b\.n: expected a whole number from 1 to 3, got 4$"):
        table.read({"n": 4}, "a.b.")
    with pytest.raises(ConfigError, match=r"^t\.m: unknown key \(allowed here: n\)$"):
        table.read({"m": 1})
