"""The collector contract: the price record and the collector interface (the error tree every
layer shares is `collectors.common`).

A collector does two things apart: `fetch` (the only I/O: every page followed, the raw answers
returned) and `parse` (pure: raw answers in, `PriceRecord`s out). Keeping them apart is what
lets the same bytes be archived, replayed by the offline demo and re-parsed after a fix.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from pathlib import Path
from typing import Any, ClassVar

from collectors.common import MissingCredentials, PriceKind
from collectors.gpus import Overrides, install, known

# docs/sql.md: a month is 730 h, a year 8760 h, three years 26280 h.
HOURS_PER_MONTH = 730
HOURS_PER_YEAR = 8760

# Money is exact end to end: Decimals quantized once, here, to six places (DECIMAL(18,6) in the
# store), half-even so that repeated collections of the same API numbers never drift.
MONEY_PLACES = Decimal("0.000001")

# Payloads are what the API returned, keyed by request ("<region>/<call>/page-<n>" or similar).
# JSON-able so they can be archived and replayed as they are.
Payloads = dict[str, Any]

# Progress reporter: called by fetch after every page with (pages fetched, items so far).
Progress = Callable[[int, int], None]


def money(value: Decimal | str | int) -> Decimal:
    """An exact amount, rounded once to the store's six decimal places. An amount too large to
    round within Decimal's precision is returned as it is, never an exception out of a parser:
    the store's validation refuses it as no price a user can rent at."""
    amount = Decimal(value)
    try:
        return amount.quantize(MONEY_PLACES, rounding=ROUND_HALF_EVEN)
    except InvalidOperation:
        return amount


def hours_in_term(term_months: int) -> int:
    """Hours in a reserved term as docs/sql.md counts them (12 months = 8760 h, not 12 x 730)."""
    if term_months % 12 == 0:
        return term_months // 12 * HOURS_PER_YEAR
    return term_months * HOURS_PER_MONTH


def effective_hourly(recurring: Decimal, upfront: Decimal, term_months: int) -> Decimal:
    """Reserved price per hour: the recurring hourly part plus the upfront fee over the term."""
    return money(recurring + upfront / hours_in_term(term_months))


@dataclass(frozen=True, slots=True)
class PriceRecord:
    """One price of one offer, in the provider's own currency."""

    provider: str
    region: str | None  # None where the provider prices no region (RunPod)
    zone: str | None
    instance_type: str
    price_kind: PriceKind
    term_months: int | None
    payment_option: str | None
    offering_class: str | None
    currency: str
    price_per_hour: Decimal  # the whole instance, effective (reserved: recurring + upfront / term)
    upfront_total: Decimal | None
    gpu_model: str | None  # None: the GPU count is known, the model is not (named in the summary)
    gpu_count: float
    gpu_memory_gib: float
    vcpus: float | None = None
    memory_gib: float | None = None
    # The provider's own "took effect at" timestamp (spot history); None means "first seen now".
    effective_at: datetime | None = None
    # Whether the provider says it has capacity for this offer now (Lambda, DigitalOcean);
    # None where the provider does not say. A change of availability is a change of the offer.
    available: bool | None = None

    def key(self) -> tuple[Any, ...]:
        """What makes two records the same offer (and, with effective_at, the same price point)."""
        return (
            self.provider,
            self.region,
            self.zone,
            self.instance_type,
            self.price_kind,
            self.term_months,
            self.payment_option,
            self.offering_class,
            self.currency,
        )


@dataclass(frozen=True, slots=True)
class InterruptionBand:
    """How often a provider reclaimed spot capacity of a type last month (AWS Spot Advisor)."""

    provider: str
    region: str
    instance_type: str
    band: str  # as the provider labels it: "<5%", "5-10%", ">20%"
    band_low: Decimal  # its bounds as fractions: "<5%" is 0 to 0.05, ">20%" 0.20 to 1
    band_high: Decimal
    savings_pct: int  # the saving over on-demand the provider shows, in percent
    as_of: datetime


@dataclass(frozen=True, slots=True)
class MarketDepth:
    """How many offers a marketplace had for one group it is stored by (Vast.ai: a GPU, a GPU
    count and a country), where the prices keep only the cheapest of them."""

    region: str
    instance_type: str
    offers: int


@dataclass(frozen=True, slots=True)
class TransferRate:
    """One tier of what a provider charges to move data out (docs/sql.md, `transfer_prices`):
    per GiB, for the GiB of a month from `from_gib` up to `to_gib` (None: no upper tier)."""

    region: str | None  # None: the provider's rate in every region (a flat published rate)
    direction: str  # "out_internet" or "out_region" (to another region of the same cloud)
    from_gib: Decimal
    to_gib: Decimal | None
    currency: str
    price_per_gib: Decimal


