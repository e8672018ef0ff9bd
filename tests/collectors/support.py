"""What the collector tests share: where the recordings and fixtures are, the collection time,
records found or keyed by their offer, and the demo's answers parsed for every provider."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from collectors import collector_class
from collectors.base import ParseResult, PriceRecord
from tracker.collecting.demo import DEMO_DATA, demo_setup

NOW = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)
FIXTURES = Path(__file__).parents[1] / "fixtures"


def demo_of(provider: str) -> Path:
    """The demo's recording of `provider` (what `gpu-tracker demo` replays)."""
    return DEMO_DATA / provider


def fixtures_of(provider: str) -> Path:
    """The error cases and traps of `provider` (tests/fixtures/<provider>)."""
    return FIXTURES / provider


def recorded_pages(folder: Path, **json_kwargs: Any) -> dict[str, Any]:
    """The payloads fetch returns for a recording folder: {"page-1": ..., "page-2": ...}."""
    spec = json.loads((folder / "exchanges.json").read_text())
    return {
        f"page-{n}": json.loads((folder / ex["body_file"]).read_text(), **json_kwargs)
        for n, ex in enumerate(spec["exchanges"], 1)
    }


def recording(folder: Path, *exchanges: dict[str, Any]) -> Path:
    """`folder` holding a recording of `exchanges` (its exchanges.json), for a replay server."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "exchanges.json").write_text(json.dumps({"exchanges": list(exchanges)}))
    return folder


def find(result: ParseResult, **fields: Any) -> list[PriceRecord]:
    return [r for r in result.records if all(getattr(r, k) == v for k, v in fields.items())]


def keyed(result: ParseResult, *fields: str) -> dict[tuple[Any, ...], PriceRecord]:
    """Records keyed by `fields`; fails on a repeat (two records of one offer)."""
    out = {tuple(getattr(r, f) for f in fields): r for r in result.records}
    assert len(out) == len(result.records)
    return out


def list_price(provider: str, **fields: Any) -> PriceRecord:
    """A record of a list price in US dollars, with no zone, term or upfront part: `fields`
    give the rest (and may change these)."""
    base: dict[str, Any] = {
        "provider": provider,
        "zone": None,
        "term_months": None,
        "payment_option": None,
        "offering_class": None,
        "currency": "USD",
        "upfront_total": None,
    }
    return PriceRecord(**{**base, **fields})


def parse_demos(
    tmp_path_factory: pytest.TempPathFactory, label: str, *, strict: bool = False
) -> dict[str, ParseResult]:
    """Every provider's demo recording fetched and parsed by its collector; `strict` also
    checks each has its credentials and asks only what the recording answers."""
    results = {}
    with demo_setup(tmp_path_factory.mktemp(label) / "s.duckdb") as setup:
        for name in setup.servers:
            settings, missing = setup.config.providers[name].settings(setup.env)
            assert not strict or missing == []
            collector = collector_class(name)(settings)
            results[name] = collector.parse(collector.fetch(), observed_at=NOW)
            if strict:
                unmatched = setup.servers[name].unmatched
                assert unmatched == [], f"{name}: requests the demo cannot answer"
    return results
