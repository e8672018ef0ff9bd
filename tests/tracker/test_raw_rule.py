"""The rule reparse builds on: every kept answer is JSON text whose `json.loads` is exactly the
payload entry its collector's fetch returned, so the kept answers parse as the fetched ones did.
Checked for every provider of the offline demo, fetched from its loopback server; the answers
of plain HTTP APIs are kept byte for byte as the server sent them."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from collectors import collector_class
from collectors.http import listening
from storage.raw import RawStore
from tests.collectors.support import NOW
from tracker.collecting.demo import DemoSetup, demo_setup, recordings
from tracker.collecting.keeping import keep

# The providers whose collectors read their answers through collectors.http (no SDK).
HTTP = {"azure", "jarvislabs", "lambdalabs", "oci", "paperspace", "runpod", "vastai", "vultr"}
HTTP |= {"cloudrift", "fluidstack", "hyperstack", "scaleway", "seeweb", "verda"}


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoSetup]:
    with demo_setup(tmp_path_factory.mktemp("rule") / "s.duckdb") as setup:
        yield setup


@pytest.mark.parametrize("provider", sorted(recordings()))
def test_the_kept_answers_parse_as_the_fetched_ones(
    demo: DemoSetup, provider: str, tmp_path: Path
) -> None:
    settings, missing = demo.config.providers[provider].settings(demo.env)
    assert missing == []
    collector = collector_class(provider)(replace(settings, state_dir=tmp_path / "state"))
    with listening() as heard:
        payloads = collector.fetch()
    kept = keep(tmp_path / "raw", heard, payloads, provider)
    assert kept is not None
    assert [k.name for k in kept] == list(payloads)
    raw = RawStore(tmp_path / "raw")
    assert raw.payloads(kept) == payloads  # the JSON round trip of every entry
    assert collector.parse(raw.payloads(kept), observed_at=NOW) == collector.parse(
        payloads, observed_at=NOW
    )
    if provider in HTTP:  # as received: each kept answer is one the server sent
        server = demo.servers[provider]
        served = {hashlib.sha256(server._body(ex)).hexdigest() for ex in server.exchanges}
        assert {k.sha256 for k in kept} <= served


def test_an_answer_read_outside_a_collection_is_not_remembered() -> None:
    with listening() as heard:
        document: dict[str, object] = {"a": 1}
    assert heard.bytes_of(document) is None
