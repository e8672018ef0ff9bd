"""One integrity test over every registered collector, on its demo recording served on loopback.

Whatever the provider, a stored price is positive, names a canonical GPU, has one identity,
a known currency and a consistent kind. A new collector is held to this the moment it is
registered.
"""

from __future__ import annotations

import copy
import json
import pkgutil
import re
from collections import Counter
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

import collectors
from collectors import REGISTRY, collector_class, gpus
from collectors.aws.plans import PLAN_CLASSES
from collectors.base import Collector, ParseResult, Payloads
from collectors.common import OFFERING_CLASSES, PAYMENT_OPTIONS, PRICE_KINDS
from collectors.gpus import GPU_MODELS
from tests.collectors.support import NOW, fetch_demos
from tracker.collecting.demo import DEMO_DATA

AWS_PLANS = tuple(PLAN_CLASSES.values())  # AWS Savings Plans, beside the reserved instances

CURRENCIES = {"USD", "CNY", "EUR"}
FIXTURES = Path(__file__).parents[1] / "fixtures"
NOT_PROVIDERS = {"common", "base", "gpus", "http", "kit", "pages", "retrying", "transfer"}


@pytest.fixture(scope="module")
def fetched(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Collector, Payloads]]:
    return fetch_demos(tmp_path_factory, "integrity")


@pytest.fixture(scope="module")
def parsed(fetched: dict[str, tuple[Collector, Payloads]]) -> dict[str, ParseResult]:
    # A copy: the payloads stay as fetched for the test that checks parse leaves them so.
    return {
        name: collector.parse(copy.deepcopy(payloads), observed_at=NOW)
        for name, (collector, payloads) in fetched.items()
    }


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_parse_leaves_the_fetched_answers_as_they_were(
    fetched: dict[str, tuple[Collector, Payloads]], name: str
) -> None:
    collector, payloads = fetched[name]
    kept = copy.deepcopy(payloads)
    collector.parse(payloads, observed_at=NOW)
    assert payloads == kept


# Whose demo answers are not among the payloads as recorded, and why.
REWORKED = {
    "aws": "boto3 decodes its answers (XML, PriceList strings) and the offer files are CSV",
    "azure": "the replay rewrites each next-page link to point at itself",
    "huawei": "the IAM answers that name each region's project are not prices, not kept",
    "volcengine": "the SDK keeps each answer's Result, without its ResponseMetadata",
}


def _within(value: Any) -> Iterator[Any]:
    """`value` and, for a mapping, every value under it."""
    yield value
    if isinstance(value, dict):
        for inner in value.values():
            yield from _within(inner)


@pytest.mark.parametrize("name", sorted(set(REGISTRY) - set(REWORKED)))
def test_fetch_keeps_each_answer_of_the_demo_as_it_came(
    fetched: dict[str, tuple[Collector, Payloads]], name: str
) -> None:
    """What parse reads is what the API said: every JSON answer of the recording (but a token,
    which is never kept) is among the payloads, unchanged."""
    kept = list(_within(fetched[name][1]))
    spec = json.loads((DEMO_DATA / name / "exchanges.json").read_text())
    for exchange in spec["exchanges"]:
        text = (DEMO_DATA / name / exchange["body_file"]).read_text()
        if "access_token" in text:
            assert not any("access_token" in json.dumps(v) for v in kept)
            continue
        assert json.loads(text) in kept, f"{name}: {exchange['body_file']} not kept as it came"


