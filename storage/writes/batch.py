"""A collection's records as the Arrow table the store's merge reads: its columns, in the
store's order and types (money exact, times in UTC).
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter

import pyarrow as pa

from collectors.base import PriceRecord

_MONEY = pa.decimal128(18, 6)
_TS = pa.timestamp("us", tz="UTC")
ARROW_SCHEMA = pa.schema(
    [
        ("provider", pa.string()),
        ("region", pa.string()),
        ("zone", pa.string()),
        ("instance_type", pa.string()),
        ("price_kind", pa.string()),
        ("term_months", pa.int32()),
        ("payment_option", pa.string()),
        ("offering_class", pa.string()),
        ("currency", pa.string()),
        ("price_per_hour", _MONEY),
        ("upfront_total", _MONEY),
        ("gpu_model", pa.string()),
        ("gpu_count", pa.float64()),
        ("gpu_memory_gib", pa.float64()),
        ("vcpus", pa.float64()),
        ("memory_gib", pa.float64()),
        ("effective_at", _TS),
        ("available", pa.bool_()),
    ]
)
_COLUMNS = [f.name for f in ARROW_SCHEMA]
_FIELDS = attrgetter(*_COLUMNS)


def to_arrow(records: Sequence[PriceRecord]) -> pa.Table:
    """The records as an Arrow table in the store's column order and types."""
    if not records:
        return ARROW_SCHEMA.empty_table()
    columns = zip(*map(_FIELDS, records), strict=True)
    return pa.table(dict(zip(_COLUMNS, map(list, columns), strict=True)), schema=ARROW_SCHEMA)
