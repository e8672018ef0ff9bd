"""The collector contract: the price record, the collector interface and the error tree.

A collector does two things apart: `fetch` (the only I/O: every page followed, the raw answers
returned) and `parse` (pure: raw answers in, `PriceRecord`s out). Keeping them apart is what
lets the same bytes be archived, replayed by the offline demo and re-parsed after a fix.
"""

from __future__ import annotations

import logging
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any, ClassVar, Literal

PriceKind = Literal["on_demand", "spot", "reserved"]
PRICE_KINDS: tuple[PriceKind, ...] = ("on_demand", "spot", "reserved")
PAYMENT_OPTIONS = ("no_upfront", "partial_upfront", "all_upfront")
OFFERING_CLASSES = ("standard", "convertible")

# CONTRACT.md: a month is 730 h, a year 8760 h, three years 26280 h.
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
    """An exact amount, rounded once to the store's six decimal places."""
    return Decimal(value).quantize(MONEY_PLACES, rounding=ROUND_HALF_EVEN)


def hours_in_term(term_months: int) -> int:
    """Hours in a reserved term as CONTRACT.md counts them (12 months = 8760 h, not 12 x 730)."""
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
    region: str
    zone: str | None
    instance_type: str
    price_kind: PriceKind
    term_months: int | None
    payment_option: str | None
    offering_class: str | None
    currency: str
    price_per_hour: Decimal  # the whole instance, effective (reserved: recurring + upfront / term)
    upfront_total: Decimal | None
    gpu_model: str
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


@dataclass(frozen=True)
class ProviderSettings:
    """Everything a collector needs, resolved by `tracker` from config.toml and the environment."""

    endpoint: str | None = None
    regions: tuple[str, ...] = ()
    credentials: dict[str, str] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    timeout: float = 30.0
    max_retries: int = 4
    # For APIs that keep a price history (AWS/Alibaba spot): how far back to ask, so that the
    # changes between two collections are stored, not only the price in force at each.
    # None: the price in force now.
    history_window_s: int | None = None


class Collector(ABC):
    """One provider: `fetch` does the I/O, `parse` turns the raw answers into records."""

    name: ClassVar[str]

    def __init__(self, settings: ProviderSettings, progress: Progress | None = None) -> None:
        self.settings = settings
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

    @abstractmethod
    def fetch(self) -> Payloads:
        """Every page of every request this collection needs, as the API returned it."""

    @abstractmethod
    def parse(self, payloads: Payloads, *, observed_at: datetime) -> ParseResult:
        """Pure: the raw answers to records. Unknown rows are logged and skipped; a changed
        overall shape raises PayloadShapeError."""


# An environment variable's name as config.toml may give it: upper case, like the ecosystem's
# own (LAMBDA_API_KEY). Key IDs are often valid identifiers too, so the usual key prefixes are
# refused: a pasted key must never be taken for a name (and echoed in "set <name>").
_ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]{0,63}$")
_KEY_PREFIXES = ("AKIA", "ASIA", "AKID", "LTAI", "DOP_V1_")


def no_unknown(table: Mapping[str, Any], allowed: set[str], prefix: str) -> None:
    """A config table with a key nobody reads is an error naming it (a typo never silently
    leaves a default in force)."""
    for key in table:
        if key not in allowed:
            choices = ", ".join(sorted(allowed)) or "none"
            raise ConfigError(f"{prefix}{key}: unknown key (allowed here: {choices})")


def env_variable_name(value: Any, key: str) -> str:
    """`value` when it is the name of an environment variable, else a ConfigError naming `key`
    that does not repeat the value (what gets pasted there by mistake is the secret itself)."""
    if (
        not isinstance(value, str)
        or not _ENV_NAME.match(value)
        or value.upper().startswith(_KEY_PREFIXES)
    ):
        raise ConfigError(
            f"{key}: expected the NAME of an environment variable (upper case letters, digits "
            "and _, like LAMBDA_API_KEY), not its value: put the secret in that variable"
        )
    return value


class TrackerError(Exception):
    """Root of every error this project raises on purpose."""


class ConfigError(TrackerError):
    """config.toml (or a command-line value) is wrong; the message names the key."""


class CollectorError(TrackerError):
    """A provider could not be collected; the message names the provider."""

    def __init__(self, provider: str, message: str) -> None:
        super().__init__(f"{provider}: {message}")
        self.provider = provider


class MissingCredentials(CollectorError):
    """Credentials are absent: the provider is skipped, not failed."""

    def __init__(self, provider: str, variable: str) -> None:
        super().__init__(provider, f"no credentials; set {variable}")
        self.variable = variable


class FetchError(CollectorError):
    """The API could not be reached or kept failing after retries."""


class PayloadShapeError(CollectorError):
    """The API answered, but not in the shape the parser knows: fail loudly, store nothing."""


class StoreError(TrackerError):
    """The DuckDB store could not be read or written."""


class NotifyError(TrackerError):
    """An alert channel refused or could not be reached."""
