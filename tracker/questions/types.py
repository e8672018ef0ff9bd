"""The parameter types of the questions (`latest`, `history`, `tco`, `gpus`): they take what a
person types (provider aliases in any case, `on-demand` or `on_demand`, `A100 80GB`) or refuse
it naming what is accepted, and bound every number. The command line and the web dashboard's
query strings are checked with the same ones (`tracker.questions.params`)."""

from __future__ import annotations

import math
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Any

import click

from collectors.common import (
    KIND_LABELS,
    PRICE_KINDS,
    ConfigError,
    PriceKind,
    parse_duration,
    parse_kind,
)
from storage.reads.gpu_filter import GpuChoice

if TYPE_CHECKING:  # generic for the type checker; older click is not at run time
    _TextType = click.ParamType[str]
    _FloatType = click.ParamType[float]
    _IntType = click.ParamType[int]
    _GpuType = click.ParamType[GpuChoice]
    _WhenType = click.ParamType[datetime | timedelta]
else:
    _TextType = _FloatType = _IntType = _GpuType = _WhenType = click.ParamType


class ProviderName(_TextType):
    """A provider's one name, from its name or an alias in any case (`AWS`, `lambda`)."""

    name = "provider"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        from collectors import provider_name, provider_names

        found = provider_name(str(value))
        if found is None:
            self.fail(f"unknown provider {value!r} (accepted: {provider_names()})", param, ctx)
        return found


class PriceKindName(_TextType):
    """A price kind as stored (`on_demand`), from `on-demand`, `on_demand` or `On-Demand`."""

    name = "kind"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> PriceKind:
        try:
            return parse_kind(value, "--kind")
        except ConfigError:
            accepted = ", ".join(
                f"{KIND_LABELS[k]} (or {k})" if KIND_LABELS[k] != k else k for k in PRICE_KINDS
            )
            self.fail(f"unknown price kind {value!r} (accepted: {accepted})", param, ctx)


class GpuName(_GpuType):
    """A GPU model or one memory variant of it: `H100`, `A100 80GB`, `A100-80GB`, `H100 NVL`
    (any case), as the GPU table names them; a name the table does not know is kept as typed
    (the store may know it; the command refuses it when neither does)."""

    name = "gpu"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> GpuChoice:
        if isinstance(value, GpuChoice):
            return value
        from collectors import gpus
        from tracker.config import gpu_names

        if not str(value).strip():
            self.fail('a GPU model is needed, e.g. H100 or "A100 80GB"', param, ctx)
        return gpu_names(gpus.models()).parse(str(value))


def gpu_again(choice: GpuChoice | None) -> GpuChoice | None:
    """`choice` read again with the GPU names in force now: click converts `--gpu` before the
    command loads the config, so a model or variant only the user's [gpus.models] names
    (`B300`, a variant's own name) is known only after `load_config`."""
    from collectors import gpus
    from tracker.config import gpu_names

    return None if choice is None else gpu_names(gpus.models()).parse(choice.label)


PROVIDER = ProviderName()
PRICE_KIND = PriceKindName()
GPU = GpuName()
GPU_HELP = (
    'GPU model, or one memory variant of it: H100, "A100 80GB" (or A100-80GB), "H100 NVL" '
    "(case-insensitive)."
)
MEMORY_HELP = "At least this much memory per GPU, in GiB (80 keeps 80 GB and 94 GB GPUs)."


def _in_range(
    kind: Any,  # the ParamType refusing
    value: Any,
    bounds: tuple[float, float, bool],
    parse: Any,
    param: click.Parameter | None,
    ctx: click.Context | None,
) -> Any:
    low, high, low_open = bounds
    kind_words = "an integer" if parse is int else "a number"
    what = f"{kind_words} from {_plain(low)}{' (excluded)' if low_open else ''} to {_plain(high)}"
    try:
        number = parse(value) if isinstance(value, str) else value
    except ValueError:
        kind.fail(f"{value!r} is not {what}", param, ctx)
    if isinstance(number, bool) or not isinstance(number, int | float):
        kind.fail(f"{value!r} is not {what}", param, ctx)
    # NaN fails every comparison: `not low <= n` refuses it where `n < low` would let it by.
    if (
        not math.isfinite(number)
        or not (low < number if low_open else low <= number)
        or not number <= high
    ):
        kind.fail(f"{value!r} is not {what}", param, ctx)
    return number


