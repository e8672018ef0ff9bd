"""A collection's records screened (`storage.writes.validate`) and turned into the store's Arrow
table in one pass over their columns, where every record is fit to store as it is.

The rule is validate's, judged per column instead of per record: each text and each machine
shape a collection repeats is judged once (their distinct values are few), the money columns
are built by Arrow, which refuses any amount DECIMAL(18, 6) would have to round, and the
prices are compared with their ceilings in bulk, with a margin no rounding can cross. Any doubt
(a value of another type, an amount to round, a price near its ceiling, a record the rule would
skip) sends the whole collection the exact way, record by record: the outcome is always the
one `screen` and `to_arrow` give (docs/performance.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from operator import attrgetter
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from collectors.base import PriceRecord, hours_in_term
from storage.writes.batch import ARROW_SCHEMA, to_arrow
from storage.writes.validate import (
    BLANK,
    MAX_CLOCK_SKEW,
    PriceLimits,
    Screened,
    judge_shape,
    screen,
    string_problem,
)

_REQUIRED = ("provider", "instance_type", "price_kind", "currency")
_OPTIONAL = ("region", "zone", "payment_option", "offering_class", "gpu_model")
_SHAPE = ("currency", "gpu_count", "term_months", "gpu_memory_gib", "vcpus", "memory_gib")
# Prices this close to their ceiling (relative) are compared exactly, record by record: the
# bulk comparison is in binary floating point.
_MARGIN = 1 - 1e-9


def screen_batch(
    records: Sequence[PriceRecord], limits: PriceLimits, *, observed_at: datetime
) -> tuple[Screened, pa.Table]:
    """The records screened and the Arrow table of those fit to store, as `screen` then
    `to_arrow` give them."""
    batch = _all_fit(records, limits, observed_at)
    if batch is not None:
        return Screened(records=list(records)), batch
    screened = screen(records, limits, observed_at=observed_at)
    return screened, to_arrow(screened.records)


def _all_fit(
    records: Sequence[PriceRecord], limits: PriceLimits, observed_at: datetime
) -> pa.Table | None:
    """The table of the records when each of them is fit to store unchanged; else None."""
    if not records:
        return None
    values = {f.name: list(map(attrgetter(f.name), records)) for f in ARROW_SCHEMA}
    try:
        if not _texts_fit(values) or not _rest_fits(values):
            return None
        if not _shapes_fit(values, limits):
            return None
        table = pa.table(
            [pa.array(values[f.name], f.type) for f in ARROW_SCHEMA], schema=ARROW_SCHEMA
        )
    except (pa.ArrowException, TypeError, ValueError, OverflowError, ArithmeticError):
        return None
    return table if _money_fits(table, limits, observed_at) else None


def _texts_fit(values: dict[str, list[Any]]) -> bool:
    """Every text a string without a problem; the required ones present and not blank."""
    for name in (*_REQUIRED, *_OPTIONAL):
        for text in set(values[name]):
            if text is None and name in _OPTIONAL:
                continue
            if type(text) is not str:
                return False
            problem = string_problem(text)
            if problem and not (problem == BLANK and name in _OPTIONAL):
                return False
    return True


def _rest_fits(values: dict[str, list[Any]]) -> bool:
    """Each provider timestamp a datetime with its time zone (how far ahead it lies is judged
    on the table); availability a boolean."""
    stamps = values["effective_at"]
    if not set(map(type, stamps)) <= {datetime, type(None)}:
        return False
    if None in set(map(attrgetter("tzinfo"), filter(None, stamps))):
        return False
    return set(map(type, values["available"])) <= {bool, type(None)}


def _shapes_fit(values: dict[str, list[Any]], limits: PriceLimits) -> bool:
    """Every machine shape (currency, GPU count, term, sizes) sane, its currency priced."""
    shapes = set(zip(*(values[name] for name in _SHAPE), strict=True))
    return not any(isinstance(judge_shape(limits, shape), str) for shape in shapes)


def _per_value(column: pa.ChunkedArray, of: Callable[[Any], float | None]) -> pa.Array:
    """`of` each value of the column, computed once per distinct value."""
    coded = column.combine_chunks().dictionary_encode()
    mapped = [of(value) for value in coded.dictionary.to_pylist()]
    return pa.array(mapped, pa.float64()).take(coded.indices)


def _money_fits(table: pa.Table, limits: PriceLimits, observed_at: datetime) -> bool:
    """Every price above zero and clearly under its ceiling (the ceiling per GPU-hour in its
    currency x its GPUs); every upfront total zero, or positive and clearly under the term's
    hours at that ceiling; no provider timestamp in the future."""
    latest = pc.max(table.column("effective_at")).as_py()
    if latest is not None and latest > observed_at + MAX_CLOCK_SKEW:
        return False
    per_gpu = _per_value(table.column("currency"), lambda c: float(limits.ceiling(c) or 0))
    ceilings = pc.multiply(per_gpu, table.column("gpu_count").combine_chunks())
    price = pc.cast(table.column("price_per_hour"), pa.float64())
    if not pc.all(pc.greater(price, 0)).as_py():
        return False
    if not pc.all(pc.less_equal(price, pc.multiply(ceilings, _MARGIN))).as_py():
        return False
    upfront = pc.cast(table.column("upfront_total"), pa.float64())
    if upfront.null_count == len(upfront):
        return True
    hours = _per_value(table.column("term_months"), lambda t: hours_in_term(t) if t else None)
    most = pc.multiply(pc.multiply(ceilings, hours), _MARGIN)
    sane = pc.or_kleene(
        pc.equal(upfront, 0), pc.and_kleene(pc.greater(upfront, 0), pc.less_equal(upfront, most))
    )
    # A null upfront total is no upfront part; a null limit (no term) is not sane.
    return bool(pc.all(pc.or_kleene(pc.is_null(upfront), pc.fill_null(sane, False))).as_py())
