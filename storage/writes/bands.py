"""Spot interruption bands (the AWS Spot Advisor's): replaced per provider with each collection
that brings them, in the collection's transaction. The view `spot_interruption` reads them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from collectors.base import InterruptionBand

_FRACTION = pa.decimal128(6, 4)
_SCHEMA = pa.schema(
    [
        ("provider", pa.string()),
        ("region", pa.string()),
        ("instance_type", pa.string()),
        ("band", pa.string()),
        ("band_low", _FRACTION),
        ("band_high", _FRACTION),
        ("savings_pct", pa.int32()),
        ("as_of", pa.timestamp("us", tz="UTC")),
    ]
)


def replace_bands(con: Any, provider: str, bands: Sequence[InterruptionBand]) -> None:
    """Make the provider's stored bands exactly `bands`. Runs inside the caller's transaction;
    one set-based insert through Arrow, never a statement per row."""
    columns = {name: [getattr(b, name) for b in bands] for name in _SCHEMA.names}
    batch = pa.table(columns, schema=_SCHEMA)  # noqa: F841 (DuckDB reads it by name)
    con.execute("DELETE FROM interruption_bands WHERE provider = ?", [provider])
    con.execute("INSERT INTO interruption_bands BY NAME SELECT * FROM batch")
