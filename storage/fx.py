"""Facts the tracker hands the store for its views, config being the truth: the dated exchange
rates of [fx] (the USD columns) and the GPU table's throughput (the FLOPs-per-dollar columns).

The store never fetches rates. A rate is USD per one unit of a currency on a date, with where
it came from; the views convert an interval with the newest rate dated on or before its end.
A closed interval keeps its computed columns (storage.writes.derived.DERIVE): replacing the
rates or the facts computes again those of the intervals they price, in the same transaction.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import date
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any

from storage.writes.derived import rederive

RATE_PLACES = Decimal("0.000000001")  # DECIMAL(18, 9) in fx_rates


@dataclass(frozen=True)
class GpuFact:
    """What the views know of one GPU model: dense FP16/BF16 tensor TFLOPS of ONE GPU; with
    `gpu_memory_gib`, of its variant with that much memory per GPU (H100 NVL, 94), which the
    views take over the model's row for an interval of that memory; with `form_factor`, of its
    board (H100 PCIe), taken for an interval whose instance type a FormRule says is one. The
    model's own row is the lowest of its figures: what an interval whose type says no board gets."""

    gpu_model: str
    fp16_tflops: float | None
    gpu_memory_gib: float | None = None
    form_factor: str | None = None


@dataclass(frozen=True)
class FormRule:
    """An instance type of `provider` (None: any) whose name matches `pattern` (a regular
    expression, as DuckDB reads it) has GPUs of `form_factor`; the first rule that matches, in
    the order given, decides."""

    provider: str | None
    pattern: str
    form_factor: str


@dataclass(frozen=True)
class GpuFacts(Sequence[GpuFact]):
    """The GPU facts with the rules that read an instance type's board from its name: a writer
    keeps both in the store. A bare sequence of GpuFact leaves the stored rules as they are."""

    facts: tuple[GpuFact, ...]
    rules: tuple[FormRule, ...] = field(default=())

    def __getitem__(self, index: Any) -> Any:
        return self.facts[index]

    def __len__(self) -> int:
        return len(self.facts)

    def __iter__(self) -> Iterator[GpuFact]:
        return iter(self.facts)


@dataclass(frozen=True)
class FxRate:
    currency: str
    as_of: date
    usd_per_unit: Decimal
    source: str | None = None

    @classmethod
    def per_usd(
        cls, currency: str, as_of: date, units_per_usd: Decimal, source: str | None
    ) -> FxRate:
        """A rate quoted the usual way (7.0197 CNY per USD) turned into USD per unit."""
        usd = (Decimal(1) / units_per_usd).quantize(RATE_PLACES, rounding=ROUND_HALF_EVEN)
        return cls(currency, as_of, usd, source)


def replace_rates(con: Any, rates: Sequence[FxRate]) -> bool:
    """Make fx_rates hold exactly `rates` (config is the truth); True when anything changed.
    Runs inside the caller's transaction."""
    wanted = {(r.currency, r.as_of, r.usd_per_unit.quantize(RATE_PLACES), r.source) for r in rates}
    rows = con.execute("SELECT currency, as_of, usd_per_unit, source FROM fx_rates").fetchall()
    if set(rows) == wanted:
        return False
    since = _moved_since({row[:3] for row in rows}, {rate[:3] for rate in wanted})
    con.execute("DELETE FROM fx_rates")
    if wanted:
        con.executemany(
            "INSERT INTO fx_rates VALUES (?, ?, ?, ?)",
            [(currency, as_of, usd, source) for currency, as_of, usd, source in sorted(wanted)],
        )
    if since:
        currencies, days = zip(*sorted(since.items()), strict=True)
        params = {"currencies": list(currencies), "days": list(days)}
        rederive(con, _RATED_SINCE, params=params)
    return True


# An interval of a currency whose rates moved from a day on: its rate day (the view's, before
# clamping into the span of rates, which changes no interval's rate) is on or after it; or open
# (a rate dated after today will be its rate from that day: it is computed live until then).
_RATED_SINCE = """(epoch_us(coalesce(p.valid_to, now())) // 86400000000
    >= $days[list_position($currencies, p.currency)]
    OR (p.valid_to IS NULL AND list_contains($currencies, p.currency)))"""


def _moved_since(old: set[tuple[Any, ...]], new: set[tuple[Any, ...]]) -> dict[str, int]:
    """Per currency whose rates differ (not just their source), the first day (since 1970) an
    interval's rate can differ from: the earliest rate that came, went or changed, or the start
    of time when that was its oldest (the oldest rate prices everything dated before it)."""
    since: dict[str, int] = {}
    for currency, as_of, _ in old ^ new:
        oldest = min(
            (day for rates in (old, new) for c, day, _ in rates if c == currency), default=as_of
        )
        day = -(10**6) if as_of <= oldest else (as_of - date(1970, 1, 1)).days
        since[currency] = min(since.get(currency, day), day)
    return since


def replace_gpu_facts(con: Any, facts: Sequence[GpuFact]) -> bool:
    """Make gpu_facts hold exactly `facts` (the tracker's GPU table with the user's [gpus]
    models: a row per model, per variant and per board with its own figures) and, where `facts`
    is a GpuFacts, gpu_form_factors its rules; True when anything changed. Runs inside the
    caller's transaction."""
    wanted = {(f.gpu_model, f.gpu_memory_gib, f.form_factor, f.fp16_tflops) for f in facts}
    rows = set(
        con.execute(
            "SELECT gpu_model, gpu_memory_gib, form_factor, fp16_tflops FROM gpu_facts"
        ).fetchall()
    )
    rules = _replace_rules(con, facts.rules) if isinstance(facts, GpuFacts) else False
    if rows == wanted and not rules:
        return False
    if rows != wanted:
        con.execute("DELETE FROM gpu_facts")
        if wanted:
            con.executemany(
                "INSERT INTO gpu_facts (gpu_model, gpu_memory_gib, form_factor, fp16_tflops)"
                " VALUES (?, ?, ?, ?)",
                sorted(wanted, key=str),
            )
    # The models any of whose rows changed, came or went: a model's row prices every memory
    # its variants do not, so all of the model's stored FLOPs columns are computed again; when
    # the rules changed, every model with boards of its own too.
    models = {row[0] for row in rows ^ wanted}
    if rules:
        models |= {row[0] for row in rows | wanted if row[2] is not None}
    rederive(con, "list_contains($models, p.gpu_model)", params={"models": sorted(models)})
    return True


def _replace_rules(con: Any, rules: Sequence[FormRule]) -> bool:
    """Make gpu_form_factors hold `rules` in their order; True when they changed."""
    wanted = [(r.provider, r.pattern, r.form_factor, i) for i, r in enumerate(rules)]
    rows = con.execute(
        "SELECT provider, pattern, form_factor, position FROM gpu_form_factors ORDER BY position"
    ).fetchall()
    if rows == wanted:
        return False
    con.execute("DELETE FROM gpu_form_factors")
    if wanted:
        con.executemany("INSERT INTO gpu_form_factors VALUES (?, ?, ?, ?)", wanted)
    return True
