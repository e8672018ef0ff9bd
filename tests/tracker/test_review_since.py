"""How far back a review may look: at most 10 years, on the command line (`--since`) and in
config.toml (`[review] since`), each refused with an error naming where it came from. Through
the real CLI over a real DuckDB file."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.alerts.support import Bench, offer
from tracker.cli import cli

LONGEST = ("10y", "120mo", "521w", "3652d")
TOO_LONG = ("11y", "121mo", "522w", "3653d", "5000y", "99999999999d")


@pytest.fixture(scope="module")
def one_offer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The store, written once per module: each test reviews a copy."""
    store = tmp_path_factory.mktemp("since") / "prices.duckdb"
    Bench(store).collect([offer("21.957642")], datetime.now(UTC))
    return store


@pytest.fixture
def config(one_offer: Path, tmp_path: Path) -> Path:
    shutil.copy(one_offer, tmp_path / "prices.duckdb")
    path = tmp_path / "config.toml"
    path.write_text('[storage]\npath = "prices.duckdb"\n')
    return path


def review(config: Path, *args: str) -> Any:
    return CliRunner().invoke(cli, ["--config", str(config), "review", *args])


@pytest.mark.parametrize("since", TOO_LONG)
def test_over_ten_years_is_a_usage_error_naming_the_option(config: Path, since: str) -> None:
    result = review(config, "--since", since)
    assert result.exit_code == 2, result.output
    assert f"--since: '{since}' is longer than the 10 years a look-back may be" in result.output


@pytest.mark.parametrize("since", TOO_LONG)
def test_over_ten_years_in_the_config_is_refused_when_it_loads(config: Path, since: str) -> None:
    # Accepted, it would break every scheduled review of the daemon.
    config.write_text(config.read_text() + f'\n[review]\nsince = "{since}"\n')
    result = review(config)
    assert result.exit_code == 2, result.output
    assert f"review.since: '{since}' is longer than the 10 years a look-back may be" in (
        result.output
    )


@pytest.mark.parametrize("since", LONGEST)
def test_ten_years_is_the_longest_look_back(config: Path, since: str) -> None:
    result = review(config, "--since", since, "--format", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["since"] == since
    config.write_text(config.read_text() + f'\n[review]\nsince = "{since}"\n')
    assert json.loads(review(config, "--format", "json").output)["since"] == since
