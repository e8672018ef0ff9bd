"""`gpu-tracker reparse`: a provider's history rebuilt from its kept answers with today's
parsers, equal row for row when the parsers have not changed (docs/trust.md, "Reparse")."""

from __future__ import annotations

import gzip
import json
from dataclasses import replace
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner

from collectors.base import PriceRecord
from collectors.common import PayloadShapeError
from tests.storage.reparse_support import (
    PROVIDER,
    T0,
    H,
    History,
    RecordsCollector,
    answer_of,
    records_collector,
)
from tracker.cli import cli
from tracker.collecting.reparse import reparse

__all__ = ["records_collector"]  # the fixture, used by name
M = timedelta(minutes=1)

OFFER = PriceRecord(
    provider=PROVIDER,
    region="us-east",
    zone=None,
    instance_type="gpu_1x_a100",
    price_kind="on_demand",
    term_months=None,
    payment_option=None,
    offering_class=None,
    currency="USD",
    price_per_hour=Decimal("1.290000"),
    upfront_total=None,
    gpu_model="A100",
    gpu_count=1,
    gpu_memory_gib=80,
    available=True,
)


def offers(*prices: str, model: str = "A100") -> list[PriceRecord]:
    return [
        replace(OFFER, instance_type=f"gpu_{n}", price_per_hour=Decimal(p), gpu_model=model)
        for n, p in enumerate(prices)
        if p
    ]


