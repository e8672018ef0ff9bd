"""A store file that cannot be used (truncated, garbage, a checksum error, empty, a directory,
unreadable) is one clear line naming the file and what to do, exit 2, in every command that
opens it; the file's bytes stay as they were."""

from __future__ import annotations

import hashlib
import os
import socket
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from collectors.base import PriceRecord
from storage.store import Store
from tracker.cli import cli

T0 = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)
# Every command that opens the store. collect's only provider points at a closed loopback port:
# were the damage missed, it would fail there, never reach the network.
COMMANDS = {
    "sql": ["sql", "SELECT count(*) FROM prices"],
    "status": ["status"],
    "latest": ["latest"],
    "collect": ["collect", "--provider", "azure"],
    "review": ["review"],
    "alerts": ["alerts", "list"],
    "alerts check": ["alerts", "check"],
}
_FIRST_BLOCK = 12288  # DuckDB's two headers and the main header come first
_BLOCK = 262144  # DuckDB's block size


def _healthy(path: Path) -> bytes:
    record = PriceRecord(
        provider="aws", region="us-east-1", zone=None, instance_type="p5.48xlarge",
        price_kind="on_demand", term_months=None, payment_option=None, offering_class=None,
        currency="USD", price_per_hour=Decimal("55.04"), upfront_total=None, gpu_model="H100",
        gpu_count=8.0, gpu_memory_gib=80.0,
    )  # fmt: skip
    Store(path).write_run("aws", [record], started_at=T0, observed_at=T0, regions=None)
    return path.read_bytes()


def _truncated(path: Path) -> None:
    path.write_bytes(_healthy(path)[:20000])


def _garbage(path: Path) -> None:
    size = len(_healthy(path))
    path.write_bytes(bytes((i * 131 + 7) % 256 for i in range(size)))


def _checksum(path: Path) -> None:
    data = bytearray(_healthy(path))
    data[_FIRST_BLOCK + 100] ^= 0xFF  # one flipped bit pattern in the first block
    path.write_bytes(bytes(data))


def _empty(path: Path) -> None:
    path.write_bytes(b"")


def _directory(path: Path) -> None:
    path.mkdir()


def _unreadable(path: Path) -> None:
    _healthy(path)
    path.chmod(0)


DAMAGE: dict[str, Callable[[Path], None]] = {
    "truncated": _truncated,
    "garbage": _garbage,
    "checksum": _checksum,
    "empty": _empty,
    "directory": _directory,
    "unreadable": _unreadable,
}


def _fingerprint(path: Path) -> str:
    if path.is_dir():
        return "dir:" + ",".join(sorted(p.name for p in path.iterdir()))
    path.chmod(0o600)  # to read it here; the command ran before
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _damaged_inside(store: Path) -> None:
    """A store that opens, with a checksum error in a block only a full read reaches: the
    first such block of a few thousand offers, found by trying each."""
    records = [
        PriceRecord(
            provider="aws",
            region=f"region-{i % 40}",
            zone=None,
            instance_type=f"type-{i}",
            price_kind="on_demand",
            term_months=None,
            payment_option=None,
            offering_class=None,
            currency="USD",
            price_per_hour=Decimal(i + 1),
            upfront_total=None,
            gpu_model="H100",
            gpu_count=8.0,
            gpu_memory_gib=80.0,
        )
        for i in range(20000)
    ]
    Store(store).write_run("aws", records, started_at=T0, observed_at=T0, regions=None)
    healthy = store.read_bytes()
    for block in range(_FIRST_BLOCK, len(healthy), _BLOCK):
        damaged = bytearray(healthy)
        damaged[block + 100] ^= 0xFF
        store.write_bytes(bytes(damaged))
        if _opens(store) and not _reads(store):
            return
    raise AssertionError("no block of the store is read only by a full scan")


def _opens(store: Path) -> bool:
    try:
        duckdb.connect(str(store), read_only=True).close()
    except duckdb.Error:
        return False
    return True


def _reads(store: Path) -> bool:
    with duckdb.connect(str(store), read_only=True) as con:
        try:
            con.execute("SELECT * FROM price_intervals").fetchall()
        except duckdb.Error as exc:
            assert "checksum" in str(exc)
            return False
    return True


@pytest.mark.parametrize("command", [["sql", "SELECT * FROM prices"], ["latest"]])
def test_damage_found_while_reading_is_one_line_and_exit_2(
    tmp_path: Path, command: list[str]
) -> None:
    store = tmp_path / "prices.duckdb"
    _damaged_inside(store)
    before = store.read_bytes()
    result = CliRunner().invoke(cli, ["--db", str(store), *command])
    assert result.exit_code == 2, result.stderr
    assert result.stderr.startswith(f"error: the store {store} is damaged (")
    assert len(result.stderr.strip().splitlines()) == 1
    assert store.read_bytes() == before


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("kind", DAMAGE)
def test_a_damaged_store_is_one_line_and_exit_2(tmp_path: Path, kind: str, command: str) -> None:
    if kind == "unreadable" and os.geteuid() == 0:
        pytest.skip("root reads a file without read permission")
    store = tmp_path / "prices.duckdb"
    DAMAGE[kind](store)
    config = tmp_path / "config.toml"
    config.write_text(
        f'[storage]\npath = "{store}"\n\n[providers.azure]\nendpoint = "http://127.0.0.1:9"\n'
    )
    if not store.is_dir():
        store.chmod(0o600)
        before = _fingerprint(store)
        if kind == "unreadable":
            store.chmod(0)
    else:
        before = _fingerprint(store)
    result = CliRunner().invoke(cli, ["--config", str(config), *COMMANDS[command]])
    assert result.exit_code == 2, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and str(store) in errors[0], result.stderr
    assert "Traceback" not in result.stderr
    assert _fingerprint(store) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.toml", "prices.duckdb"]


@pytest.mark.daemon
def test_the_daemon_refuses_a_damaged_store_before_it_binds_a_port(tmp_path: Path) -> None:
    """The daemon as systemd runs it: exit 2 (not restarted), one line, and neither the metrics
    nor the dashboard port taken first (a port bound then given up would read as a start)."""
    store = tmp_path / "prices.duckdb"
    _garbage(store)
    before = _fingerprint(store)
    metrics, web = _free_port(), _free_port()
    config = tmp_path / "config.toml"
    config.write_text(
        f'[storage]\npath = "{store}"\n\n[providers.azure]\nendpoint = "http://127.0.0.1:9"\n\n'
        f'[metrics]\nlisten = "127.0.0.1:{metrics}"\n\n[web]\nlisten = "127.0.0.1:{web}"\n'
    )
    env = {k: v for k, v in os.environ.items() if k != "GPU_TRACKER_DB"}
    done = subprocess.run(
        [sys.executable, "-m", "tracker", "--config", str(config), "daemon"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,  # a safety net: the refusal comes before the scheduler starts
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (
        f'error: the store {store} is damaged (IO Error: The file "{store}" exists, but it is '
        "not a valid DuckDB database file!); nothing was read or written. Move it aside and "
        "restore a backup (a collection into a new path starts a fresh store)"
    )
    assert _fingerprint(store) == before


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port
