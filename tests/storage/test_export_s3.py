"""The export to `s3://` through the real Arrow S3 filesystem, against moto's S3 server on
loopback (a stand-in for the protocol, not for AWS): the objects read back as `prices`
exactly, every object appears by a server-side copy of a hidden temporary that is then
deleted, and a second export sends nothing."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import boto3
import duckdb
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pytest

from storage.export import Target, export, open_target
from tests.storage.export_support import HOUR, T0, Recording, collect, columns, copy_store, later

PREFIX = "gpu-prices/tracker=acct-1"


@pytest.fixture
def s3(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """An S3 server on loopback with an empty bucket; the URL `--to` takes for it. (Moto keeps
    its buckets per process, not per server: each test takes a bucket of its own.)"""
    moto_server = pytest.importorskip("moto.server")
    # The AWS chain finds these first; without them the SDK would also ask the instance
    # metadata service, which is not on loopback.
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    bucket = f"analytics-{uuid.uuid4().hex[:12]}"
    s3_client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    s3_client.create_bucket(Bucket=bucket)
    try:
        yield f"s3://{bucket}/{PREFIX}?endpoint_override={host}:{port}&scheme=http&region=us-east-1"
    finally:
        server.stop()


def objects(url: str) -> set[str]:
    target = open_target(url)
    return target.existing()


def test_an_export_to_s3_reads_back_exactly_and_moves_whole(demo_store: Path, s3: str) -> None:
    direct = open_target(s3)
    handler = Recording(direct.fs)
    report = export(demo_store, Target(pafs.PyFileSystem(handler), direct.root, local=False))
    assert report.written and "runs/collection_runs.parq" in report.written
    # Only the final objects are left: every temporary was deleted after its copy.
    assert objects(s3) == {*report.written, "_manifest.json"}
    root = direct.root
    writes = [op[1] for op in handler.ops if op[0] == "write"]
    moves = {op[2]: op[1] for op in handler.ops if op[0] == "move"}
    assert len(writes) == len(report.written) + 1
    for name in [*report.written, "_manifest.json"]:
        source = moves[f"{root}/{name}"]
        assert source in writes and source.rsplit("/", 1)[1].startswith("."), source
        assert source.endswith(".tmp") and not source.endswith(".parquet")
    assert _read_back_differences(demo_store, direct) == (0, 0)


def test_a_second_export_to_s3_sends_nothing(demo_store: Path, s3: str) -> None:
    assert export(demo_store, open_target(s3)).written
    handler = Recording(open_target(s3).fs)
    again = export(demo_store, Target(pafs.PyFileSystem(handler), open_target(s3).root))
    assert not again.changed and handler.ops == []


def test_a_changed_object_is_replaced_in_place(demo_store: Path, s3: str, tmp_path: Path) -> None:
    store = copy_store(demo_store, tmp_path / "store")
    first = export(store, open_target(s3))
    with later(store) as setup:
        collect(setup, T0 + HOUR)  # every price confirmed: the open-* objects change
    direct = open_target(s3)
    handler = Recording(direct.fs)
    second = export(store, Target(pafs.PyFileSystem(handler), direct.root, local=False))
    replaced = [name for name in second.written if name in first.written]
    assert replaced and all("/open-" in n or n.startswith("runs/") for n in replaced)
    assert objects(s3) == {*first.written, "_manifest.json"}  # same names, no temporaries left
    moved = {op[2] for op in handler.ops if op[0] == "move"}
    assert {f"{direct.root}/{name}" for name in replaced} <= moved
    assert _read_back_differences(store, direct) == (0, 0)


def _read_back_differences(store: Path, target: Target) -> tuple[int, int]:
    """Rows only in `prices`, rows only in the objects, read with Arrow's hive partitioning."""
    dataset = ds.dataset(
        f"{target.root}/",
        filesystem=target.fs,
        format="parquet",
        partitioning="hive",
        exclude_invalid_files=False,
        partition_base_dir=target.root,
        ignore_prefixes=[".", "_", "runs"],
    )
    exported = dataset.to_table()
    names = ", ".join(f'"{c}"' for c in columns(store))
    with duckdb.connect(str(store), read_only=True) as con:
        con.execute("SET TimeZone = 'UTC'")
        con.register("exported", exported)
        only = "SELECT count(*) FROM (SELECT {n} FROM {a} EXCEPT ALL SELECT {n} FROM {b})"
        missing = con.execute(only.format(n=names, a="prices", b="exported")).fetchall()[0][0]
        extra = con.execute(only.format(n=names, a="exported", b="prices")).fetchall()[0][0]
    return int(missing), int(extra)
