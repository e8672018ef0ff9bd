"""Held runs (docs/trust.md): an answer that would rewrite the history is held, with nothing
stored, and the next answer decides. Over Azure's recording, through `gpu-tracker collect`
against a loopback replay, into a real DuckDB file."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from storage.query import query
from tests.tracker.test_collect import AZURE, collect, runs, write_config
from tracker.collecting.pipeline import Outcome
from tracker.collecting.replay import Recording, ReplayServer
from tracker.daemon.metrics import Metrics

Items = Callable[[list[dict[str, Any]]], list[dict[str, Any]]]
PRICES = "SELECT * EXCLUDE (last_seen) FROM prices ORDER BY ALL"


def altered(tmp_path: Path, name: str, items: Items, *, truncated: bool = False) -> Path:
    """A copy of Azure's recording with every page's items passed through `items`;
    `truncated`: page 1 says there is no next page (a walk cut short)."""
    copy = tmp_path / name
    shutil.copytree(AZURE, copy)
    for page in ("page1.json", "page2.json"):
        body = json.loads((copy / page).read_text())
        body["Items"] = items(body["Items"])
        if truncated and page == "page1.json":
            body["NextPageLink"] = None
        (copy / page).write_text(json.dumps(body))
    if truncated:  # page 2 is never asked for
        spec = json.loads((copy / "exchanges.json").read_text())
        spec["exchanges"] = [e for e in spec["exchanges"] if e["body_file"] == "page1.json"]
        (copy / "exchanges.json").write_text(json.dumps(spec))
    return copy


def times_100(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            **i,
            "retailPrice": i["retailPrice"] * 100,
            "unitPrice": i["unitPrice"] * 100,
            **(
                {"savingsPlan": [_times_100(p) for p in i["savingsPlan"]]}
                if "savingsPlan" in i
                else {}
            ),
        }
        for i in items
    ]


def _times_100(plan: dict[str, Any]) -> dict[str, Any]:
    return {**plan, "retailPrice": plan["retailPrice"] * 100, "unitPrice": plan["unitPrice"] * 100}


def half_renamed(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every other row's `armSkuName` renamed: those rows cannot be read."""
    out = []
    for n, item in enumerate(items):
        if n % 2:
            item = {("armSkuNameV2" if k == "armSkuName" else k): v for k, v in item.items()}
        out.append(item)
    return out


