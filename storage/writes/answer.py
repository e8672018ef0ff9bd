"""One provider's answer merged into the store for its run, in the caller's transaction: the
prices (`storage.merge`), or only what held them (`storage.writes.suspect`), and what the
answer brings besides (bands, market depth, transfer prices, unknown types, skipped prices).

`Store.write_run` calls it for a new run, `gpu-tracker reparse` for a run already stored
(`storage.writes.reparse`), so a replayed answer goes through exactly the collection's code.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from collectors.base import InterruptionBand, MarketDepth, ParseResult, PriceRecord, TransferRate
from storage.fx import FxRate, GpuFact, replace_gpu_facts, replace_rates
from storage.merge import merge
from storage.writes.bands import replace_bands
from storage.writes.batch import to_arrow
from storage.writes.market import record_market
from storage.writes.suspect import Judge, Verdict, record_held
from storage.writes.transfer import record_transfer
from storage.writes.unknown_types import record_unknown
from storage.writes.validate import Screened


@dataclass(frozen=True)
class Answer:
    """What a collection brings to the store beside its run (`Store.write_run`'s arguments of
    the same names)."""

    records: Sequence[PriceRecord]
    regions: Sequence[str] | None
    keep_open: Collection[str] = ()
    interruption: Sequence[InterruptionBand] | None = None
    spot_zoned: bool | None = None
    market: Sequence[MarketDepth] | None = None
    unknown: Collection[str] = ()
    transfer: Sequence[TransferRate] | None = None


def write_args(parsed: ParseResult, covered: Sequence[str] | None) -> dict[str, Any]:
    """`Store.write_run`'s arguments from a parse and the regions it covered (None: all)."""
    return {
        "records": parsed.records,
        "regions": covered,
        "keep_open": parsed.unreadable,
        "interruption": parsed.interruption,
        "spot_zoned": parsed.spot_zoned,
        "market": parsed.market,
        "unknown": parsed.unknown_instance_types,
        "transfer": parsed.transfer,
    }


@dataclass(frozen=True)
class Synced:
    """The config's tables every write keeps in the store (None: leave them be)."""

    fx_rates: Sequence[FxRate] | None = None
    gpu_facts: Sequence[GpuFact] | None = None


def merge_answer(
    con: Any,
    run: tuple[str, int, datetime],
    answer: Answer,
    screened: Screened,
    judge: Judge | None,
    synced: Synced,
    batch: Any = None,
) -> tuple[int, Verdict | None]:
    """Merge `answer` (its records `screened`, as the Arrow `batch` when the screening built
    it) for `run` = (provider, run_id, observed_at); the intervals it changed, and what held
    it (then nothing but that is stored)."""
    provider, run_id, observed_at = run
    keep_open = set(answer.keep_open) | screened.unreadable
    if batch is None:
        batch = to_arrow(screened.records)
    params = {"provider": provider, "observed": observed_at}
    changed = merge(
        con, batch, params, run_id, answer.regions, sorted(keep_open), answer.spot_zoned, judge
    )
    held = judge.held if judge else None
    if held is not None:  # nothing merged: only the run and what held it
        record_held(con, run_id, held)
    else:
        _with_answer(con, run, answer, batch, synced)
    if screened.skipped:
        con.executemany(
            "INSERT INTO run_skips VALUES (?, ?, ?)",
            [[run_id, reason, rows] for reason, rows in sorted(screened.skipped.items())],
        )
    return changed or 0, held


def _with_answer(
    con: Any, run: tuple[str, int, datetime], answer: Answer, batch: Any, synced: Synced
) -> None:
    """What a merged answer brings besides its prices, in the write's transaction."""
    provider, run_id, observed_at = run
    if synced.fx_rates is not None:
        replace_rates(con, synced.fx_rates)
    if synced.gpu_facts is not None:
        replace_gpu_facts(con, synced.gpu_facts)
    if answer.interruption is not None:
        replace_bands(con, provider, answer.interruption)
    if answer.market is not None:
        record_market(con, provider, answer.market, run_id, observed_at, answer.regions)
    if answer.transfer is not None:
        record_transfer(con, provider, answer.transfer, run_id, observed_at, answer.regions)
    priced = batch.column("instance_type").unique().to_pylist()
    record_unknown(con, provider, answer.unknown, priced, seen=observed_at, run_id=run_id)
