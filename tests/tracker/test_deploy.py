"""The deployment files (deploy/gpu-tracker.service, Dockerfile) start the daemon the way the
CLI understands, and docs/daemon.md explains both. No systemd or Docker needed to run these."""

from __future__ import annotations

import configparser
import fnmatch
import json
import re
import shlex
import shutil
import tomllib
from pathlib import Path, PurePosixPath

import pytest
from click.testing import CliRunner

from tracker import config as config_mod
from tracker.cli import cli
from tracker.config.daemon import DaemonSettings

ROOT = Path(__file__).parents[2]
UNIT = ROOT / "deploy" / "gpu-tracker.service"
DOCKERFILE = ROOT / "Dockerfile"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
README = (ROOT / "docs" / "daemon.md").read_text()


def unit() -> configparser.ConfigParser:
    # systemd allows repeated keys; keys are case-sensitive; % is systemd's, not ours.
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(UNIT.read_text())
    return parser


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile, continuation lines joined."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    found = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            found.append((word.upper(), rest.strip()))
    return found


def docker(name: str) -> list[str]:
    return [rest for word, rest in instructions() if word == name]


def assert_starts_the_daemon(argv: list[str]) -> None:
    """argv is `gpu-tracker [global options] daemon`, and the real CLI resolves it."""
    assert PurePosixPath(argv[0]).name in PYPROJECT["project"]["scripts"]
    assert argv[-1] == "daemon"
    assert "--config" in argv
    result = CliRunner().invoke(cli, [*argv[1:], "--help"], prog_name="gpu-tracker")
    assert result.exit_code == 0, result.output
    assert "Usage: gpu-tracker" in result.output and "daemon" in result.output


def test_the_unit_runs_the_daemon_as_its_own_user() -> None:
    service = unit()["Service"]
    assert service["Type"] == "simple"
    assert_starts_the_daemon(shlex.split(service["ExecStart"]))
    assert service["User"] not in ("", "root")
    assert service["Restart"] == "on-failure"
    assert int(service["RestartSec"]) > 0
    assert service["EnvironmentFile"].startswith("-/")  # optional: starts without one
    assert unit()["Install"]["WantedBy"] == "multi-user.target"


def test_the_unit_can_write_only_its_state_directory() -> None:
    service = unit()["Service"]
    state = f"/var/lib/{service['StateDirectory']}"
    assert service["WorkingDirectory"] == state
    assert service["ProtectSystem"] == "strict"
    assert service["ReadWritePaths"].split() == [state]
    assert service["NoNewPrivileges"] == "yes"


def test_the_unit_gives_the_daemon_time_to_stop() -> None:
    service = unit()["Service"]
    assert service["KillSignal"] == "SIGTERM"
    # Longer than the default shutdown grace, so systemd never kills a daemon stopping cleanly.
    assert int(service["TimeoutStopSec"]) > DaemonSettings().shutdown_grace_s


def test_the_image_runs_the_daemon_as_a_non_root_user() -> None:
    entrypoint = json.loads(docker("ENTRYPOINT")[-1])
    command = json.loads(docker("CMD")[-1])
    assert_starts_the_daemon([*entrypoint, *command])
    assert entrypoint[entrypoint.index("--config") + 1] == "/data/config.toml"
    assert docker("FROM") == ["python:3.12-slim"]
    assert docker("USER")[-1] not in ("root", "0")
    assert docker("WORKDIR")[-1] == "/data"
    assert json.loads(docker("VOLUME")[-1]) == ["/data"]
    assert docker("STOPSIGNAL") == ["SIGTERM"]


def test_the_image_installs_every_package_without_dev_dependencies() -> None:
    copied = set()
    for rest in docker("COPY"):
        words = [w for w in rest.split() if not w.startswith("--")]
        copied |= set(words[:-1])  # the sources; the last word is the destination
    included = PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"]
    for package in (name for name in included if "." not in name):
        assert package in copied, f"the Dockerfile does not copy {package}/"
    installs = [run for run in docker("RUN") if "pip install" in run]
    assert installs and all("[dev]" not in run and "-e " not in run for run in installs)


def test_dockerignore_keeps_what_the_build_needs() -> None:
    patterns = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    needed = [*PYPROJECT["tool"]["setuptools"]["packages"], "pyproject.toml", "README.md"]
    needed.append("config.toml")
    for name in needed:
        assert not any(fnmatch.fnmatch(name, p) for p in patterns), name
    for unwanted in (".venv", "prices.duckdb", "prices.duckdb.wal", "tests"):
        assert any(fnmatch.fnmatch(unwanted, p) for p in patterns), unwanted


def test_the_shipped_config_puts_the_store_in_the_container_volume(tmp_path: Path) -> None:
    data = tmp_path / "data"  # stands for /data: config.toml beside the store
    data.mkdir()
    shutil.copy(ROOT / "config.toml", data / "config.toml")
    assert config_mod.load(data / "config.toml").store_path == data / "prices.duckdb"


def test_an_absolute_store_path_is_kept_as_the_unit_needs(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[storage]\npath = "/var/lib/gpu-tracker/prices.duckdb"\n')
    assert config_mod.load(config).store_path == Path("/var/lib/gpu-tracker/prices.duckdb")


@pytest.mark.parametrize("path", ["deploy/gpu-tracker.service", "Dockerfile", ".dockerignore"])
def test_the_readme_explains_the_deployment_files(path: str) -> None:
    assert f"`{path}`" in README
    assert (ROOT / path).is_file()


def test_the_readme_recommends_a_stop_timeout_above_the_shutdown_grace() -> None:
    for pattern in (r"docker stop -t (\d+)", r"stop_grace_period: (\d+)s", r"--stop-timeout (\d+)"):
        match = re.search(pattern, README)
        assert match, pattern
        assert int(match.group(1)) > DaemonSettings().shutdown_grace_s
