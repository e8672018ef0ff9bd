"""Fuzzing every parser in the registry: its demo recording (fetched through its real client from
loopback) with hostile values put in where the API puts its own.

The property, per provider: `parse` either raises the provider's own CollectorError (a changed
whole answer) or returns records; those the store's validation keeps are sane by a check
written here apart from it (finite, positive, under the ceiling, clean text) and go into an
Arrow batch of the store's schema; the others are skipped and counted. Nothing else ever
comes out of a parser.

The default run is small and derandomized, so it never fails by chance. A longer fuzz:
`FUZZ_EXAMPLES=5000 python -m pytest -p no:xdist tests/collectors/test_fuzz.py` (random
examples; hypothesis prints the failing one and how to reproduce it), or the long hypothesis
profile, `GPU_TRACKER_HYPOTHESIS=long` (docs/contributing.md, "Tests").
"""

from __future__ import annotations

import json
import math
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collectors import REGISTRY, collector_class
from collectors.base import Collector, Payloads
from collectors.common import CollectorError, PayloadShapeError
from storage.store import to_arrow
from storage.writes.validate import MAX_TEXT, PriceLimits, screen
from tests.collectors.support import NOW
from tests.collectors.test_aws_public import Files, public
from tracker.collecting.demo import demo_setup

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "0"))
# The long hypothesis profile (tests/conftest.py) also makes a longer, random fuzz.
RANDOM = bool(EXAMPLES) or settings.get_current_profile_name() == "long"
FUZZ = settings(
    max_examples=EXAMPLES or settings.default.max_examples,
    derandomize=not RANDOM,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
LIMITS = PriceLimits()

Keys = tuple[Any, ...]  # keys and indexes from the answer's root; "json" = a JSON-in-a-string
_JSON = "json"


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


HOSTILE = st.sampled_from(
    [
        math.nan,
        math.inf,
        -math.inf,
        -1,
        -0.01,
        0,
        0.0,
        1e-12,
        1e-9,
        1e-7,
        1e308,
        -1e308,
        10**30,
        99999999999999,
        "1e308",
        "NaN",
        "Infinity",
        "-5",
        "0.0000001",
        "abc",
        "",
        " ",
        "x" * 100_000,
        "us-east-1\x00",
        "\x1b[31mred",
        "line\nbreak",
        None,
        True,
        {},
        [],
        {"nested": {"deeper": [None]}},
        {"error": "bad"},
        {"error": {"code": 500, "message": "bad"}},
        _nested(200),
    ]
)


@pytest.fixture(scope="module")
def answers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Collector, Payloads]]:
    """Each provider's collector and its demo recording as its own fetch returns it."""
    fetched = {}
    with demo_setup(tmp_path_factory.mktemp("fuzz") / "s.duckdb") as setup:
        for name in setup.servers:
            provider_settings, _ = setup.config.providers[name].settings(setup.env)
            collector = collector_class(name)(provider_settings)
            fetched[name] = (collector, collector.fetch())
    return fetched


def test_every_registered_provider_is_fuzzed(answers: dict[str, Any]) -> None:
    assert set(answers) == set(REGISTRY)


@pytest.mark.parametrize("provider", sorted(REGISTRY))
def test_hostile_values_never_break_a_parser(
    provider: str, answers: dict[str, tuple[Collector, Payloads]]
) -> None:
    _fuzz(*answers[provider])


def test_hostile_values_never_break_the_aws_api_parser(tmp_path: Path) -> None:
    """The demo collects AWS from its public files; the API's answers are recorded too."""
    with demo_setup(tmp_path / "s.duckdb") as setup:
        settings, _ = setup.config.providers["aws"].settings(setup.env)
        keys = {"aws_access_key_id": "demo", "aws_secret_access_key": "demo"}
        settings = replace(
            settings, options={**settings.options, "source": "api"}, credentials=keys
        )
        collector = collector_class("aws")(settings)
        payloads = collector.fetch()
    assert any(key.startswith("pricing/") for key in payloads)
    _fuzz(collector, payloads)


def test_hostile_values_never_break_the_aws_public_files_parser(tmp_path: Path) -> None:
    """AWS without an account reads other answers (offer files, the spot feed, the Advisor)."""
    with served_files() as files:
        collector = public(files, tmp_path / "state")
        payloads = collector.fetch()
    _fuzz(collector, payloads)