@dataclass
class ParseResult:
    """What `parse` found: the records, and what it could not place (for the run summary)."""

    records: list[PriceRecord] = field(default_factory=list)
    unknown_instance_types: set[str] = field(default_factory=set)
    skipped_rows: int = 0
    # Offers the answer priced but said had no capacity in any asked region (Lambda): their
    # intervals close. Lets an answer of only sold-out offers be told from an empty one.
    sold_out: set[str] = field(default_factory=set)
    # Instance types with a row the parser could not read: their offers missing from this
    # answer are not withdrawn, only unconfirmed (stale), so a malformed row never records a
    # withdrawal that did not happen (nor re-arms an alert that would then fire again).
    unreadable: set[str] = field(default_factory=set)
    # Lines for the run summary on how the collection was made (AWS: which source answered).
    notes: list[str] = field(default_factory=list)
    # Spot interruption bands to store beside the prices; None: this collection has none, the
    # stored ones stay as they are.
    interruption: list[InterruptionBand] | None = None
    # The grain of this collection's spot prices where a provider has two sources (AWS: True
    # per zone from the API, False per region from the public feed): the other grain's spot
    # offers are another source's, kept open (stale) rather than closed as withdrawn.
    spot_zoned: bool | None = None
    # A marketplace's offer counts per group (Vast.ai); None: the provider has none.
    market: list[MarketDepth] | None = None
    # Where each priced instance type's GPU facts came from: "api" (the answer's own fields),
    # "table" (the bundled GPU table) or "config" (the user's [gpus] entry). Types missing here
    # count as the table's. For the run summary and `gpu-tracker gpus`.
    facts: dict[str, str] = field(default_factory=dict)
    # What moving data out costs (collectors.transfer): every tier the answer priced, stored
    # change-only beside the prices; None: this collection has none, the stored ones stay.
    transfer: list[TransferRate] | None = None

    def gpu_summary(self) -> GpuSummary:
        """How many GPU types this answer priced, how many from the API's own facts, and which
        have no facts yet (priced with the model unknown, or not priced: count unknown)."""
        priced = {r.instance_type for r in self.records}
        unnamed = {r.instance_type for r in self.records if not known(r.gpu_model)}
        from_api = sum(1 for t in priced if self.facts.get(t) == "api")
        return GpuSummary(len(priced), from_api, sorted(unnamed | self.unknown_instance_types))


@dataclass(frozen=True)
class GpuSummary:
    priced: int  # instance types with at least one price stored
    from_api: int  # of those, how many had their GPU facts from the API's own answer
    without_facts: list[str]  # types priced with gpu_model unknown, or not priced at all

    def words(self) -> str:
        """'GPU types: 18 priced, 18 from API facts, 1 without facts' (the daemon's line)."""
        lacking = f", {len(self.without_facts)} without facts" if self.without_facts else ""
        return f"GPU types: {self.priced} priced, {self.from_api} from API facts{lacking}"

    def fields(self) -> dict[str, Any]:
        """The same as fields of a JSON log line."""
        return {
            "gpu_types": self.priced,
            "gpu_types_from_api": self.from_api,
            "gpu_types_without_facts": list(self.without_facts),
        }


@dataclass(frozen=True)
class ProviderSettings:
    """Everything a collector needs, resolved by `tracker` from config.toml and the environment."""

    endpoint: str | None = None
    regions: tuple[str, ...] = ()
    credentials: dict[str, str] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    timeout: float = 30.0
    max_retries: int = 4
    # The whole collection (every page, then the parse) within this many seconds; `tracker`
    # enforces it, whatever SDK does the I/O. None: no deadline.
    deadline_s: float | None = None
    # For APIs that keep a price history (AWS/Alibaba spot): how far back to ask, so that the
    # changes between two collections are stored, not only the price in force at each.
    # None: the price in force now.
    history_window_s: int | None = None
    # The user's [gpus] entries (config.toml); installed for every parser when the collector
    # is built, so the CLI, the daemon's child and the tests see the same GPU table.
    gpus: Overrides | None = None
    # Ask for the transfer prices where they take requests of their own (Azure's Bandwidth
    # rows): `tracker` always does; a collector built for its prices alone asks only for those.
    transfer_prices: bool = False
    # A folder the collector may keep what it saw between runs in (AWS: the GPU rows of each
    # region's offer file and its version, so an unchanged file is not read again).
    state_dir: Path | None = None


class Collector(ABC):
    """One provider: `fetch` does the I/O, `parse` turns the raw answers into records."""

    name: ClassVar[str]

    def __init__(self, settings: ProviderSettings, progress: Progress | None = None) -> None:
        self.settings = settings
        install(settings.gpus)
        self.progress = progress or (lambda pages, items: None)
        self.log = logging.LoggerAdapter(
            logging.getLogger(f"collectors.{self.name}"), {"provider": self.name}
        )

    @property
    def regions(self) -> tuple[str, ...]:
        """The regions this collection covers: the configured ones, else the provider's own."""
        return self.settings.regions or self.default_regions()

    def default_regions(self) -> tuple[str, ...]:
        return ()

    def check_credentials(self) -> None:
        """Raise MissingCredentials (naming the variable to set) when the provider cannot be asked.

        `tracker` has already checked the variables the registry declares; this hook is for
        credential chains only the SDK can see (AWS profiles, instance roles)."""
        return None

    def credential(self, name: str, variable: str) -> str:
        """The credential `name` the settings carry, or MissingCredentials naming `variable`,
        the environment variable to set."""
        value = self.settings.credentials.get(name)
        if not value:
            raise MissingCredentials(self.name, variable)
        return value

    @abstractmethod
    def fetch(self) -> Payloads:
        """Every page of every request this collection needs, as the API returned it."""

    @abstractmethod
    def parse(self, payloads: Payloads, *, observed_at: datetime) -> ParseResult:
        """Pure: the raw answers to records. Unknown rows are logged and skipped; a changed
        overall shape raises PayloadShapeError."""
