"""Raw answers kept (docs/trust.md): a real `gpu-tracker collect` of Lambda's recording served on
loopback, into a real DuckDB file, the answers read back with `gpu-tracker runs`."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from storage.query import query
from storage.raw import RawStore, read_listing
from storage.store import Store
from tests.tracker.test_collect import RECORDINGS, broken_recording, write_config
from tracker import config as config_mod
from tracker.cli import cli
from tracker.collecting import retention
from tracker.collecting.replay import Recording, ReplayServer

LAMBDA = RECORDINGS / "lambdalabs"
ENV = {"LAMBDA_API_KEY": "demo"}
NAME = "instance-types"  # the payload entry of Lambda's one answer


@pytest.fixture
def server() -> Iterator[ReplayServer]:
    replay = ReplayServer(Recording.load(LAMBDA)).start()
    yield replay
    replay.stop()


def configured(tmp_path: Path, url: str, raw: str = "") -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    config = tmp_path / "config.toml"
    text = f'[storage]\npath = "s.duckdb"\n[providers.lambdalabs]\nendpoint = "{url}"\n{raw}'
    config.write_text(text)
    return config


def run_cli(config: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--config", str(config), *args], env=ENV)


def collect(config: Path) -> None:
    result = run_cli(config, "collect", "--provider", "lambdalabs")
    assert result.exit_code == 0, result.output


def runs(store: Path) -> list[tuple[Any, ...]]:
    sql = "SELECT run_id, status, raw FROM collection_runs ORDER BY run_id"
    return [tuple(row) for row in query(store, sql).rows]


def served(server: ReplayServer) -> bytes:
    return server._body(server.exchanges[0])


def test_collect_keeps_the_answer_as_the_server_sent_it(
    tmp_path: Path, server: ReplayServer
) -> None:
    config = configured(tmp_path, server.url)
    collect(config)
    ((run_id, status, listing),) = runs(tmp_path / "s.duckdb")
    (kept,) = read_listing(listing)
    assert (status, kept.name, kept.bytes) == ("ok", NAME, len(served(server)))
    folder = tmp_path / "s.duckdb.state" / "raw"
    assert sorted(p.name for p in folder.iterdir()) == [f"{kept.sha256}.gz"]

    printed = run_cli(config, "runs", "raw", str(run_id), NAME)
    assert printed.exit_code == 0, printed.output
    assert printed.stdout_bytes == served(server)

    shown = run_cli(config, "runs", "show", str(run_id), "--format", "json")
    assert json.loads(shown.stdout) == {
        "run_id": run_id,
        "provider": "lambdalabs",
        "status": "ok",
        "started_at": json.loads(shown.stdout)["started_at"],
        "answers": [{**kept.as_json(), "file": "kept"}],
    }
    table = run_cli(config, "runs", "show", str(run_id)).stdout
    assert f"{NAME}  {kept.sha256}  {kept.bytes} bytes  kept" in table

    collect(config)  # the same answer again: listed again, no new file
    assert [read_listing(r[2]) for r in runs(tmp_path / "s.duckdb")] == [[kept], [kept]]
    assert sorted(p.name for p in folder.iterdir()) == [f"{kept.sha256}.gz"]


def test_keep_0_keeps_nothing_and_dir_puts_them_elsewhere(
    tmp_path: Path, server: ReplayServer
) -> None:
    collect(configured(tmp_path / "none", server.url, '[raw]\nkeep = "0"\n'))
    assert [r[2] for r in runs(tmp_path / "none" / "s.duckdb")] == [None]
    assert not (tmp_path / "none" / "s.duckdb.state" / "raw").exists()

    collect(configured(tmp_path / "elsewhere", server.url, '[raw]\ndir = "answers"\n'))
    (kept,) = read_listing(runs(tmp_path / "elsewhere" / "s.duckdb")[0][2])
    assert RawStore(tmp_path / "elsewhere" / "answers").has(kept.sha256)


def test_runs_raw_refuses_what_it_cannot_print_exactly(
    tmp_path: Path, server: ReplayServer
) -> None:
    config = configured(tmp_path, server.url)
    collect(config)
    ((run_id, _, listing),) = runs(tmp_path / "s.duckdb")
    (kept,) = read_listing(listing)
    path = tmp_path / "s.duckdb.state" / "raw" / f"{kept.sha256}.gz"

    def refused(*args: str) -> str:
        result = run_cli(config, "runs", *args)
        assert result.exit_code == 2, result.output
        assert result.stdout_bytes == b""
        return " ".join(result.stderr.split())

    assert "no such run" in refused("raw", "999", NAME)
    assert "no such run" in refused("show", "999")
    assert "no raw answer named 'nope'" in refused("raw", str(run_id), "nope")
    path.write_bytes(gzip.compress(b'{"data": {}}'))  # bytes that no longer match the name
    assert kept.sha256 in refused("raw", str(run_id), NAME)
    assert "no longer match" in refused("raw", str(run_id), NAME)
    path.unlink()
    assert "is not kept" in refused("raw", str(run_id), NAME)
    shown = run_cli(config, "runs", "show", str(run_id), "--format", "json")
    assert json.loads(shown.stdout)["answers"][0]["file"] == "missing"


def test_a_failed_parse_lists_its_answers_on_the_failed_run(tmp_path: Path) -> None:
    copy = tmp_path / "renamed"
    shutil.copytree(LAMBDA, copy)
    body = json.loads((copy / "instance-types.json").read_text())
    for entry in body["data"].values():  # a renamed field: no row can be read
        entry["instance_kind"] = entry.pop("instance_type")
    (copy / "instance-types.json").write_text(json.dumps(body))
    replay = ReplayServer(Recording.load(copy)).start()
    try:
        config = configured(tmp_path, replay.url)
        result = run_cli(config, "collect", "--provider", "lambdalabs")
        sent = replay._body(replay.exchanges[0])
    finally:
        replay.stop()
    assert result.exit_code == 1, result.output
    ((run_id, status, listing),) = runs(tmp_path / "s.duckdb")
    assert status == "failed"
    assert [k.name for k in read_listing(listing)] == [NAME]
    assert run_cli(config, "runs", "raw", str(run_id), NAME).stdout_bytes == sent


def test_retention_drops_only_old_files_no_recent_run_names(tmp_path: Path) -> None:
    config = config_mod.from_dict(
        {"storage": {"path": str(tmp_path / "s.duckdb")}, "raw": {"keep": "30d"}}, source=None
    )
    folder = tmp_path / "raw"
    raw = RawStore(folder)
    now = datetime(2026, 12, 1, tzinfo=UTC)
    old_run = raw.put("a", b'{"old run": 1}')  # named only by a run of 40 days ago
    recent_run = raw.put("b", b'{"recent run": 1}')  # also named by a run of 10 days ago
    unnamed_old = raw.put("c", b'{"no run": 1}')
    unnamed_new = raw.put("d", b'{"a run not recorded yet": 1}')
    store = Store(tmp_path / "s.duckdb")
    for days, kept in ((40, [old_run, recent_run]), (10, [recent_run])):
        at = now - timedelta(days=days)
        store.write_run("lambdalabs", [], started_at=at, observed_at=at, regions=None, raw=kept)
    old = (now - timedelta(days=35)).timestamp()
    for kept in (old_run, recent_run, unnamed_old):
        os.utime(raw.path(kept.sha256), (old, old))
    os.utime(raw.path(unnamed_new.sha256), (now.timestamp(), now.timestamp()))

    assert retention.drop_old(folder, config, threading.Lock(), now) == 2
    left = {k.name for k in (old_run, recent_run, unnamed_old, unnamed_new) if raw.has(k.sha256)}
    assert left == {"b", "d"}
    assert retention.drop_old(folder, config, threading.Lock(), now) == 0


def test_collect_drops_what_is_past_keep(tmp_path: Path, server: ReplayServer) -> None:
    config = configured(tmp_path, server.url, '[raw]\nkeep = "1d"\n')
    folder = tmp_path / "s.duckdb.state" / "raw"
    stale = RawStore(folder).put("gone", b'{"answer of a run long gone": 1}')
    long_ago = (datetime.now(UTC) - timedelta(days=3)).timestamp()
    os.utime(RawStore(folder).path(stale.sha256), (long_ago, long_ago))
    collect(config)
    (kept,) = read_listing(runs(tmp_path / "s.duckdb")[0][2])
    assert sorted(p.name for p in folder.iterdir()) == [f"{kept.sha256}.gz"]


def test_a_fetch_failing_midway_keeps_the_answers_it_had(tmp_path: Path) -> None:
    broken = broken_recording(tmp_path, "azure", "page2.json", status=404)  # never retried
    replay = ReplayServer(Recording.load(broken)).start()
    try:
        config = write_config(tmp_path, None, replay.url + "/api/retail/prices")
        result = run_cli(config, "collect", "--provider", "azure")
        first = replay._body(replay.exchanges[1])  # [0]: the Bandwidth query's, never reached
    finally:
        replay.stop()
    assert result.exit_code == 1, result.output
    ((run_id, status, listing),) = runs(tmp_path / "prices.duckdb")
    assert status == "failed"
    assert [k.name for k in read_listing(listing)] == ["answer-1"]
    assert run_cli(config, "runs", "raw", str(run_id), "answer-1").stdout_bytes == first