def _fuzz(collector: Collector, payloads: Payloads) -> None:
    paths = sorted(_paths(payloads), key=repr)
    assert paths, f"{collector.name}: nothing to fuzz in the recording"
    mutation = st.tuples(st.sampled_from(paths), HOSTILE | st.just(_DELETE))

    @FUZZ
    @given(st.lists(mutation, min_size=1, max_size=4))
    def check(mutations: list[tuple[Keys, Any]]) -> None:
        answer: Any = payloads
        for path, value in mutations:
            answer = _put(answer, path, value)
        _assert_parsed_soundly(collector, answer)

    check()


def _assert_parsed_soundly(collector: Collector, answer: Payloads) -> None:
    provider = collector.name
    try:
        parsed = collector.parse(answer, observed_at=NOW)
    except CollectorError as exc:
        assert exc.provider == provider
        assert str(exc).startswith(f"{provider}: ") and "\n" not in str(exc).strip()
        return
    screened = screen(parsed.records, LIMITS, observed_at=NOW)
    assert len(screened.records) + sum(screened.skipped.values()) == len(parsed.records)
    for record in screened.records:
        _assert_sane(record)
    to_arrow(screened.records)  # what the store writes: the batch must build


@contextmanager
def served_files() -> Iterator[Files]:
    server = Files()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _assert_sane(record: Any) -> None:
    """The rule of docs/configuration.md, written apart from the validation it checks."""
    price = record.price_per_hour
    assert isinstance(price, Decimal) and price.is_finite() and price > 0
    assert price == price.quantize(Decimal("0.000001"))
    assert price / Decimal(str(record.gpu_count)) <= 1000 * 8  # CNY is the dearest unit here
    if record.upfront_total is not None:
        assert record.upfront_total.is_finite() and record.upfront_total >= 0
    assert 0 < record.gpu_count <= 1024
    for name in ("provider", "region", "zone", "instance_type", "currency", "gpu_model"):
        value = getattr(record, name)
        if value is not None:
            assert isinstance(value, str) and len(value) <= MAX_TEXT
            assert not any(ord(c) < 32 or 127 <= ord(c) < 160 for c in value)


_DELETE = object()  # a mutation that drops the key (or the list item) instead


def _paths(node: Any, path: Keys = ()) -> Iterator[Keys]:
    """Every value in the answer, JSON documents inside strings (AWS's price list) included."""
    if path:
        yield path
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node[:50]):  # enough of a long list to find every shape
            yield from _paths(value, (*path, index))
    elif isinstance(node, str) and node.startswith("{"):
        try:
            inner = json.loads(node)
        except ValueError:
            return
        yield from _paths(inner, (*path, _JSON))


def _put(node: Any, path: Keys, value: Any) -> Any:
    """A copy of `node` with `value` at `path` (copied only along the path)."""
    key, rest = path[0], path[1:]
    if key == _JSON:  # the document inside the string (unless a mutation replaced the string)
        try:
            inner = json.loads(node) if rest and isinstance(node, str) else None
        except ValueError:
            inner = None
        return node if inner is None else json.dumps(_put(inner, rest, value))
    if isinstance(node, dict) and key in node:
        copy: Any = dict(node)
    elif isinstance(node, list) and isinstance(key, int) and key < len(node):
        copy = list(node)
    else:  # an earlier mutation replaced or removed what this one reaches into
        return node
    if rest:
        copy[key] = _put(copy[key], rest, value)
    elif value is _DELETE:
        del copy[key]
    else:
        copy[key] = value
    return copy


@pytest.mark.parametrize("columns", [math.nan, 7, "instanceType", {"a": 1}, [1, "SKU"], [None]])
def test_aws_offer_file_columns_that_are_not_names_are_a_shape_error(
    tmp_path: Path, columns: Any
) -> None:
    """Found by the fuzz: a header of another type raised TypeError out of the parser."""
    with served_files() as files:
        collector = public(files, tmp_path / "state")
        payloads = collector.fetch()
    offers = sorted(key for key in payloads if key.startswith("public/offers/"))
    assert offers
    answer = _put(payloads, (offers[0], "columns"), columns)
    with pytest.raises(PayloadShapeError, match=f"aws: {offers[0]}: .*columns are not names"):
        collector.parse(answer, observed_at=NOW)
    _assert_parsed_soundly(collector, answer)
