"""The one check every price passes before it is stored, whichever collector parsed it.

`Store.write_run` screens each record here: a record that is not a price a user could rent at
(zero after the store's rounding to six decimals, not finite, absurdly high, a text field no
API would send) is skipped and counted by reason, never stored, and never costs its provider
the other rows. The rule is documented in docs/configuration.md ([collect]).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from collectors.common import ConfigError, no_unknown

if TYPE_CHECKING:
    from collectors.base import PriceRecord

# DECIMAL(18, 6): twelve digits before the point.
MONEY_LIMIT = Decimal(10) ** 12
DEFAULT_MAX_PER_GPU_HOUR_USD = Decimal(1000)
# Longer than any region, zone, instance type or GPU name any provider uses (the longest
# today, Azure's instance names, are under 40 characters).
MAX_TEXT = 200
# A provider's own "took effect at" a little ahead of our clock is skew; further is a bad row.
MAX_CLOCK_SKEW = timedelta(days=1)
# Units of a currency per US dollar, for the ceiling only, where [fx] gives no rate: rounded UP
# so that the ceiling is never stricter than the USD one (CNY trades near 7.0-7.3 per USD).
UNITS_PER_USD: dict[str, Decimal] = {
    "USD": Decimal(1),
    "EUR": Decimal(1),
    "GBP": Decimal(1),
    "CHF": Decimal(1),
    "CAD": Decimal("1.5"),
    "AUD": Decimal("1.7"),
    "SGD": Decimal("1.5"),
    "CNY": Decimal(8),
    "HKD": Decimal(8),
    "JPY": Decimal(170),
    "KRW": Decimal(1600),
    "INR": Decimal(95),
    "BRL": Decimal(7),
}
_CURRENCY = re.compile(r"^[A-Z]{3}$")
# C0 and C1 control characters (NUL, escape sequences, newlines a log line would split on).
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# Required first: a record without them names no offer. The others may be None.
_REQUIRED = ("provider", "instance_type", "price_kind", "currency")
_TEXTS = attrgetter(*_REQUIRED, "region", "zone", "payment_option", "offering_class", "gpu_model")
BLANK = "blank"
_SIZES = attrgetter("gpu_memory_gib", "vcpus", "memory_gib")


@dataclass(frozen=True)
class PriceLimits:
    """The ceiling per GPU-hour, in US dollars, and per currency how many units make a dollar
    ([fx] rates first, then UNITS_PER_USD). A currency in neither has no known ceiling."""

    max_per_gpu_hour_usd: Decimal = DEFAULT_MAX_PER_GPU_HOUR_USD
    units_per_usd: Mapping[str, Decimal] = field(default_factory=lambda: dict(UNITS_PER_USD))

    def with_rates(self, usd_per_unit: Mapping[str, Decimal]) -> PriceLimits:
        """These limits with the configured rates (USD per unit) in place of the built-in ones."""
        rates = {c: Decimal(1) / r for c, r in usd_per_unit.items() if r > 0}
        return replace(self, units_per_usd={**self.units_per_usd, **rates})

    def ceiling(self, currency: str) -> Decimal | None:
        """The highest price per GPU-hour accepted in `currency`; None when its rate is unknown."""
        units = self.units_per_usd.get(currency)
        return None if units is None else self.max_per_gpu_hour_usd * units


@dataclass
class Screened:
    """The records fit to store (prices rounded as the store keeps them) and what was not."""

    records: list[PriceRecord] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)  # reason -> rows
    # Instance types with a skipped row: their offers are not closed as withdrawn.
    unreadable: set[str] = field(default_factory=set)

    def summary(self) -> str:
        """'3 prices skipped: 2 zero after rounding, 1 above the ceiling'; '' when none."""
        return summary(self.skipped)


def summary(skipped: Mapping[str, int]) -> str:
    total = sum(skipped.values())
    if not total:
        return ""
    reasons = ", ".join(f"{n} {why}" for why, n in sorted(skipped.items(), key=_most_first))
    return f"{total} price{'s' if total != 1 else ''} skipped: {reasons}"


def screen(
    records: Sequence[PriceRecord], limits: PriceLimits, *, observed_at: datetime
) -> Screened:
    """Every record checked; the good ones kept with their money rounded to six places."""
    result = Screened()
    checker = _Checker(limits, observed_at)
    for record in records:
        checked = checker.check(record)
        if isinstance(checked, str):
            result.skipped[checked] += 1
            if isinstance(record.instance_type, str):
                result.unreadable.add(record.instance_type)
        else:
            result.records.append(checked)
    return result


def check(record: PriceRecord, limits: PriceLimits, *, observed_at: datetime) -> PriceRecord | str:
    """The record as the store will keep it, or why it cannot be stored (a short reason)."""
    return _Checker(limits, observed_at).check(record)


class _Checker:
    """The rule, with what repeats from record to record (a region, a GPU count, a currency)
    judged once per collection: a 53,000-record collection repeats little else."""

    def __init__(self, limits: PriceLimits, observed_at: datetime) -> None:
        self.limits = limits
        self.latest = observed_at + MAX_CLOCK_SKEW
        self.texts: dict[str, str] = {}  # a string -> its problem ("" none, BLANK empty)
        self.good: set[str | None] = {None}  # strings without a problem (None: optional)
        # (currency, GPU count, term, sizes) -> what is wrong, or the highest price per hour
        self.limits_seen: dict[tuple[Any, ...], str | Decimal] = {}

    def check(self, record: PriceRecord) -> PriceRecord | str:
        limit = self._text_problem(record) or self._limit(record)
        if isinstance(limit, str):
            return limit
        price = _rounded(record.price_per_hour)
        upfront = None if record.upfront_total is None else _rounded(record.upfront_total)
        if price is None or (record.upfront_total is not None and upfront is None):
            return "not a number the store can keep"
        if price <= 0:
            return "zero after rounding" if record.price_per_hour >= 0 else "negative"
        if price > limit:
            return "above the ceiling"
        if upfront is not None and not _sane_upfront(upfront, record.term_months, limit):
            return "upfront total not sane"
        if record.effective_at is not None and not _aware(record.effective_at):
            return "effective time not readable"
        if record.effective_at is not None and record.effective_at > self.latest:
            return "effective in the future"
        if record.available is not None and type(record.available) is not bool:
            return "availability not a boolean"
        if price == record.price_per_hour and upfront == record.upfront_total:
            return record
        return replace(record, price_per_hour=price, upfront_total=upfront)

    def _text_problem(self, record: PriceRecord) -> str:
        values = _TEXTS(record)
        try:  # the common case, in one set operation: every string already judged good
            if self.good.issuperset(values) and None not in values[: len(_REQUIRED)]:
                return ""
        except TypeError:  # an unhashable value where a string belongs
            return "text missing"
        for index, value in enumerate(values):
            if value is None and index >= len(_REQUIRED):
                continue
            if type(value) is not str:
                return "text missing"
            problem = self.texts.get(value)
            if problem is None:
                problem = self.texts[value] = string_problem(value)
                if not problem:
                    self.good.add(value)
            if problem == BLANK:
                if index < len(_REQUIRED):
                    return "text missing"
            elif problem:
                return problem
        return ""

    def _limit(self, record: PriceRecord) -> str | Decimal:
        """The highest price per hour of the record's machine (the ceiling per GPU-hour in its
        currency x its GPUs), or what is wrong with its currency or sizes."""
        shape = (record.currency, record.gpu_count, record.term_months, *_SIZES(record))
        try:
            known = self.limits_seen.get(shape)
        except TypeError:  # something unhashable where a number belongs
            return _size_problem(shape[1:]) or "host or GPU size not a positive number"
        if known is None:
            known = self.limits_seen[shape] = self._judge(shape)
        return known

    def _judge(self, shape: tuple[Any, ...]) -> str | Decimal:
        return judge_shape(self.limits, shape)


def judge_shape(limits: PriceLimits, shape: tuple[Any, ...]) -> str | Decimal:
    """What is wrong with a machine's (currency, GPU count, term, sizes), or its highest price
    per hour: the ceiling per GPU-hour in its currency x its GPUs."""
    currency, gpu_count = shape[0], shape[1]
    problem = _size_problem(shape[1:])
    ceiling = limits.ceiling(currency)
    if problem:
        return problem
    if not _CURRENCY.match(currency):
        return "currency not an ISO code"
    if ceiling is None:
        return "currency without a rate"
    return ceiling * Decimal(repr(gpu_count))


def _aware(stamp: object) -> bool:
    """A timestamp with its time zone (a naive one compares with nothing)."""
    return isinstance(stamp, datetime) and stamp.tzinfo is not None


def _rounded(value: object) -> Decimal | None:
    """The amount as DECIMAL(18, 6) keeps it, or None when it cannot be kept."""
    # Imported here: reading the config loads this module for [collect], and a command that
    # only reads (`sql`) has no use for the collectors' base (docs/performance.md).
    from collectors.base import MONEY_PLACES

    if not isinstance(value, Decimal | int) or isinstance(value, bool):
        return None
    amount = Decimal(value)
    if not amount.is_finite() or abs(amount) >= MONEY_LIMIT:
        return None
    try:
        return amount.quantize(MONEY_PLACES)
    except InvalidOperation:
        return None


def _sane_upfront(upfront: Decimal, term_months: int | None, hourly_ceiling: Decimal) -> bool:
    """Zero or more, and no more than the term's hours at the ceiling: the upfront part of an
    effective price is upfront / hours, so a sane total never exceeds that."""
    from collectors.base import hours_in_term

    if upfront <= 0:
        return upfront == 0
    if not term_months:
        return False
    return upfront <= hourly_ceiling * hours_in_term(term_months)


def string_problem(value: str) -> str:
    if not value.strip():
        return BLANK
    if len(value) > MAX_TEXT:
        return "text too long"
    if _CONTROL.search(value):
        return "control character in text"
    return ""


def _size_problem(shape: tuple[Any, ...]) -> str:
    gpu_count, term_months, *sizes = shape
    if not _positive(gpu_count) or gpu_count > 1024:
        return "GPU count not sane"
    if term_months is not None and (type(term_months) is not int or not 0 < term_months <= 120):
        return "term not sane"
    if any(value is not None and not _positive(value) for value in sizes):
        return "host or GPU size not a positive number"
    return ""


def _positive(value: object) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value > 0
    )


def _most_first(item: tuple[str, int]) -> tuple[int, str]:
    return (-item[1], item[0])


def parse_limits(raw: Mapping[str, Any], prefix: str = "collect.") -> PriceLimits:
    """config.toml's [collect] table: `max_price_per_gpu_hour` (US dollars, > 0)."""
    no_unknown(raw, {"max_price_per_gpu_hour"}, prefix)
    value = raw.get("max_price_per_gpu_hour", DEFAULT_MAX_PER_GPU_HOUR_USD)
    key = f"{prefix}max_price_per_gpu_hour"
    number = None
    if isinstance(value, int | float | Decimal) and not isinstance(value, bool):
        number = Decimal(str(value))
    if number is None or not number.is_finite() or not 0 < number < MONEY_LIMIT:
        raise ConfigError(f"{key}: expected US dollars per GPU-hour > 0, got {repr(value)[:60]}")
    return PriceLimits(max_per_gpu_hour_usd=number)