def run_cli(history: History, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(
        cli, ["--config", str(history.tmp / "config.toml"), "reparse", *args]
    )
    return result.exit_code, result.output


@pytest.mark.usefixtures("records_collector")
def test_unchanged_parsers_rebuild_the_same_history(tmp_path: Path) -> None:
    history = History(tmp_path)
    for hour, prices in enumerate([("1", "2"), ("1", "2"), ("1.5", ""), ("1.5", "2"), ("1", "2")]):
        history.write(T0 + hour * H, answer_of(offers(*prices)))
    before, runs = history.prices(), history.runs()
    code, output = run_cli(history)
    assert code == 0, output
    assert "replayed 5 of 5 runs" in output
    assert "0 added, 0 removed, 0 repriced, 0 redated" in output
    assert history.prices() == before
    assert history.runs() == runs


@pytest.mark.usefixtures("records_collector")
def test_a_parser_fix_reaches_history_from_the_first_kept_run(tmp_path: Path) -> None:
    history = History(tmp_path)
    for hour in range(2):  # answers not kept: their history stays as it is
        history.write(T0 + hour * H, answer_of(offers("1", "2", model="A10")), keep=False)
    for hour in range(2, 5):
        history.write(T0 + hour * H, answer_of(offers("1.5", "2", model="A10")))
    RecordsCollector.MAP = {"A10": "A100"}
    done = reparse(history.config)
    assert [r.first_run for r in done.rebuilt] == [3]
    rows = history.table(
        "SELECT instance_type, gpu_model, valid_from, valid_to, last_seen FROM prices"
        " ORDER BY instance_type, valid_from"
    )
    assert rows == [
        ("gpu_0", "A10", T0, T0 + 2 * H, T0 + H),  # closed before the replay: as it was
        ("gpu_0", "A100", T0 + 2 * H, None, T0 + 4 * H),
        # Open across the first replayed run: its facts corrected in place, as a collection
        # corrects them (docs/gpus.md), its price history unbroken.
        ("gpu_1", "A100", T0, None, T0 + 4 * H),
    ]


@pytest.mark.usefixtures("records_collector")
def test_a_tampered_raw_file_is_refused_and_nothing_written(tmp_path: Path) -> None:
    history = History(tmp_path)
    for hour in range(3):
        history.write(T0 + hour * H, answer_of(offers(str(1 + hour))))
    RecordsCollector.MAP = {"A100": "H100"}  # would change every interval
    files = sorted(history.raw.files())
    files[1].write_bytes(gzip.compress(b'{"records": []}'))
    store_bytes = history.store.path.read_bytes()
    code, output = run_cli(history)
    assert code == 2
    assert files[1].name.removesuffix(".gz") in output
    assert history.store.path.read_bytes() == store_bytes


@pytest.mark.usefixtures("records_collector")
def test_dry_run_says_what_would_change_and_writes_nothing(tmp_path: Path) -> None:
    history = History(tmp_path)
    for hour in range(3):
        history.write(T0 + hour * H, answer_of(offers("1", "2")))
    RecordsCollector.MAP = {"A100": "H100"}
    store_bytes = history.store.path.read_bytes()
    before = history.prices()
    code, output = run_cli(history, "--dry-run")
    assert code == 0, output
    assert "would replay 3 of 3 runs" in output
    assert "dry run: nothing was written" in output
    assert history.prices() == before
    assert history.store.path.read_bytes() == store_bytes


@pytest.mark.usefixtures("records_collector")
def test_a_provider_with_no_kept_answers_is_left_alone(tmp_path: Path) -> None:
    history = History(tmp_path)
    for hour in range(2):
        history.write(T0 + hour * H, answer_of(offers("1")), keep=False)
    history.write(T0 + 2 * H, answer_of(offers("2")))
    history.write(T0 + 3 * H, answer_of(offers("3")), keep=False)  # the newest not kept
    before = history.prices()
    code, output = run_cli(history, "--provider", PROVIDER)
    assert code == 0, output
    assert f"{PROVIDER}: no run has all its raw answers kept (4 applied or held" in output
    assert history.prices() == before


@pytest.mark.usefixtures("records_collector")
def test_an_offer_the_fixed_parser_drops_closes_at_the_first_replayed_run(tmp_path: Path) -> None:
    history = History(tmp_path)
    history.write(T0, answer_of(offers("1", "2")), keep=False)
    history.write(T0 + H, answer_of(offers("1", "2")), keep=False)
    for hour in range(2, 4):  # R0 at hour 2: the older answers were pruned
        history.write(T0 + hour * H, answer_of(offers("1", "2")))
    RecordsCollector.DROP = {"gpu_1"}
    code, output = run_cli(history)
    assert code == 0, output
    assert "intervals 0 added, 0 removed, 0 repriced, 1 redated" in output
    rows = history.table(
        "SELECT instance_type, valid_from, valid_to, last_seen FROM prices ORDER BY ALL"
    )
    assert rows == [
        ("gpu_0", T0, None, T0 + 3 * H),
        # Withdrawn by the first replayed run; last seen by the last collection before it.
        ("gpu_1", T0, T0 + 2 * H, T0 + H),
    ]


@pytest.mark.usefixtures("records_collector")
def test_a_spot_change_dated_before_the_first_replayed_run_is_replayed(tmp_path: Path) -> None:
    history = History(tmp_path)

    def spot(price: str, minutes_ago: int, at: datetime) -> list[PriceRecord]:
        point = replace(
            OFFER,
            zone="us-east-1a",
            price_kind="spot",
            price_per_hour=Decimal(price),
            effective_at=at - timedelta(minutes=minutes_ago),
        )
        return [*offers("1"), point]

    history.write(T0, answer_of(spot("0.5", 30, T0)), keep=False)
    history.write(T0 + H, answer_of(spot("0.5", 90, T0 + H)), keep=False)
    # The first kept run: the price changed 20 minutes before it, and again 10 minutes before.
    history.write(
        T0 + 2 * H, answer_of([*spot("0.6", 20, T0 + 2 * H), *spot("0.7", 10, T0 + 2 * H)[1:]])
    )
    history.write(T0 + 3 * H, answer_of(spot("0.7", 70, T0 + 3 * H)))
    before = history.prices()
    code, output = run_cli(history)
    assert code == 0, output
    assert history.prices() == before
    # A parser that no longer reads the spot points: the interval the first kept run closed
    # 20 minutes before its time is open again, and withdrawn by that run.
    RecordsCollector.DROP = {OFFER.instance_type}
    assert run_cli(history)[0] == 0
    rows = history.table(
        "SELECT price_per_hour, valid_from, valid_to, last_seen FROM prices"
        " WHERE price_kind = 'spot' ORDER BY valid_from"
    )
    assert rows == [(0.5, T0 - 30 * M, T0 + 2 * H, T0 + H)]


@pytest.mark.usefixtures("records_collector")
def test_a_held_run_is_held_again_and_a_parser_fix_releases_it(tmp_path: Path) -> None:
    history = History(tmp_path)
    prices = [str(1 + n) for n in range(10)]
    history.write(T0, answer_of(offers(*prices)))
    in_cents = json.loads(answer_of(offers(*(str(100 * (1 + n)) for n in range(10)))))
    assert history.write(T0 + H, json.dumps({**in_cents, "cents": True}).encode()).held
    history.write(T0 + 2 * H, answer_of(offers(*prices)))
    before, runs = history.prices(), history.runs()
    assert run_cli(history)[0] == 0
    assert (history.prices(), history.runs()) == (before, runs)  # held again, as it was
    RecordsCollector.CENTS = True
    code, output = run_cli(history)
    assert code == 0, output
    assert "1 held runs applied now" in output
    assert history.table("SELECT status, error FROM collection_runs ORDER BY run_id") == [
        ("ok", None),
        ("ok", None),
        ("ok", None),
    ]
    assert history.prices() == before  # the same prices, in cents read right


@pytest.mark.usefixtures("records_collector")
def test_answers_the_parser_no_longer_reads_fail_with_nothing_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    history = History(tmp_path)
    for hour in range(2):
        history.write(T0 + hour * H, answer_of(offers("1", "2")))

    def refuse(self: RecordsCollector, payloads: object, *, observed_at: datetime) -> None:
        raise PayloadShapeError(PROVIDER, "no 'records' list")

    monkeypatch.setattr(RecordsCollector, "parse", refuse)
    store_bytes = history.store.path.read_bytes()
    code, output = run_cli(history)
    assert code == 1
    assert f"{PROVIDER}: run 1: its kept answers no longer parse: no 'records' list" in output
    assert history.store.path.read_bytes() == store_bytes


def test_no_store_is_a_usage_error(tmp_path: Path) -> None:
    history = History(tmp_path)
    code, output = run_cli(history)
    assert code == 2
    assert "nothing to reparse" in output
    assert not history.store.path.exists()


@pytest.mark.usefixtures("records_collector")
def test_runs_whose_answers_were_pruned_stay_as_they_are(tmp_path: Path) -> None:
    history = History(tmp_path)
    kept = [history.write(T0 + n * H, answer_of(offers(str(1 + n)))) for n in range(4)]
    for n in range(2):  # retention dropped the two oldest answers
        (sha,) = history.table(f"SELECT raw->>'$[0].sha256' FROM runs WHERE run_id = {n + 1}")
        history.raw.path(sha[0]).unlink()
    before = history.prices()
    RecordsCollector.MAP = {"A100": "H100"}
    done = reparse(history.config)
    (rebuilt,) = done.rebuilt
    assert (rebuilt.first_run, rebuilt.runs) == (kept[2].run_id, 2)
    after = history.prices()
    assert after[:2] == before[:2]  # the intervals of the pruned runs, as they were
    assert [row[12] for row in after] == ["A100", "A100", "H100", "H100"]
