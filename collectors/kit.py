"""The collector kit: what every parser needs and used to write for itself.

An `Offer` is the priced part of a record (kind, term, currency, price), `record` joins it with
where it is sold and the GPU facts, and the number and timestamp readers turn API values into
exact Decimals, host sizes and UTC datetimes the same way for every provider. `site_currency`
reads the currency option of the providers whose account site sets it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from collectors.base import PriceRecord
from collectors.common import ConfigError, PriceKind
from collectors.gpus import InstanceGpu

# What a JSON number arrives as; APIs that send numbers as strings add `str`.
NUMBERS: tuple[type, ...] = (int, float, Decimal)
NUMBERS_OR_TEXT: tuple[type, ...] = (int, float, Decimal, str)
TEXT: tuple[type, ...] = (str,)
# No price, size or count an API sends comes near this; a number beyond it (1e308, a 30-digit
# integer) is a broken row, refused here before arithmetic on it overflows.
HUGE = Decimal(10) ** 15
LONGEST_NAME = 100  # no name an API gives comes near this; a longer one is a broken row

Host = tuple[float | None, float | None]  # (vCPUs, memory GiB) where the API says them


@dataclass(frozen=True, slots=True)
class Offer:
    """The priced part of one record: how it is paid and what it costs per hour."""

    price_kind: PriceKind
    currency: str
    price_per_hour: Decimal
    term_months: int | None = None
    payment_option: str | None = None
    offering_class: str | None = None
    upfront_total: Decimal | None = None
    effective_at: datetime | None = None  # the provider's own "took effect at" (spot history)


def record(
    provider: str,
    region: str | None,
    instance_type: str,
    gpu: InstanceGpu,
    offer: Offer,
    *,
    zone: str | None = None,
    available: bool | None = None,
    host: Host | None = None,
) -> PriceRecord:
    """One record of `offer` sold as `instance_type` in `region` (and `zone`). The host size is
    the API's own `host` where the collector read one, else the GPU table's."""
    vcpus, memory_gib = host if host is not None else (gpu.vcpus, gpu.memory_gib)
    return PriceRecord(
        provider=provider,
        region=region,
        zone=zone,
        instance_type=instance_type,
        price_kind=offer.price_kind,
        term_months=offer.term_months,
        payment_option=offer.payment_option,
        offering_class=offer.offering_class,
        currency=offer.currency,
        price_per_hour=offer.price_per_hour,
        upfront_total=offer.upfront_total,
        gpu_model=gpu.gpu_model,
        gpu_count=gpu.gpu_count,
        gpu_memory_gib=gpu.gpu_memory_gib,
        vcpus=vcpus,
        memory_gib=memory_gib,
        effective_at=offer.effective_at,
        available=available,
    )


def sold_in(regions: Sequence[str], asked: Collection[str]) -> list[str | None]:
    """The regions to record an offer the answer lists in `regions` in: those asked (every one
    where none is), or none at all ([]: sold only elsewhere). Listed in no region, its list
    price is kept in no region (`[None]`), sold out (the region rule of docs/sql.md), whatever
    regions were asked: the store looks for an offer of no region in every collection of the
    provider, so it closes once capacity is back."""
    if not regions:
        return [None]
    return [r for r in regions if not asked or r in asked]


def obj(value: Any) -> dict[str, Any]:
    """An answer's object, or {} where it holds something else: `.get` chains over a hostile
    answer then find nothing instead of raising."""
    return value if isinstance(value, dict) else {}


def exact(value: Any, accept: tuple[type, ...] = NUMBERS) -> Decimal | None:
    """An API number exactly as written, or None. str() of a float is its shortest repr, not
    its binary expansion, so 27.197 stays 27.197. Booleans (JSON true is an int in Python),
    types the API does not send numbers as, nan/inf and absurd magnitudes are refused."""
    if isinstance(value, bool) or not isinstance(value, accept):
        return None
    if isinstance(value, str) and len(value) > 64:  # no number is written with more
        return None
    try:
        number = Decimal(str(value))
    except (InvalidOperation, ValueError):
        return None
    return number if number.is_finite() and abs(number) < HUGE else None


def size(value: Any, accept: tuple[type, ...] = NUMBERS) -> float | None:
    """A positive host or GPU size (vCPUs, GiB, a count) as a float; None where the answer
    gives none, never a made-up zero."""
    number = exact(value, accept)
    return float(number) if number is not None and number > 0 else None


def utc_timestamp(text: Any) -> datetime | None:
    """An ISO 8601 timestamp in UTC (one without an offset is taken as UTC), or None."""
    try:
        stamp = datetime.fromisoformat(str(text))
    except ValueError:
        return None
    return stamp.astimezone(UTC) if stamp.tzinfo else stamp.replace(tzinfo=UTC)


# An account's site decides the currency its prices come in: China (CNY) or International (USD).
SITE_CURRENCIES = ("CNY", "USD")


def site_currency(provider: str, options: Mapping[str, Any]) -> str:
    """The currency of `provider`'s account site, its `currency` option (CNY unless set); any
    other value is a ConfigError naming the key."""
    value = options.get("currency", "CNY")
    if value not in SITE_CURRENCIES:
        raise ConfigError(
            f"providers.{provider}.currency: {value!r} is not one of {', '.join(SITE_CURRENCIES)} "
            "(CNY for a China-site account, USD for an International-site one)"
        )
    return str(value)


def count(value: Any, accept: tuple[type, ...] = NUMBERS) -> int | None:
    """A whole, non-negative count (of GPUs, of free nodes) of `accept`'s types; else None."""
    number = exact(value, accept)
    return int(number) if number is not None and number == int(number) and number >= 0 else None


def name(value: Any, longest: int = LONGEST_NAME) -> str | None:
    """A name an API gives (an instance type, a region): text without spaces or unprintable
    characters, not absurdly long; else None."""
    if not isinstance(value, str) or not value or len(value) > longest:
        return None
    return None if any(c.isspace() or not c.isprintable() for c in value) else value
