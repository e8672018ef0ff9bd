"""The store's path checked before any fetch: what cannot be written is refused at once, naming
the key, and nothing is created."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from collectors.common import ConfigError
from tracker.cli import cli
from tracker.collecting.preflight import check_store_path


def files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_a_new_store_in_missing_directories_is_fine_and_nothing_is_made(tmp_path: Path) -> None:
    check_store_path(tmp_path / "a" / "b" / "prices.duckdb", "storage.path")
    check_store_path(Path("prices.duckdb"), "storage.path")  # the working directory
    assert files(tmp_path) == []


@pytest.mark.parametrize(
    ("where", "problem"),
    [
        ("a-file/prices.duckdb", "a-file is a file, not a directory"),
        ("a-file/x/y/prices.duckdb", "a-file is a file, not a directory"),
        ("a-dir", "is a directory"),
        ("dangling/prices.duckdb", "dangling is a broken symbolic link"),
    ],
)
def test_what_cannot_hold_a_store(tmp_path: Path, where: str, problem: str) -> None:
    (tmp_path / "a-file").write_text("x")
    (tmp_path / "a-dir").mkdir()
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    before = files(tmp_path)
    config = tmp_path / "config.toml"
    with pytest.raises(ConfigError) as err:
        check_store_path(tmp_path / where, "storage.path", config)
    assert str(err.value).startswith(f"{config}: storage.path: {tmp_path / where}: ")
    assert problem in str(err.value)
    assert files(tmp_path) == before


def test_a_directory_that_cannot_be_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What `os.access` says of a read-only filesystem, or of a directory without permission
    (root passes every permission check, so the answer is set here)."""
    real = os.access
    locked = tmp_path / "locked"
    locked.mkdir()

    def access(path: object, mode: int, **kwargs: object) -> bool:
        return False if Path(str(path)) == locked else real(path, mode)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "access", access)
    with pytest.raises(ConfigError, match=r"^--db: .*the directory .*locked is not writable"):
        check_store_path(locked / "prices.duckdb", "--db")
    with pytest.raises(ConfigError, match=r"locked is not writable .*: .*locked/sub in it"):
        check_store_path(locked / "sub" / "prices.duckdb", "--db")
    (tmp_path / "store.duckdb").write_bytes(b"")
    monkeypatch.setattr(
        os, "access", lambda path, mode, **kw: not str(path).endswith("store.duckdb")
    )
    with pytest.raises(ConfigError, match=r"store.duckdb: cannot be written"):
        check_store_path(tmp_path / "store.duckdb", "GPU_TRACKER_DB")


def test_the_daemon_refuses_a_store_it_cannot_write(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("x")
    config = tmp_path / "config.toml"
    config.write_text("[storage]\npath = 'a-file/prices.duckdb'\n")
    before = files(tmp_path)
    result = CliRunner().invoke(cli, ["--config", str(config), "daemon"])
    assert result.exit_code == 2, result.output
    assert f"{config}: storage.path: " in result.stderr
    assert "a-file is a file, not a directory" in result.stderr
    assert files(tmp_path) == before
