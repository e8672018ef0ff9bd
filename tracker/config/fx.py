"""`[fx]`: the dated exchange rates the store's USD columns are computed with."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import date, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from collectors.common import ConfigError
from tracker.config.keys import TEXT, Key, Kind, Table, refuse

if TYPE_CHECKING:
    from storage.fx import FxRate

_CURRENCY = re.compile(r"^[A-Z]{3}$")


def parse_fx(raw: Mapping[str, Any]) -> tuple[FxRate, ...]:
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
    # Imported where a config has rates: most have none (docs/performance.md, "Start-up").
    from storage.fx import RATE_PLACES, FxRate

    if not isinstance(entry, Mapping):
        raise ConfigError(f"{key}: expected a table like {{ units_per_usd = 7.0197, date = ... }}")
    got = RATE.read(entry, key + ".")
    given = [k for k in ("units_per_usd", "usd_per_unit") if got[k] is not None]
    if len(given) != 1:
        raise ConfigError(f"{key}: give exactly one of units_per_usd or usd_per_unit")
    amount = got[given[0]]
    if got["date"] is None:
        raise ConfigError(f"{key}.date: missing; a rate is only honest with the day it is from")
    as_of, source = got["date"], got["source"]
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


def _amount(value: Any, key: str) -> Any:
    numeric = isinstance(value, int | float) and not isinstance(value, bool)
    if not numeric or not math.isfinite(value) or value <= 0:
        raise refuse(key, f"expected a finite number > 0, got {value!r}")
    return value


# TOML dates reach an editor's schema check as strings of the JSON Schema format "date".
DATE = {"type": "string", "format": "date"}
_AMOUNT = Kind("a finite number above 0", _amount, {"type": "number", "exclusiveMinimum": 0})
RATE = Table(
    "fx.<currency>",
    (
        Key("units_per_usd", _AMOUNT, None, "units of the currency a dollar buys"),
        Key("usd_per_unit", _AMOUNT, None, "dollars one unit of the currency buys"),
        Key("date", Kind("a date like 2026-01-08", _date, DATE), None, "the day the rate is from"),
        Key("source", TEXT, None, "where the rate comes from"),
    ),
)