def same(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return items


class Azure:
    """Collections of Azure into one store, each from a recording of the test's choosing."""

    def __init__(self, replay: Any, tmp_path: Path) -> None:
        self.replay, self.tmp_path = replay, tmp_path
        self.store = tmp_path / "prices.duckdb"

    def collect(self, recording: Path, *args: str) -> Any:
        server = self.replay(recording)
        config = write_config(self.tmp_path, None, server.url + "/api/retail/prices")
        return collect(config, *args)

    def prices(self) -> list[tuple[Any, ...]]:
        return query(self.store, PRICES).rows

    def open_offers(self) -> int:
        sql = "SELECT count(*) FROM prices WHERE provider = 'azure' AND valid_to IS NULL"
        return int(query(self.store, sql).rows[0][0])


def test_a_truncated_walk_is_held_then_applied_when_the_next_answer_agrees(
    replay: Any, tmp_path: Path
) -> None:
    azure = Azure(replay, tmp_path)
    assert azure.collect(AZURE).exit_code == 0
    before, open_before = azure.prices(), azure.open_offers()
    truncated = altered(tmp_path, "truncated", same, truncated=True)

    result = azure.collect(truncated)
    assert result.exit_code == 1, result.output
    assert azure.prices() == before  # nothing opened, closed or extended
    status, records, error = runs(azure.store)[-1][1:]
    assert status == "held" and records > 0
    # Counted by hand from the recording: page 2's offers are the ones it would withdraw.
    withdrawn = open_before - _offers_of(tmp_path, truncated)
    share = f"{withdrawn / open_before:.0%}"
    assert f"would withdraw {withdrawn} of {open_before} open offers ({share} > 25%)" in error
    # By hand: page 1 alone holds 33 of the 67 offers (6 of them savings plans); 34 / 67 is 51%.
    assert "would withdraw 34 of 67 open offers (51% > 25%)" in error
    summary = " ".join(result.output.split())
    assert "azure held: would withdraw" in summary and "--accept-suspect" in summary

    result = azure.collect(truncated)  # the same answer again: a real shrink
    assert result.exit_code == 0, result.output
    assert runs(azure.store)[-1][1] == "ok"
    assert azure.open_offers() == open_before - withdrawn
    last = "SELECT max(run_id) FROM collection_runs"
    closed = query(
        azure.store,
        f"SELECT count(*) FROM prices p, collection_runs r WHERE r.run_id = ({last})"
        " AND p.valid_to = r.started_at",
    ).rows[0][0]
    assert closed == withdrawn  # dated by the second run


def _offers_of(tmp_path: Path, recording: Path) -> int:
    """The offers an answer alone holds: collected into a store of its own."""
    where = tmp_path / "alone"
    where.mkdir()
    server = ReplayServer(Recording.load(recording)).start()
    try:
        config = write_config(where, None, server.url + "/api/retail/prices")
        assert collect(config).exit_code == 0
    finally:
        server.stop()
    sql = "SELECT count(*) FROM prices WHERE valid_to IS NULL"
    return int(query(where / "prices.duckdb", sql).rows[0][0])


def test_a_unit_drift_is_held_and_accept_suspect_applies_it_at_once(
    replay: Any, tmp_path: Path
) -> None:
    azure = Azure(replay, tmp_path)
    assert azure.collect(AZURE).exit_code == 0
    before = azure.prices()
    drifted = altered(tmp_path, "x100", times_100)

    result = azure.collect(drifted)
    assert result.exit_code == 1
    assert azure.prices() == before
    status, _, error = runs(azure.store)[-1][1:]
    assert status == "held" and "continuing offers by more than 3x (100% > 50%)" in error

    result = azure.collect(drifted, "--accept-suspect")
    assert result.exit_code == 0, result.output
    assert runs(azure.store)[-1][1] == "ok"
    assert azure.prices() != before
    assert "applied though suspect" in " ".join(result.output.split())


def test_half_the_rows_with_a_renamed_field_are_held(replay: Any, tmp_path: Path) -> None:
    azure = Azure(replay, tmp_path)
    assert azure.collect(AZURE).exit_code == 0
    before = azure.prices()
    result = azure.collect(altered(tmp_path, "renamed", half_renamed))
    assert result.exit_code == 1
    assert azure.prices() == before
    assert runs(azure.store)[-1][1] == "held"
    assert "would withdraw" in runs(azure.store)[-1][3]


def test_an_answer_that_does_not_agree_is_judged_on_its_own(replay: Any, tmp_path: Path) -> None:
    azure = Azure(replay, tmp_path)
    assert azure.collect(AZURE).exit_code == 0
    before = azure.prices()
    assert azure.collect(altered(tmp_path, "x100", times_100)).exit_code == 1
    # Suspect by another rule: held again, and the drift before it is dropped.
    assert azure.collect(altered(tmp_path, "cut", same, truncated=True)).exit_code == 1
    assert azure.prices() == before
    # An honest answer is applied; a drift after it is held anew, not taken as agreeing.
    assert azure.collect(AZURE).exit_code == 0
    assert azure.collect(altered(tmp_path, "x100-again", times_100)).exit_code == 1
    statuses = [status for _, status, _, _ in runs(azure.store)]
    assert statuses == ["ok", "held", "held", "ok", "held"]
    assert query(azure.store, "SELECT count(*) FROM collection_runs").rows == [(5,)]


def test_a_per_provider_threshold_lets_the_answer_through(replay: Any, tmp_path: Path) -> None:
    azure = Azure(replay, tmp_path)
    assert azure.collect(AZURE).exit_code == 0
    server = replay(altered(tmp_path, "truncated", same, truncated=True))
    config = write_config(tmp_path, None, server.url + "/api/retail/prices")
    text = config.read_text().replace(
        "[providers.azure]\n", "[providers.azure]\nmax_withdrawn = 0.9\n"
    )
    config.write_text(text)
    assert collect(config).exit_code == 0
    assert runs(azure.store)[-1][1] == "ok"


def test_the_daemon_counts_held_runs() -> None:
    metrics = Metrics(CollectorRegistry())
    for status in ("ok", "held", "held"):
        metrics.observe(Outcome("azure", status=status), _now(), consecutive_failures=0)
    metrics.observe(Outcome("vastai"), _now(), consecutive_failures=0)
    value = metrics.registry.get_sample_value
    assert value("gpu_tracker_runs_held_total", {"provider": "azure"}) == 2
    assert value("gpu_tracker_runs_held_total", {"provider": "vastai"}) == 0


def _now() -> datetime:
    return datetime.now(UTC)
