"""config.toml [fx]: dated exchange rates, validated with errors that name the key."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from pathlib import Path

import pytest

from collectors.common import ConfigError
from storage.fx import FxRate
from tracker import config as config_mod

REPO = Path(__file__).resolve().parents[2]


def load_text(tmp_path: Path, text: str) -> config_mod.Config:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return config_mod.load(path)


def test_a_rate_quoted_per_usd_with_its_date_and_source(tmp_path: Path) -> None:
    config = load_text(
        tmp_path,
        '[fx]\nCNY = { units_per_usd = 7.0197, date = 2026-01-08, source = "PBOC parity" }\n',
    )
    # 1 / 7.0197 to 9 places: 0.142456230 (7.0197 x 0.14245623 = 0.99999999...)
    assert config.fx == (FxRate("CNY", date(2026, 1, 8), Decimal("0.142456230"), "PBOC parity"),)


def test_a_rate_history_and_usd_per_unit(tmp_path: Path) -> None:
    config = load_text(
        tmp_path,
        "[fx]\nCNY = [\n"
        '  { usd_per_unit = 0.14, date = "2026-06-01" },\n'
        "  { usd_per_unit = 0.1425, date = 2026-11-27 },\n]\n",
    )
    assert config.fx == (
        FxRate("CNY", date(2026, 6, 1), Decimal("0.14")),
        FxRate("CNY", date(2026, 11, 27), Decimal("0.1425")),
    )


def test_the_shipped_config_has_a_dated_sourced_cny_rate() -> None:
    config = config_mod.load(REPO / "config.toml")
    (cny,) = [r for r in config.fx if r.currency == "CNY"]
    assert cny.source and cny.as_of.year >= 2026


def test_no_fx_table_means_no_rates(tmp_path: Path) -> None:
    assert load_text(tmp_path, "").fx == ()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[fx]\nUSD = { units_per_usd = 1, date = 2026-01-08 }", "fx.USD: expected an ISO"),
        ("[fx]\nyuan = { units_per_usd = 7, date = 2026-01-08 }", "fx.yuan: expected an ISO"),
        ("[fx]\nCNY = 7.0197", "fx.CNY: expected a table"),
        ("[fx]\nCNY = { units_per_usd = 7.0197 }", "fx.CNY.date: missing"),
        ("[fx]\nCNY = { units_per_usd = 0, date = 2026-01-08 }", "fx.CNY.units_per_usd: expected"),
        ('[fx]\nCNY = { units_per_usd = "7", date = 2026-01-08 }', "fx.CNY.units_per_usd"),
        (
            "[fx]\nCNY = { units_per_usd = 7, usd_per_unit = 0.14, date = 2026-01-08 }",
            "fx.CNY: give exactly one",
        ),
        ('[fx]\nCNY = { units_per_usd = 7, date = "Jan 8" }', "fx.CNY.date: expected a date"),
        ("[fx]\nCNY = { units_per_usd = 7, date = 2026-01-08, rate = 1 }", "fx.CNY.rate: unknown"),
        (
            "[fx]\nCNY = [{ units_per_usd = 7, date = 2026-01-08 }, 5]",
            "fx.CNY[1]: expected a table",
        ),
        (
            "[fx]\nCNY = [{ units_per_usd = 7, date = 2026-01-08 },"
            " { units_per_usd = 7.1, date = 2026-01-08 }]",
            "fx.CNY: two rates dated 2026-01-08",
        ),
    ],
)
def test_bad_fx_names_the_key(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_text(tmp_path, text)


@pytest.mark.parametrize(
    ("rate", "message"),
    [
        ("units_per_usd = inf", "fx.CNY.units_per_usd: expected a finite number"),
        ("units_per_usd = nan", "fx.CNY.units_per_usd: expected a finite number"),
        ("usd_per_unit = 1e-10", "fx.CNY.usd_per_unit: 1e-10 is out of range"),
        ("units_per_usd = 1e12", "fx.CNY.units_per_usd: 1000000000000.0 is out of range"),
    ],
)
def test_rates_the_store_cannot_hold_are_config_errors(
    tmp_path: Path, rate: str, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        load_text(tmp_path, f"[fx]\nCNY = {{ {rate}, date = 2026-01-08 }}\n")