def _plain(bound: float) -> str:
    return str(int(bound)) if bound == int(bound) else str(bound)


class Number(_FloatType):
    """A finite number in a documented range, named in the refusal (exit 2). click's FloatRange
    lets NaN through, and an absurd value reaches DuckDB as a cast error."""

    name = "number"

    def __init__(self, low: float, high: float, *, low_open: bool = False) -> None:
        self.bounds = (low, high, low_open)

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        return float(_in_range(self, value, self.bounds, float, param, ctx))


class Count(_IntType):
    """A whole number in a documented range (a 20-digit one would reach DuckDB as a cast
    error)."""

    name = "integer"

    def __init__(self, low: int, high: int) -> None:
        self.bounds = (float(low), float(high), False)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, str):
            value = value.strip()
        return int(_in_range(self, value, self.bounds, int, param, ctx))


# The ranges the commands accept (documented in docs/commands.md).
MAX_GPUS = 100_000
MAX_MONTHS = 120
MAX_ROWS = 1_000_000  # --limit
MAX_PRICE = 1_000_000.0  # a budget per hour, in any currency
MAX_MEMORY_GIB = 10_000.0
MAX_MIGRATION_USD = 1e12
MAX_DATA_TB = 1e9  # a zettabyte: beyond any dataset a GPU fleet moves
MAX_OVERHEAD_PCT = 100.0  # --spot-overhead: 100 runs every hour twice


# The moments --since and --until accept (docs/commands.md): cloud prices start after 1970,
# and a window's arithmetic (30 days before --until, a time zone's offset) stays inside the
# years Python and DuckDB both count.
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(9999, 1, 1, tzinfo=UTC)  # excluded
MOMENT_RANGE = "from 1970-01-01 to 9998-12-31, UTC"


class When(_WhenType):
    """A moment: a duration back from now (`30d`), an ISO date (00:00 UTC that day) or an ISO
    timestamp (UTC unless it says otherwise), from 1970 to 9998. A duration stays a timedelta
    until the command knows `now`, so --since and --until count back from the same moment."""

    name = "when"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> datetime | timedelta:
        if isinstance(value, datetime | timedelta):
            return value
        option = param.opts[0] if param else "the moment"
        try:
            return timedelta(seconds=parse_duration(value, option))
        except ConfigError as exc:
            if "out of range" in str(exc):  # a duration, too long: say so, not "neither"
                self.fail(str(exc).split(": ", 1)[-1], param, ctx)
        try:
            moment = _moment(value)
        except ValueError:
            self.fail(
                f"{value!r} is neither a duration back from now (30d, 12h), an ISO date "
                "(2026-11-01) nor an ISO timestamp (2026-11-01T06:00Z)",
                param,
                ctx,
            )
        try:
            inside = EARLIEST <= moment < LATEST
        except OverflowError:  # an offset taking it past year 1 or 9999
            inside = False
        if not inside:
            self.fail(f"{value!r} is out of range ({MOMENT_RANGE})", param, ctx)
        return moment


def _moment(value: str) -> datetime:
    """An ISO date (00:00 UTC) or timestamp (UTC unless it says otherwise); ValueError else."""
    if len(value) == 10:
        return datetime.combine(date.fromisoformat(value), datetime.min.time(), UTC)
    moment = datetime.fromisoformat(value)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


WHEN = When()


class Duration(_IntType):
    """A duration as config.toml writes one (`30d`, `12h`), in seconds."""

    name = "duration"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        try:
            return parse_duration(value, f"--{param.name if param else 'duration'}")
        except ConfigError as exc:
            self.fail(str(exc).split(": ", 1)[-1], param, ctx)


class SpotOverhead(click.ParamType):  # type: ignore[type-arg]
    """A percent (0 or more), or `advisor` (None: the offer's Spot Advisor band)."""

    name = "PCT|advisor"

    def convert(self, value: Any, param: Any, ctx: Any) -> float | None:
        if value is None or (isinstance(value, str) and value.strip().lower() == "advisor"):
            return None
        try:
            return Number(0, MAX_OVERHEAD_PCT).convert(value, param, ctx)
        except click.BadParameter:
            self.fail(
                f"{value!r} is not a percent from 0 to {MAX_OVERHEAD_PCT:g}, nor `advisor`",
                param,
                ctx,
            )
