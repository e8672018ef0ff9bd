"""What the collector tests share: where the recordings and fixtures are, the collection time,
records found or keyed by their offer, and the demo's answers parsed for every provider."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import pytest
from click.testing import CliRunner, Result

from collectors import collector_class
from collectors.base import Collector, ParseResult, Payloads, PriceRecord, ProviderSettings
from tracker.cli import cli
from tracker.collecting.demo import DEMO_DATA, demo_setup
from tracker.collecting.replay import Recording, ReplayServer

NOW = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)
FIXTURES = Path(__file__).parents[1] / "fixtures"
C = TypeVar("C", bound=Collector)


def demo_of(provider: str) -> Path:
    """The demo's recording of `provider` (what `gpu-tracker demo` replays)."""
    return DEMO_DATA / provider


def fixtures_of(provider: str) -> Path:
    """The error cases and traps of `provider` (tests/fixtures/<provider>)."""
    return FIXTURES / provider


def demo_json(provider: str, name: str) -> dict[str, Any]:
    """The body of `name` in the demo's recording of `provider`, parsed."""
    body: dict[str, Any] = json.loads((demo_of(provider) / name).read_text())
    return body


def with_traps(body: dict[str, Any], provider: str, *keys: str) -> dict[str, Any]:
    """`body` with the rows of tests/fixtures/<provider>/traps.json added to its list at `keys`."""
    rows: Any = body
    traps: Any = json.loads((fixtures_of(provider) / "traps.json").read_text())
    for key in keys:
        rows, traps = rows[key], traps[key]
    rows += traps
    return body


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


def under_test(cls: type[C], keys: dict[str, str] | None = None, /, **settings: Any) -> C:
    """A `cls` collector for a test: no retries, made-up credentials `keys`, unless `settings`
    say otherwise."""
    settings.setdefault("max_retries", 0)
    settings.setdefault("credentials", dict(keys or {}))
    return cls(ProviderSettings(**settings))


def signed_settings(
    endpoint: str | None,
    keys: dict[str, str],
    *,
    regions: tuple[str, ...],
    retries: int,
    timeout: float,
    options: dict[str, Any] | None = None,
    **more: Any,
) -> ProviderSettings:
    """The settings of a signed-API collector under test: its endpoint (None: the real one),
    a copy of its keys, the regions it asks and how hard it tries; `more` sets the rest."""
    return ProviderSettings(
        endpoint=endpoint,
        regions=regions,
        credentials=dict(keys),
        options=dict(options or {}),
        max_retries=retries,
        timeout=timeout,
        **more,
    )


def store_config(folder: Path, provider: str | None = None, endpoint: str | None = None) -> Path:
    """A config.toml in `folder` with its store beside it; `provider` asked at `endpoint`."""
    config = folder / "config.toml"
    text = f'[storage]\npath = "{folder / "s.duckdb"}"\n'
    if provider is not None:
        text += f'[providers.{provider}]\nendpoint = "{endpoint}"\n'
    config.write_text(text)
    return config


def cli_ok(config: Path, *args: str) -> Result:
    """`gpu-tracker --config <config> <args>` through the real CLI; it must exit 0."""
    result = CliRunner().invoke(cli, ["--config", str(config), *args])
    assert result.exit_code == 0, result.output
    return result


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


def fetch_demos(
    tmp_path_factory: pytest.TempPathFactory, label: str
) -> dict[str, tuple[Collector, Payloads]]:
    """Every provider's demo recording fetched by its collector, which has its credentials and
    asks only what the recording answers; the payloads as fetch returned them."""
    fetched = {}
    with demo_setup(tmp_path_factory.mktemp(label) / "s.duckdb") as setup:
        for name in setup.servers:
            settings, missing = setup.config.providers[name].settings(setup.env)
            assert missing == [], f"{name}: the demo lacks {missing}"
            collector = collector_class(name)(settings)
            fetched[name] = (collector, collector.fetch())
            unmatched = setup.servers[name].unmatched
            assert unmatched == [], f"{name}: requests the demo cannot answer"
    return fetched


def parse_demos(tmp_path_factory: pytest.TempPathFactory, label: str) -> dict[str, ParseResult]:
    """Every provider's demo recording fetched (as `fetch_demos`) and parsed by its collector."""
    return {
        name: collector.parse(payloads, observed_at=NOW)
        for name, (collector, payloads) in fetch_demos(tmp_path_factory, label).items()
    }


def fetch_once(make: Any, *folders: Path) -> Payloads:
    """One fetch of the recordings in `folders` through a loopback server (`make(url)` gives
    the collector), for the tests that only parse it: every request matched."""
    server = ReplayServer(*(Recording.load(folder) for folder in folders)).start()
    try:
        collector: Collector = make(server.url)
        payloads = collector.fetch()
        assert server.unmatched == []
    finally:
        server.stop()
    return payloads
