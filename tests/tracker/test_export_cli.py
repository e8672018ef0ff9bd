"""`gpu-tracker export` through the real CLI, the `[export]` table, and the daemon's scheduled
export job run in process on a real store."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from collectors.common import ConfigError
from tests.storage.export_support import copy_store, differences
from tracker import config as config_mod
from tracker.cli import cli
from tracker.config.export import ExportSettings, parse_export
from tracker.daemon.export import JOB_ID
from tracker.exporting import beside


@pytest.fixture(autouse=True)
def no_config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run where no ./config.toml is: the built-in defaults, whatever the checkout's file says."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GPU_TRACKER_DB", raising=False)


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_export_writes_then_says_nothing_changed(demo_store: Path, tmp_path: Path) -> None:
    out = tmp_path / "export"
    code, stdout, _ = invoke("--db", str(demo_store), "export", "--to", str(out))
    assert code == 0
    assert stdout.startswith(f"exported {demo_store} to {out} (parquet): ")
    assert " files written (" in stdout and " 0 deleted" in stdout
    assert differences(demo_store, f"'{out}/**/*.parquet'")[1:] == (0, 0)
    code, stdout, _ = invoke("export", "--to", str(out), "--db", str(demo_store))
    assert code == 0 and "nothing changed (" in stdout


def test_a_target_that_is_not_a_directory_or_known_url_is_a_usage_error(
    demo_store: Path,
) -> None:
    code, _, stderr = invoke("--db", str(demo_store), "export", "--to", "ftp://host/x")
    assert code == 2 and "--to: 'ftp://host/x' is neither a directory nor" in stderr
    code, _, stderr = invoke("--db", str(demo_store), "export", "--to", "az://container/x")
    assert code == 2 and "AZURE_STORAGE_ACCOUNT_NAME" in stderr


def test_no_store_is_a_failure_not_an_empty_export(tmp_path: Path) -> None:
    missing = tmp_path / "none.duckdb"
    code, _, stderr = invoke("--db", str(missing), "export", "--to", str(tmp_path / "x"))
    assert code == 1 and "no price store" in stderr
    assert not (tmp_path / "x").exists()


def test_the_export_table() -> None:
    assert parse_export({}) == ExportSettings()
    assert not ExportSettings().enabled
    settings = parse_export({"to": "gs://bucket/prices", "interval": "6h"})
    assert (settings.to, settings.interval_s, settings.enabled) == (
        "gs://bucket/prices",
        21600,
        True,
    )
    config = config_mod.from_dict({"export": {"to": "out"}}, source=None)
    assert config.export.interval_s == 86400


def test_a_relative_directory_is_beside_the_config_file(tmp_path: Path) -> None:
    config = tmp_path / "etc" / "config.toml"
    assert beside("exports/prices", config) == str(tmp_path / "etc" / "exports" / "prices")
    assert beside("/srv/prices", config) == "/srv/prices"
    assert beside("s3://bucket/prices", config) == "s3://bucket/prices"
    assert beside("exports", None) == "exports"  # no file: the working directory


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"bucket": "x"}, "export.bucket"),
        ({"to": "ftp://x/y"}, "export.to"),
        ({"to": ""}, "export.to"),
        ({"to": 3}, "export.to"),
        ({"to": "out", "interval": "often"}, "export.interval"),
    ],
)
def test_a_bad_export_table_names_the_key(raw: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        config_mod.from_dict({"export": raw}, source=None)


def test_the_daemon_exports_at_start_and_every_interval(
    demo_store: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from tracker.daemon.service import Daemon

    store = copy_store(demo_store, tmp_path / "store")
    out = tmp_path / "export"
    config = config_mod.from_dict(
        {"storage": {"path": str(store)}, "export": {"to": str(out), "interval": "6h"}},
        source=None,
    )
    daemon = Daemon(config, {})
    now = datetime.now(UTC)
    daemon.plan(now)
    job = daemon.scheduler.get_job(JOB_ID)
    assert job.trigger.interval == timedelta(hours=6) and job.next_run_time == now
    with caplog.at_level(logging.INFO, logger="tracker.daemon"):
        job.func()
        job.func()
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("export to")]
    assert len(lines) == 2 and " files written (" in lines[0], lines
    assert "nothing changed" in lines[1]
    assert differences(store, f"'{out}/**/*.parquet'")[1:] == (0, 0)
    assert not daemon.shared.running  # the job counted as in flight only while it ran


def test_a_failed_export_is_logged_and_the_daemon_goes_on(
    demo_store: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from tracker.daemon.service import Daemon

    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")
    config = config_mod.from_dict(
        {
            "storage": {"path": str(copy_store(demo_store, tmp_path / "s"))},
            "export": {"to": str(blocked / "out")},
        },
        source=None,
    )
    daemon = Daemon(config, {})
    daemon.plan()
    with caplog.at_level(logging.INFO, logger="tracker.daemon"):
        daemon.scheduler.get_job(JOB_ID).func()  # raises nothing into the scheduler
    assert any(
        r.levelno == logging.ERROR
        and r.getMessage().startswith(f"export to {blocked / 'out'} failed")
        for r in caplog.records
    ), [r.getMessage() for r in caplog.records]
