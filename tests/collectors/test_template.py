"""The provider template (docs/provider-template/) cannot rot: its collector is loaded under a
name of its own, fetches its recording from a loopback server through its declared paginator,
and its records meet the rules every registered provider meets (test_integrity.py)."""

from __future__ import annotations

import ast
import importlib.util
import json
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path
from types import ModuleType

import pytest

from collectors.base import Collector, ParseResult, ProviderSettings
from collectors.gpus import GPU_MODELS
from tests.collectors import support
from tests.collectors.support import NOW, recorded_pages
from tracker.collecting.replay import ReplayServer

TEMPLATE = Path(__file__).parents[2] / "docs" / "provider-template"
RECORDING = TEMPLATE / "recording"
NAME = "template_acme_collector"  # never a registered provider module


@pytest.fixture(scope="module")
def module() -> Iterator[ModuleType]:
    spec = importlib.util.spec_from_file_location(NAME, TEMPLATE / "acme.py")
    assert spec is not None and spec.loader is not None
    loaded = importlib.util.module_from_spec(spec)
    sys.modules[NAME] = loaded
    spec.loader.exec_module(loaded)
    yield loaded
    del sys.modules[NAME]


def make(module: ModuleType, **settings: object) -> Collector:
    cls = module.AcmeCollector
    assert issubclass(cls, Collector)
    meta = json.loads((RECORDING / "demo.json").read_text())
    credentials = {"api_key": meta["env"]["ACME_API_KEY"]}
    return cls(ProviderSettings(credentials=credentials, max_retries=0, **settings))  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def parsed(module: ModuleType) -> ParseResult:
    return make(module).parse(recorded_pages(RECORDING), observed_at=NOW)


def test_the_template_fetches_every_page(
    module: ModuleType, replay: Callable[..., ReplayServer]
) -> None:
    server = replay(RECORDING)
    assert make(module, endpoint=server.url).fetch() == recorded_pages(RECORDING)
    assert server.unmatched == []
    assert len(server.requests) == 2  # the cursor of page 1 asked for page 2


def test_the_templates_records_are_sound(parsed: ParseResult) -> None:
    assert parsed.records and parsed.skipped_rows == 0 and parsed.unreadable == set()
    for r in parsed.records:
        assert r.provider == "acme" and r.currency == "USD"
        assert r.price_per_hour > 0
        assert r.price_per_hour == r.price_per_hour.quantize(Decimal("0.000001"))
        assert r.gpu_model in GPU_MODELS and r.gpu_count > 0 and r.gpu_memory_gib > 0
        assert (r.term_months, r.upfront_total, r.payment_option) == (None, None, None)
    assert [k for k, n in Counter(r.key() for r in parsed.records).items() if n > 1] == []
    priced = {r.instance_type for r in parsed.records}
    assert {t: parsed.facts.get(t) for t in priced} == dict.fromkeys(priced, "api")


def test_the_templates_spot_is_below_its_on_demand(parsed: ParseResult) -> None:
    on_demand = {
        (r.region, r.instance_type): r.price_per_hour
        for r in parsed.records
        if r.price_kind == "on_demand"
    }
    spot = [r for r in parsed.records if r.price_kind == "spot"]
    assert spot and all(r.price_per_hour < on_demand[r.region, r.instance_type] for r in spot)
    # 8 x 2.99 = 23.92: the instance's price as the sample answer gives it
    h100 = [r for r in parsed.records if r.instance_type == "acme.h100x8"]
    assert {r.price_kind: r.price_per_hour for r in h100} == {
        "on_demand": Decimal("23.92"),
        "spot": Decimal("15.60"),
    }


def test_the_templates_test_file_uses_only_helpers_that_exist() -> None:
    tree = ast.parse((TEMPLATE / "test_acme.py").read_text())
    named = {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == "tests.collectors.support"
        for alias in node.names
    }
    assert named and all(hasattr(support, name) for name in named)
