"""What one collection did, provider by provider: the run summary's rows (`Outcome`), the
progress a front door draws or logs (`Reporter`) and the exit code they make."""

from __future__ import annotations

from dataclasses import dataclass, field

from collectors.base import GpuSummary
from storage.raw import Kept
from storage.writes.validate import summary


@dataclass
class Outcome:
    """What happened to one provider in one collection (the run summary's row)."""

    provider: str
    status: str = "ok"  # ok | failed | skipped | held (nothing stored: docs/trust.md)
    records: int = 0
    changed: int = 0
    pages: int = 0
    seconds: float = 0.0
    error: str | None = None  # one readable line
    detail: str | None = None  # the whole error, where the line shortens it (-v, the store)
    unknown_instance_types: set[str] = field(default_factory=set)
    skipped_rows: int = 0
    # Prices the store's validation refused, by reason; none of them stored.
    invalid: dict[str, int] = field(default_factory=dict)
    # What the collector says of how it collected (AWS: which source answered).
    notes: list[str] = field(default_factory=list)
    # GPU types priced, how many from the API's own facts, which have none yet.
    gpus: GpuSummary | None = None
    # The answers kept of the run (docs/trust.md), failed ones included; None: none.
    kept: list[Kept] | None = None

    def invalid_summary(self) -> str:
        """'3 prices skipped: 2 zero after rounding, 1 above the ceiling'; '' when none."""
        return summary(self.invalid)


class Reporter:
    """Receives progress; the CLI draws it, the daemon logs it. Does nothing by default."""

    def started(self, provider: str) -> None:
        pass

    def progress(self, provider: str, pages: int, items: int) -> None:
        pass

    def finished(self, outcome: Outcome) -> None:
        pass


def exit_code(outcomes: list[Outcome]) -> int:
    """The exit code (docs/commands.md): 0 all asked work succeeded (skips included), 1 some
    provider failed or was held."""
    return 1 if any(o.status in ("failed", "held") for o in outcomes) else 0
