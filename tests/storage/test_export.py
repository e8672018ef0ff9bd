"""The Parquet export to a local directory: read back with DuckDB it is `prices` exactly; a
second export rewrites nothing; a later collection rewrites only the files whose rows changed;
every file is moved into place whole; the target, not the store, says what is there."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from storage.export import Report, Target, export, open_target
from tests.storage.export_support import (
    HOUR,
    T0,
    Recording,
    collect,
    copy_store,
    differences,
    later,
    open_partitions,
    stamps,
)

PRICES = "'{root}/**/*.parquet'"
RUNS = "'{root}/runs/collection_runs.parq'"


@pytest.fixture
def store(demo_store: Path, tmp_path: Path) -> Path:
    return copy_store(demo_store, tmp_path / "store")


def run(store: Path, root: Path) -> Report:
    return export(store, open_target(str(root)))


def test_the_export_reads_back_as_prices_exactly(store: Path, tmp_path: Path) -> None:
    root = tmp_path / "out"
    report = run(store, root)
    total, missing, extra = differences(store, PRICES.format(root=root))
    assert total > 100 and (missing, extra) == (0, 0)
    assert report.rows == total + _runs(store)
    assert differences(store, RUNS.format(root=root), "collection_runs")[1:] == (0, 0)
    # Both snapshots of the demo in their months, and the prices a provider dates itself (spot
    # history) in theirs.
    months = {m for _, m in report.partitions}
    with duckdb.connect(str(store), read_only=True) as con:
        con.execute("SET TimeZone = 'UTC'")
        dated = con.execute("SELECT DISTINCT strftime(valid_from, '%Y-%m') FROM prices").fetchall()
    assert months == {m for (m,) in dated} and {"2026-07", "2027-01"} <= months
    assert (root / "provider=aws" / "month=2027-01" / "open-0.parquet").is_file()
    assert json.loads((root / "_manifest.json").read_text())["format"] == "gpu-tracker export"


def test_columns_are_types_every_engine_reads(store: Path, tmp_path: Path) -> None:
    root = tmp_path / "out"
    run(store, root)
    schema = pq.read_schema(root / "provider=aws" / "month=2027-01" / "open-0.parquet")
    assert "provider" not in schema.names and "month" not in schema.names  # in the path only
    for name in ("valid_from", "valid_to", "last_seen"):
        assert schema.field(name).type == pa.timestamp("us", tz="UTC"), name
    assert schema.field("price_per_hour").type == pa.float64()
    assert schema.field("term_months").type == pa.int32()
    physical = pq.ParquetFile(root / "provider=aws" / "month=2027-01" / "open-0.parquet")
    column = physical.schema.column(physical.schema.names.index("valid_from"))
    assert column.physical_type == "INT64"  # never INT96
    logical = json.loads(column.logical_type.to_json())
    assert (logical["isAdjustedToUTC"], logical["timeUnit"]) == (True, "microseconds")


def test_a_second_export_rewrites_nothing(store: Path, tmp_path: Path) -> None:
    root = tmp_path / "out"
    first = run(store, root)
    before = stamps(root)
    second = run(store, root)
    assert first.written and not second.changed
    assert second.unchanged == len(json.loads((root / "_manifest.json").read_text())["groups"])
    assert stamps(root) == before  # not one file replaced, the manifest included


def test_a_confirming_collection_rewrites_only_the_current_prices(
    store: Path, tmp_path: Path
) -> None:
    root = tmp_path / "out"
    run(store, root)
    before = stamps(root)
    with later(store) as setup:
        collect(setup, T0 + HOUR)  # every price confirmed: last_seen moves, nothing else
    report = run(store, root)
    expected = {f"provider={p}/month={m}/open-0.parquet" for p, m in open_partitions(store)}
    assert set(report.written) == expected | {"runs/collection_runs.parq"}
    assert not report.deleted
    after = stamps(root)
    kept = {name for name in before if name not in expected and "runs/" not in name}
    kept.discard("_manifest.json")
    assert kept and all(after[name] == before[name] for name in kept)  # the closed history
    assert differences(store, PRICES.format(root=root))[1:] == (0, 0)


def test_a_price_change_rewrites_the_partitions_it_touches(store: Path, tmp_path: Path) -> None:
    root = tmp_path / "out"
    run(store, root)
    with later(store) as setup:
        # Lambda's prices go back to the old snapshot's: its 8x H100 price changes (the current
        # interval, opened at T0, is closed; a new one opens) and its 8x A100 40 GB is back.
        collect(setup, T0 + 2 * HOUR, "lambdalabs", earlier=True)
    report = run(store, root)
    closed = {name for name in report.written if name.endswith("closed-0.parquet")}
    assert closed == {"provider=lambdalabs/month=2027-01/closed-0.parquet"}
    assert {p for p, _ in report.partitions} == {"lambdalabs"}
    assert differences(store, PRICES.format(root=root))[1:] == (0, 0)


def test_every_file_is_moved_into_place_whole(store: Path, tmp_path: Path) -> None:
    """A reader globbing *.parquet never meets a file being written: each is written under a
    hidden temporary name and renamed (local) or copied server-side (object store)."""
    for local in (True, False):
        handler = Recording()
        root = tmp_path / f"out-{local}"
        target = Target(pafs.PyFileSystem(handler), root.as_posix(), local=local)
        report = export(store, target)
        writes = [op[1] for op in handler.ops if op[0] == "write"]
        moves = {op[2]: op[1] for op in handler.ops if op[0] == "move"}
        assert all(not w.endswith((".parquet", ".parq", ".json")) for w in writes), writes
        for name in [*report.written, "_manifest.json"]:
            source = moves[f"{root.as_posix()}/{name}"]
            hidden = source.rsplit("/", 1)[1].startswith(".") or "/.export-" in source
            assert hidden and source.endswith(".tmp"), source
        if not local:  # uploaded: each file written once, under its temporary name
            assert len(writes) == len(report.written) + 1


class NoMoves(Recording):
    """A store that cannot move (Azure Blob Storage without a hierarchical namespace)."""

    def move(self, src: str, dest: str) -> None:
        raise NotImplementedError("no moves here")


def test_where_nothing_moves_each_file_is_copied_whole_and_its_temporary_deleted(
    store: Path, tmp_path: Path
) -> None:
    handler = NoMoves()
    root = tmp_path / "out"
    report = export(store, Target(pafs.PyFileSystem(handler), root.as_posix(), local=False))
    copies = {op[2]: op[1] for op in handler.ops if op[0] == "copy"}
    deleted = {op[1] for op in handler.ops if op[0] == "delete"}
    for name in [*report.written, "_manifest.json"]:
        temporary = copies[f"{root.as_posix()}/{name}"]
        assert temporary.rsplit("/", 1)[1].startswith(".") and temporary in deleted
    assert not [p for p in root.rglob(".*") if p.is_file()]
    assert differences(store, PRICES.format(root=root))[1:] == (0, 0)


def test_a_replaced_store_with_the_same_history_rewrites_nothing(
    store: Path, tmp_path: Path
) -> None:
    root = tmp_path / "out"
    run(store, root)
    restored = copy_store(store, tmp_path / "restored")
    assert not run(restored, root).changed  # the target's manifest, not the store, is the truth


def test_a_file_gone_from_the_target_is_written_again(store: Path, tmp_path: Path) -> None:
    root = tmp_path / "out"
    run(store, root)
    (root / "provider=aws" / "month=2026-07" / "closed-0.parquet").unlink()
    report = run(store, root)
    assert report.written == ["provider=aws/month=2026-07/closed-0.parquet"]
    assert differences(store, PRICES.format(root=root))[1:] == (0, 0)


def test_a_partition_the_store_no_longer_has_is_deleted(store: Path, tmp_path: Path) -> None:
    root = tmp_path / "out"
    run(store, root)
    with duckdb.connect(str(store)) as con:  # a history pruned by hand, say
        con.execute("DELETE FROM price_intervals WHERE provider = 'azure'")
    report = run(store, root)
    assert report.deleted and all(n.startswith("provider=azure/") for n in report.deleted)
    assert not list((root / "provider=azure").rglob("*.parquet"))
    assert differences(store, PRICES.format(root=root))[1:] == (0, 0)


def test_the_parent_of_another_export_is_refused(store: Path, tmp_path: Path) -> None:
    from collectors.common import ConfigError

    bucket = tmp_path / "bucket"
    run(store, bucket / "tracker=acct-1")
    with pytest.raises(ConfigError, match="another export in tracker=acct-1/"):
        run(store, bucket)
    assert sorted(p.name for p in bucket.iterdir()) == ["tracker=acct-1"]  # nothing written
    run(store, bucket / "tracker=acct-2")  # a prefix of its own beside it is fine
    total = differences(store, PRICES.format(root=bucket / "tracker=acct-2"))[0]
    read = f"read_parquet('{bucket}/*/provider=*/month=*/*.parquet', hive_partitioning = true)"
    with duckdb.connect() as con:  # the parent read as docs/export.md gives it
        counts = con.execute(f"SELECT tracker, count(*) FROM {read} GROUP BY ALL").fetchall()
    assert sorted(counts) == [("acct-1", total), ("acct-2", total)]


def test_an_unknown_scheme_is_refused() -> None:
    from collectors.common import ConfigError

    with pytest.raises(ConfigError, match="ftp://"):
        open_target("ftp://example.com/x")
    with pytest.raises(ConfigError, match="AZURE_STORAGE_ACCOUNT_NAME"):
        open_target("az://container/prefix")


def _runs(store: Path) -> int:
    with duckdb.connect(str(store), read_only=True) as con:
        return int(con.execute("SELECT count(*) FROM collection_runs").fetchall()[0][0])


def test_the_staging_folder_is_gone_after_an_export(store: Path, tmp_path: Path) -> None:
    root = tmp_path / "out"
    run(store, root)
    assert not [p for p in root.iterdir() if p.name.startswith(".")]
    shutil.rmtree(root)
