"""Helpers for the alerts tests: offers written through the real store at explicit times, rules
parsed from config-shaped dicts, runs with an explicit `now`."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb

from alerts import AlertReport, Notifier, Rule, parse_settings, run
from alerts.console import ConsoleNotifier
from alerts.settings import RetryPolicy
from collectors import REGISTRY
from collectors.base import PriceRecord
from collectors.gpus import GPU_MODELS
from storage.fx import FxRate
from storage.query import query
from storage.store import Store

T0 = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)
H = timedelta(hours=1)
DAY = timedelta(days=1)

_GPUS = {"p4d.24xlarge": ("A100", 8, 40), "p5.48xlarge": ("H100", 8, 80)}


def offer(
    price: str,
    *,
    kind: str = "on_demand",
    itype: str = "p4d.24xlarge",
    zone: str | None = None,
    region: str = "us-east-1",
    provider: str = "aws",
    term: int | None = None,
    payment: str | None = None,
    currency: str = "USD",
    gpu: tuple[str, float, float] | None = None,
) -> PriceRecord:
    model, count, memory = gpu or _GPUS[itype]
    return PriceRecord(
        provider=provider,
        region=region,
        zone=zone,
        instance_type=itype,
        price_kind=kind,  # type: ignore[arg-type]
        term_months=term,
        payment_option=payment,
        offering_class="standard" if term and provider == "aws" else None,
        currency=currency,
        price_per_hour=Decimal(price),
        upfront_total=Decimal(0) if term else None,
        gpu_model=model,
        gpu_count=count,
        gpu_memory_gib=memory,
    )


def rules(*tables: Mapping[str, Any], **alerts: Any) -> tuple[Rule, ...]:
    raw = {"rules": [dict(t) for t in tables], **alerts}
    return parse_settings(raw, gpu_models=list(GPU_MODELS), providers=list(REGISTRY)).rules


@dataclass
class Bench:
    """A real DuckDB store, collections written at given times, alert runs at given times."""

    path: Path
    fx: Sequence[FxRate] | None = None
    console: io.StringIO = field(default_factory=io.StringIO)

    def collect(
        self,
        records: Sequence[PriceRecord],
        at: datetime,
        *,
        provider: str = "aws",
        regions: Sequence[str] | None = ("us-east-1",),
        finished_at: datetime | None = None,
    ) -> None:
        """Write one collection observed at `at`. The store dates its end by the wall clock
        (what `latest_prices.stale` compares with); `finished_at` dates it explicitly, for
        what measures from a collection's end at an explicit `now` (stale_data)."""
        result = Store(self.path, fx_rates=self.fx).write_run(
            provider, records, started_at=at, observed_at=at, regions=regions
        )
        if finished_at is not None:
            with duckdb.connect(str(self.path)) as con:
                sql = "UPDATE runs SET finished_at = ? WHERE run_id = ?"
                con.execute(sql, [finished_at, result.run_id])

    def check(
        self,
        rule_set: Sequence[Rule],
        now: datetime,
        channels: Mapping[str, Notifier] | None = None,
        **options: Any,
    ) -> AlertReport:
        notifiers = channels if channels is not None else {"console": ConsoleNotifier(self.console)}
        return run(self.path, rule_set, notifiers, now=now, **options)

    def fired(self, rule_set: Sequence[Rule], now: datetime) -> list[str]:
        """The subjects that fire at `now` (one channel per rule in these tests)."""
        return [e.subject for e in self.check(rule_set, now).fired]

    def sql(self, sql: str) -> list[tuple[Any, ...]]:
        return query(self.path, sql).rows


FAST_RETRY = RetryPolicy(base_s=300, max_s=3600, max_attempts=5)
