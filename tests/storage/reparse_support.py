"""Runs written as a collection writes them, their answers kept, for the reparse tests: a
collector whose answer is its records as JSON (every shape a record can take), registered in
place of a provider's for the test, and a store with its config."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any, ClassVar

import pytest

import collectors
from collectors.base import (
    Collector,
    MarketDepth,
    ParseResult,
    Payloads,
    PriceRecord,
    ProviderSettings,
)
from storage.query import query
from storage.raw import Kept, RawStore
from storage.store import RunResult, Store
from storage.writes.answer import write_args
from storage.writes.suspect import Suspicion
from tracker import config as config_mod
from tracker.collecting.reparse import raw_folder

PROVIDER = "runpod"
T0 = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)
H = timedelta(hours=1)
_TIME_FIELDS = ("effective_at",)


class RecordsCollector(Collector):
    """An answer `{"records": [...], "market": [...], "unknown": [...], "unreadable": [...]}`,
    parsed back into exactly what it lists. Parser changes: `MAP` maps GPU models, `DROP`
    drops instance types, `CENTS` reads an answer marked `"cents": true` in cents."""

    name = PROVIDER
    MAP: ClassVar[dict[str, str]] = {}
    DROP: ClassVar[set[str]] = set()
    CENTS: ClassVar[bool] = False

    def check_credentials(self) -> None:
        pass

    def fetch(self) -> Payloads:
        raise AssertionError("a reparse never fetches")

    def parse(self, payloads: Payloads, *, observed_at: datetime) -> ParseResult:
        body = payloads["answer"]
        result = ParseResult()
        for raw in body["records"]:
            record = _record(raw)
            if record.instance_type in self.DROP:
                continue
            if self.CENTS and body.get("cents"):
                record = replace(record, price_per_hour=record.price_per_hour / 100)
            if record.gpu_model in self.MAP:
                record = replace(record, gpu_model=self.MAP[record.gpu_model])
            result.records.append(record)
        result.unreadable = set(body.get("unreadable", []))
        result.unknown_instance_types = set(body.get("unknown", []))
        if "market" in body:
            result.market = [MarketDepth(**m) for m in body["market"]]
        if "spot_zoned" in body:
            result.spot_zoned = body["spot_zoned"]
        return result


def _record(raw: dict[str, Any]) -> PriceRecord:
    values = dict(raw)
    for name in ("price_per_hour", "upfront_total"):
        if values[name] is not None:
            values[name] = Decimal(values[name])
    for name in _TIME_FIELDS:
        if values[name] is not None:
            values[name] = datetime.fromisoformat(values[name])
    return PriceRecord(**values)


def answer_of(
    records: list[PriceRecord],
    *,
    market: list[MarketDepth] | None = None,
    unknown: tuple[str, ...] = (),
    unreadable: tuple[str, ...] = (),
) -> bytes:
    """The answer the collector parses back into `records` (and the rest), as JSON text."""
    body: dict[str, Any] = {"records": [_as_json(r) for r in records]}
    if market is not None:
        body["market"] = [asdict(m) for m in market]
    if unknown:
        body["unknown"] = list(unknown)
    if unreadable:
        body["unreadable"] = list(unreadable)
    return json.dumps(body, sort_keys=True).encode()


def _as_json(record: PriceRecord) -> dict[str, Any]:
    values = asdict(record)
    for name, value in values.items():
        if isinstance(value, Decimal):
            values[name] = str(value)
        elif isinstance(value, datetime):
            values[name] = value.isoformat()
    return values


@pytest.fixture
def records_collector(monkeypatch: pytest.MonkeyPatch) -> type[RecordsCollector]:
    """`RecordsCollector` registered as PROVIDER's collector for the test."""
    info = replace(collectors.REGISTRY[PROVIDER], target=f"{__name__}:RecordsCollector")
    monkeypatch.setitem(collectors.REGISTRY, PROVIDER, info)
    monkeypatch.setattr(RecordsCollector, "MAP", {})
    monkeypatch.setattr(RecordsCollector, "DROP", set())
    monkeypatch.setattr(RecordsCollector, "CENTS", False)
    return RecordsCollector


@dataclass
class History:
    """A store and its config, with the kept answers beside it, written run by run."""

    tmp: Path
    suspicion: Suspicion = field(default_factory=Suspicion)

    def __post_init__(self) -> None:
        path = self.tmp / "config.toml"
        path.write_text(f'[storage]\npath = "{self.tmp / "prices.duckdb"}"\n')
        self.config = config_mod.load(path)
        # As the pipeline builds it (and the reparse does).
        c = self.config
        self.store = Store(c.store_path, fx_rates=c.fx, gpu_facts=c.gpu_facts, limits=c.limits)
        self.raw = RawStore(raw_folder(self.config))

    def write(
        self,
        at: datetime,
        data: bytes,
        *,
        regions: tuple[str, ...] | None = None,
        keep: bool = True,
        accept: bool = False,
    ) -> RunResult:
        """One collection at `at` whose answer is `data`, kept (or not), written as the
        pipeline writes it."""
        kept: list[Kept] | None = [self.raw.put("answer", data)] if keep else None
        collector = RecordsCollector(ProviderSettings(regions=regions or ()))
        parsed = collector.parse({"answer": json.loads(data)}, observed_at=at)
        suspicion = replace(self.suspicion, accept=accept)
        return self.store.write_run(
            PROVIDER,
            started_at=at,
            observed_at=at,
            suspicion=suspicion,
            raw=kept,
            **write_args(parsed, regions),
        )

    def prices(self) -> list[tuple[Any, ...]]:
        return query(self.store.path, "SELECT * FROM prices ORDER BY ALL").rows

    def runs(self) -> list[tuple[Any, ...]]:
        return query(
            self.store.path,
            "SELECT * EXCLUDE (finished_at) FROM collection_runs ORDER BY run_id",
        ).rows

    def table(self, sql: str) -> list[tuple[Any, ...]]:
        return query(self.store.path, sql).rows
