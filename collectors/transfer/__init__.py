"""What moving data out costs where no API prices it: the bundled table of published flat
rates (`flat.toml`, each with its source), given to a provider's collection when its own
answer brought no transfer prices (docs/sql.md, `transfer_prices`).

AWS, Azure and Google Cloud price it in their answers (`collectors.aws.transfer`,
`collectors.azure.bandwidth`, `collectors.gcp.egress`); every other provider's rate comes from
here, with region None: the same everywhere the provider sells.
"""

from __future__ import annotations

import functools
import tomllib
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from collectors.base import ParseResult, TransferRate

TABLE = Path(__file__).with_name("flat.toml")


def with_flat_rates(provider: str, parsed: ParseResult) -> ParseResult:
    """`parsed`, its transfer prices the bundled table's for `provider` when its answer
    brought none of its own (a provider the table does not name keeps None)."""
    if parsed.transfer is None:
        parsed.transfer = flat_rates(provider)
    return parsed


def flat_rates(provider: str) -> list[TransferRate] | None:
    """The bundled tiers of `provider`, or None where the table has none."""
    entry = _table().get(provider)
    return None if entry is None else list(entry)


@functools.cache
def _table() -> dict[str, tuple[TransferRate, ...]]:
    data = tomllib.loads(TABLE.read_text())
    return {name: _tiers(name, entry) for name, entry in data["providers"].items()}


def _tiers(name: str, entry: dict[str, Any]) -> tuple[TransferRate, ...]:
    """One provider's tiers, checked: the bundled file is data, and a mistake in it must fail
    the tests, not store a wrong price."""
    currency = entry["currency"]
    if not (isinstance(currency, str) and len(currency) == 3 and entry.get("source")):
        raise ValueError(f"{TABLE.name}: {name}: a currency and a source are required")
    tiers = []
    for tier in entry["tiers"]:
        try:
            price = Decimal(tier["per_gib"])
        except (InvalidOperation, TypeError) as exc:
            raise ValueError(f"{TABLE.name}: {name}: per_gib {tier['per_gib']!r}") from exc
        end = tier.get("to_gib")
        tiers.append(
            TransferRate(
                None,
                "out_internet",
                Decimal(tier["from_gib"]),
                None if end is None else Decimal(end),
                currency,
                price,
            )
        )
    return tuple(tiers)
