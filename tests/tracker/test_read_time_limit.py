"""Every command that reads the store stops at `[storage] query_timeout`, through the one time
limit of `storage.reads.sandbox`, with the same one line naming the setting and exit 1.

The store is a few hundred thousand change-rows built in bulk (the benchmarks' builder), so each
command's real query runs long enough to meet a limit of zero: the test waits on the command's
answer, never on the clock."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from bench.big_store import build
from tracker import config as config_mod
from tracker.cli import cli
from tracker.config.store import StoreSettings

COMMANDS = [
    ("latest", ["latest"]),
    ("latest", ["latest", "--usd", "--per-gpu"]),
    ("history", ["history", "--since", "730d"]),
    ("tco", ["tco", "--gpu", "A100"]),
    ("tco", ["tco", "--gpu", "A100", "--baseline", "4", "--gpus", "8"]),
    ("review", ["review"]),
]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("limit") / "prices.duckdb", rows=300_000)


@pytest.fixture
def no_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every config loaded says query_timeout = 0: a read is stopped as soon as it runs."""
    load = config_mod.load

    def at_once(*args: Any, **kwargs: Any) -> config_mod.Config:
        return replace(load(*args, **kwargs), store=StoreSettings(0, 120))

    monkeypatch.setattr(config_mod, "load", at_once)


def run(store: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["--db", str(store), *args])
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(("name", "args"), COMMANDS, ids=[" ".join(a) for _, a in COMMANDS])
def test_a_read_past_the_limit_is_stopped_naming_the_setting(
    store: Path, no_time: None, name: str, args: list[str]
) -> None:
    code, out, err = run(store, *args)
    assert code == 1, err
    raise_it = (
        "--timeout or [storage] query_timeout" if name == "history" else "[storage] query_timeout"
    )
    assert (
        err.strip() == f"error: query stopped after 0 s ({name} timeout; raise it with {raise_it})"
    )
    assert out == ""


@pytest.mark.parametrize(("name", "args"), COMMANDS, ids=[" ".join(a) for _, a in COMMANDS])
def test_within_the_limit_the_same_reads_answer(store: Path, name: str, args: list[str]) -> None:
    code, out, err = run(store, *args)
    assert code == 0, err
    assert out  # the default limit (60 s) lets the same query through


def test_sql_says_the_same_with_its_option_too(store: Path, no_time: None) -> None:
    endless = "SELECT sum(hash(i)) FROM range(1000000000000000) t(i)"
    code, _, err = run(store, "sql", endless)
    assert code == 1
    assert err.strip() == (
        "error: query stopped after 0 s (sql timeout; raise it with --timeout or "
        "[storage] query_timeout)"
    )
