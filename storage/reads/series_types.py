"""The price series' own types: an offer's key, a series' statistics and intervals, the window
and the filters (`storage.reads.series` reads them; docs/decide.md says what each figure is).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from collectors.common import kind_label

KEY = (
    "provider",
    "region",
    "zone",
    "instance_type",
    "price_kind",
    "term_months",
    "payment_option",
    "offering_class",
)


class OfferKey(NamedTuple):
    provider: str
    region: str | None
    zone: str | None
    instance_type: str
    price_kind: str
    term_months: int | None
    payment_option: str | None
    offering_class: str | None

    @property
    def label(self) -> str:
        """How a person names the series: `aws/us-east-1/us-east-1a/p4d.24xlarge spot`,
        `aws/us-east-1/p4d.24xlarge reserved 12mo partial-upfront standard`."""
        place = (self.provider, self.region, self.zone, self.instance_type)
        words = [kind_label(self.price_kind)]
        if self.term_months is not None:
            words.append(f"{self.term_months}mo")
        words += [w.replace("_", "-") for w in (self.payment_option, self.offering_class) if w]
        return "/".join(p for p in place if p) + " " + " ".join(words)


class SeriesStats(NamedTuple):
    """The statistics of one series over the window, in its own currency."""

    key: OfferKey
    currency: str
    covered_hours: float
    min: float
    max: float
    mean: float
    p50: float
    p95: float
    changes: int
    current: float | None
    below_share: float | None
    mean_usd: float | None

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> SeriesStats:
        """A row of `statistics_sql`: the key's columns, then the statistics."""
        return cls(OfferKey(*row[: len(KEY)]), *row[len(KEY) :])

    def flat(self) -> dict[str, Any]:
        """The key's fields and the statistics on one level, in `COLUMNS` order (the rows of
        `history --format json` and csv)."""
        return self.key._asdict() | {name: getattr(self, name) for name in self._fields[1:]}


# The columns of a flat series: the key's, then the statistics.
COLUMNS = (*KEY, *SeriesStats._fields[1:])


class Interval(NamedTuple):
    start: datetime
    until: datetime
    price: float


@dataclass(frozen=True)
class Window:
    """`[since, until)`, both timezone-aware."""

    since: datetime
    until: datetime


@dataclass(frozen=True)
class SeriesFilters:
    """Which series: every given filter must hold. Text filters compare case-insensitively
    (kind and provider come in their stored spelling); `keys` keeps only those exact offers.
    `gpu_memory_gib` keeps only the variant of `gpu` with that memory per GPU, `min_memory_gib`
    offers with at least that much."""

    gpu: str | None = None
    provider: str | None = None
    region: str | None = None
    zone: str | None = None
    instance_type: str | None = None
    kind: str | None = None
    term: int | None = None
    keys: tuple[OfferKey, ...] | None = None
    gpu_memory_gib: float | None = None
    min_memory_gib: float | None = None