def test_every_collector_module_is_registered() -> None:
    # A provider is a module <name>.py or a package <name>/.
    names = {m.name.split("_")[0] for m in pkgutil.iter_modules(collectors.__path__)}
    modules = names - NOT_PROVIDERS
    assert modules == set(REGISTRY)
    for name in REGISTRY:
        cls = collector_class(name)
        assert issubclass(cls, Collector) and cls.name == name


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_provider_has_fixtures_and_a_demo_recording(name: str) -> None:
    assert (FIXTURES / name / "README.md").exists()
    assert (DEMO_DATA / name / "exchanges.json").exists()
    assert (DEMO_DATA / name / "demo.json").exists()


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_one_recording_per_provider(name: str) -> None:
    """The demo replays what the tests parse: tests/fixtures/<name> holds only what exists to
    fail or to trap (its README says what), never a second copy of an answer."""
    demo = {path.name for path in (DEMO_DATA / name).iterdir()}
    only_tests = {path.name for path in (FIXTURES / name).iterdir()}
    assert demo & only_tests == {"README.md"}
    assert "exchanges.json" not in only_tests


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_the_demo_recording_warns_about_nothing(parsed: dict[str, ParseResult], name: str) -> None:
    # Rows that must be reported (unknown GPUs, unreadable prices) belong in tests/fixtures.
    assert parsed[name].unknown_instance_types == set()
    assert parsed[name].unreadable == set()


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_records_are_sound(parsed: dict[str, ParseResult], name: str) -> None:
    records = parsed[name].records
    assert records, f"{name}: the demo recording yields no prices"
    for r in records:
        where = f"{name} {r.region} {r.instance_type} {r.price_kind}"
        assert r.provider == name
        assert r.price_per_hour > 0, where
        assert r.price_per_hour == r.price_per_hour.quantize(Decimal("0.000001")), where
        assert r.gpu_model in GPU_MODELS, where
        assert r.gpu_count > 0 and r.gpu_memory_gib > 0, where
        assert r.currency in CURRENCIES, where
        assert r.price_kind in PRICE_KINDS, where
        # A provider's region code (CloudRift's datacenters have underscores: usny01_a01;
        # Verda's and Hyperstack's are FIN-01, CANADA-1), a country code (Vast.ai's hosts), or
        # NULL where the provider prices no region (RunPod) or lists none (a Vultr plan sold
        # out everywhere).
        region = r"[a-z0-9_-]+|[A-Z]{2}|[A-Z]+-[0-9]+"
        assert r.region is None or re.fullmatch(region, r.region), where
        if r.price_kind == "reserved":
            assert r.term_months and r.term_months > 0, where
            assert r.upfront_total is not None and r.upfront_total >= 0, where
        else:
            assert (r.term_months, r.upfront_total, r.payment_option) == (None, None, None), where
        assert r.payment_option in (None, *PAYMENT_OPTIONS), where
        assert r.offering_class in (None, *OFFERING_CLASSES, *AWS_PLANS, "savings_plan"), where
        if r.effective_at is not None:
            assert r.effective_at.tzinfo is not None and r.effective_at <= NOW, where


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_each_offer_has_one_price_at_a_time(parsed: dict[str, ParseResult], name: str) -> None:
    counts = Counter((r.key(), r.effective_at) for r in parsed[name].records)
    assert [k for k, n in counts.items() if n > 1] == []


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_spot_is_never_an_on_demand_price_in_disguise(
    parsed: dict[str, ParseResult], name: str
) -> None:
    on_demand = {
        (r.region, r.instance_type): r.price_per_hour
        for r in parsed[name].records
        if r.price_kind == "on_demand"
    }
    for r in parsed[name].records:
        if r.price_kind == "spot" and (r.region, r.instance_type) in on_demand:
            assert r.price_per_hour < on_demand[(r.region, r.instance_type)], r


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_unreadable_types_are_real_instance_types(
    name: str, parsed: dict[str, ParseResult]
) -> None:
    # They keep offers open in the store by instance type: a row's position or a reason
    # would silently protect nothing.
    result = parsed[name]
    known = {r.instance_type for r in result.records} | set(gpus.instance_types(name))
    assert result.unreadable <= known | result.unknown_instance_types


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_priced_type_says_where_its_gpu_facts_came_from(
    parsed: dict[str, ParseResult], name: str
) -> None:
    # The run summary's "N priced, M from API facts" counts a type missing from `facts` as the
    # table's: a collector that forgets one would under-report its API facts unnoticed.
    result = parsed[name]
    priced = {r.instance_type for r in result.records}
    assert {t: result.facts.get(t) for t in priced} == {
        t: result.facts[t] for t in priced if result.facts.get(t) in ("api", "table", "config")
    }
