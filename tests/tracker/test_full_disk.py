"""`collect` and `export` on a disk with no room left: one line per provider (or for the
export) naming the cause, every provider tried, no traceback, nothing half written; the store
as it was. A real tmpfs, filled on purpose (the `tiny_disk` fixture: root only)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from collectors import REGISTRY
from storage.query import query
from tests.disk_support import fill
from tracker import config as config_mod
from tracker.cli import cli
from tracker.collecting.pipeline import collect

RECORDINGS = Path(__file__).parents[2] / "tracker" / "demo_data"
AWS_TYPES = ["p4d.24xlarge", "p5.48xlarge", "g4dn.xlarge", "p3.2xlarge"]
FULL = "no space left on device writing "


pytestmark = pytest.mark.usefixtures("aws_test_keys")


def config_for(tmp_path: Path, store: Path, aws: str, azure: str) -> Path:
    lines = [
        f"[storage]\npath = {json.dumps(str(store))}",
        f'[providers.aws]\nendpoint = "{aws}"\ntimeout = 2',
        'regions = ["us-east-1", "us-west-2", "eu-west-1"]',
        f"instance_types = {json.dumps(AWS_TYPES)}",
        f'[providers.azure]\nendpoint = "{azure}/api/retail/prices"\ntimeout = 2',
    ]
    lines += [f"[providers.{n}]\nenabled = false" for n in REGISTRY if n not in ("aws", "azure")]
    path = tmp_path / "config.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def run(*args: str) -> Any:
    result = CliRunner().invoke(cli, list(args))
    # A traceback is an exception the command did not turn into its exit code.
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert "Traceback" not in result.output
    return result


def test_collect_on_a_full_disk_says_so_per_provider_and_keeps_the_store(
    replay: Any, tiny_disk: Any, tmp_path: Path
) -> None:
    disk = tiny_disk("disk", 8192)
    store = disk / "prices.duckdb"
    aws, azure = replay(RECORDINGS / "aws"), replay(RECORDINGS / "azure")
    config = config_for(tmp_path, store, aws.url, azure.url)
    assert run("--config", str(config), "collect").exit_code == 0
    before = query(store, "SELECT provider, status FROM collection_runs ORDER BY ALL").rows
    prices = query(store, "SELECT count(*) FROM prices").rows
    files = sorted(p.name for p in disk.iterdir())

    filler = fill(disk)
    result = run("--config", str(config), "collect")
    assert result.exit_code == 1 and "no space left on device" in result.output
    # Each provider's line, as the summary shows it and the daemon logs it.
    outcomes = collect(config_mod.load(config), env=dict(os.environ))
    assert [o.provider for o in outcomes] == ["aws", "azure"]  # every one tried
    for outcome in outcomes:
        assert outcome.status == "failed" and outcome.error is not None
        assert outcome.error.startswith(
            f"{outcome.provider}: could not store the collection: {FULL}{disk}/"
        )
        assert outcome.error.endswith("; and the run could not be recorded either")

    filler.unlink()
    # Nothing of the failed collection landed, and nothing of ours was left beside the store
    # (DuckDB may keep its own write-ahead log).
    assert query(store, "SELECT provider, status FROM collection_runs ORDER BY ALL").rows == before
    assert query(store, "SELECT count(*) FROM prices").rows == prices
    assert sorted(p.name for p in disk.iterdir() if p.name != "prices.duckdb.wal") == [
        f for f in files if f != "prices.duckdb.wal"
    ]
    assert run("--config", str(config), "collect").exit_code == 0  # and the store still works


def test_export_on_a_full_disk_names_the_cause_and_leaves_no_file(
    demo_store: Path, tiny_disk: Any
) -> None:
    disk = tiny_disk("disk", 1024)
    out = disk / "export"
    # No room for the staging folder's owner file; or for the Parquet files DuckDB writes
    # (where DuckDB used to hide the cause behind "Current transaction is aborted").
    for room_kib, where in ((0, "/.owner.new;"), (8, "/prices/provider=")):
        filler = fill(disk, room_kib)
        result = run("--db", str(demo_store), "export", "--to", str(out))
        assert result.exit_code == 1
        assert result.stderr.startswith(f"error: export to {out} failed: {FULL}{out}/.export-")
        assert where in result.stderr
        assert "aborted" not in result.stderr and len(result.stderr.splitlines()) == 1
        assert [p for p in out.rglob("*")] == []  # no file, no staging folder
        filler.unlink()
    assert run("--db", str(demo_store), "export", "--to", str(out)).exit_code == 0
