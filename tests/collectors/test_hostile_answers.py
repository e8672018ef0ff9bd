"""Whole answers no parser can use, through every provider's real client from loopback: JSON
nested deeper than any decoder recurses, and a 200 that is an error object. Each ends as the
provider's CollectorError in one line naming it (the collection fails cleanly and the other
providers go on), never a RecursionError or an AttributeError out of the collector.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from collectors import REGISTRY, collector_class
from collectors.common import CollectorError
from tests.collectors.support import NOW
from tests.collectors.test_fetch_errors import make
from tracker.collecting.demo import demo_setup
from tracker.collecting.replay import ReplayServer

DEPTH = 100_000  # far past Python's recursion limit (1000)


def _collect(provider: str, url: str) -> Any:
    # A read timeout only to end a hang: long, so a loaded machine's slow answer (a 200 kB
    # nesting parsed while the other worker runs) is never taken for the failure tested here.
    collector = make(provider, url, timeout=120.0)
    return collector.parse(collector.fetch(), observed_at=NOW)


@pytest.mark.parametrize("provider", sorted(REGISTRY))
def test_json_nested_too_deeply_fails_naming_the_provider(
    provider: str,
    answering: Callable[[str], ReplayServer],
    url_of: Callable[[str, ReplayServer], str],
) -> None:
    server = answering(body="[" * DEPTH + "]" * DEPTH)
    with pytest.raises(CollectorError, match=rf"^{provider}: ") as caught:
        _collect(provider, url_of(provider, server))
    assert caught.value.provider == provider
    assert "\n" not in str(caught.value) and len(str(caught.value)) < 500


@pytest.mark.parametrize("provider", sorted(REGISTRY))
@pytest.mark.parametrize(
    "body",
    [{"error": "bad"}, {"error": {"code": 500}}, [], "a string", 42, None],
    ids=["error-string", "error-object", "list", "string", "number", "null"],
)
def test_an_answer_of_the_wrong_shape_fails_naming_the_provider(
    provider: str,
    body: Any,
    answering: Callable[[str], ReplayServer],
    url_of: Callable[[str, ReplayServer], str],
) -> None:
    server = answering(body=json.dumps(body))
    try:
        parsed = _collect(provider, url_of(provider, server))
    except CollectorError as exc:
        assert exc.provider == provider and str(exc).startswith(f"{provider}: ")
    else:  # an SDK that reads it as an empty answer: the collection then fails for lack of prices
        assert parsed.records == []


def _one_more_row(provider: str, answer: dict[str, Any]) -> dict[str, Any]:
    """The answer with one row of another shape among the provider's own rows."""
    if provider == "azure":
        page = answer["page-1"]
        return {**answer, "page-1": {**page, "Items": [{"type": 5}, *page["Items"]]}}
    if provider == "gcp":
        page = answer["page-1"]
        return {**answer, "page-1": {**page, "skus": ["not an object", *page["skus"]]}}
    key = next(k for k in answer if k.startswith("pricing/") and answer[k]["PriceList"])
    page = answer[key]
    return {**answer, key: {**page, "PriceList": ["{not json", *page["PriceList"]]}}


@pytest.mark.parametrize("provider", ["aws", "azure", "gcp"])
def test_one_row_of_another_shape_is_skipped_and_the_others_stand(
    provider: str, tmp_path: Path
) -> None:
    with demo_setup(tmp_path / "demo.duckdb") as setup:
        settings, _ = setup.config.providers[provider].settings(setup.env)
        if provider == "aws":  # the demo collects AWS's public files; its API answers stay
            settings = replace(settings, options={**settings.options, "source": "api"})
            settings = replace(
                settings, credentials={"aws_access_key_id": "demo", "aws_secret_access_key": "demo"}
            )
        collector = collector_class(provider)(settings)
        answer = collector.fetch()
    good = collector.parse(answer, observed_at=NOW)
    parsed = collector.parse(_one_more_row(provider, answer), observed_at=NOW)
    assert parsed.records == good.records and good.records
    assert parsed.skipped_rows == good.skipped_rows + 1
