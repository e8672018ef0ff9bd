"""Shared test fixtures: a fixed collection time, fixture folders, loopback replay servers."""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import settings

from collectors.base import ProviderSettings
from tracker.collecting.replay import Recording, ReplayServer
from tracker.config import ProviderConfig

FIXTURES = Path(__file__).parent / "fixtures"
OBSERVED_AT = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)
SHM = "/dev/shm"
_OWN_BASETEMP = pytest.StashKey[Path]()

# The property tests' number of examples (docs/contributing.md, "Tests"): a modest default that
# keeps the default run short, derandomized so it never fails by chance (each example of the
# stateful store properties costs half a second); `GPU_TRACKER_HYPOTHESIS=long` for a long,
# random run. A test's own @settings leaves max_examples to the profile.
settings.register_profile("quick", max_examples=10, deadline=None, derandomize=True)
settings.register_profile("long", max_examples=1000, deadline=None)
settings.load_profile(os.environ.get("GPU_TRACKER_HYPOTHESIS", "quick"))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--live", action="store_true", help="also run tests against the real APIs")


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """One worker more than the cores this process may use (three on two cores): a test spends
    part of its time waiting (on a subprocess, a loopback server, a file's sync), so one worker
    a core left the cores idle (132 s on two cores), while two a core had DuckDB's threads of
    four processes fight for two cores (130 s, 50 s more CPU); three took 105 s. None, one
    process as before, for the real-daemon tests (each starts its own processes and waits on
    them) and for a run that names its tests."""
    if config.option.markexpr or config.args_source == pytest.Config.ArgsSource.ARGS:
        return 0
    return len(os.sched_getaffinity(0)) + 1


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """The tests' stores live in memory where the machine has a tmpfs (/dev/shm): they create
    and sync hundreds of small DuckDB files, which a disk makes slower and noisier. Only the
    first process decides (xdist hands each worker a folder below it); `--basetemp` overrides,
    and the folder is removed at the end unless GPU_TRACKER_KEEP_TMP is set."""
    if hasattr(config, "workerinput") or config.option.basetemp is not None:
        return
    shm = Path(SHM)
    if shm.is_dir() and os.access(shm, os.W_OK):
        config.option.basetemp = tempfile.mkdtemp(prefix="gpu-tracker-tests-", dir=shm)
        config.stash[_OWN_BASETEMP] = Path(config.option.basetemp)


def pytest_unconfigure(config: pytest.Config) -> None:
    own = config.stash.get(_OWN_BASETEMP, None)
    if own is not None and not os.environ.get("GPU_TRACKER_KEEP_TMP"):
        shutil.rmtree(own, ignore_errors=True)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    _leave_out_daemon_tests(config, items)
    if config.getoption("--live"):
        return
    skip = pytest.mark.skip(reason="live test: run with --live (and credentials)")
    for item in items:
        if "live" in item.keywords:
            item.add_marker(skip)


def _leave_out_daemon_tests(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The plain `python -m pytest` leaves out the tests marked `daemon` (real daemon
    processes for tens of seconds each); `-m daemon` runs them, as CI does after the rest. A
    run that names its tests (a file, a node id) or gives any `-m` gets what it asked for."""
    if config.option.markexpr or config.args_source == pytest.Config.ArgsSource.ARGS:
        return
    daemon = [item for item in items if _own_run(item)]
    if daemon:
        config.hook.pytest_deselected(items=daemon)
        items[:] = [item for item in items if not _own_run(item)]


def _own_run(item: pytest.Item) -> bool:
    """Tests CI runs on their own: real daemons (`-m daemon`), Spark's JVM (`-m spark`), a
    headless Chromium (`-m browser`)."""
    names = ("daemon", "spark", "browser")
    return any(item.get_closest_marker(name) is not None for name in names)


@pytest.fixture
def observed_at() -> datetime:
    return OBSERVED_AT


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES


@pytest.fixture
def replay() -> Iterator[object]:
    """Start a loopback server over one or more recording folders: `replay(FIXTURES / "aws")`."""
    servers: list[ReplayServer] = []

    def start(*folders: Path) -> ReplayServer:
        server = ReplayServer(*(Recording.load(f) for f in folders)).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture(scope="session")
def demo_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store built by the real pipeline from the demo's recordings (the export tests), once
    per run: a test that changes it works on a copy."""
    from tests.storage.export_support import build_demo_store

    return built_once(tmp_path_factory, "demo", "prices.duckdb", build_demo_store)


@pytest.fixture(scope="session")
def demo_kept(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The store `gpu-tracker demo --keep` leaves (through the real CLI), built once per run:
    the modules that read it (tco, the README's taste) each take a copy."""
    from click.testing import CliRunner

    from tracker.cli import cli

    def build(path: Path) -> None:
        result = CliRunner().invoke(cli, ["demo", "--keep", str(path)])
        assert result.exit_code == 0, result.output

    return built_once(tmp_path_factory, "demo-kept", "demo.duckdb", build)


def built_once(
    factory: pytest.TempPathFactory, name: str, file: str, build: Callable[[Path], object]
) -> Path:
    """`build(path)` run once per test run, not once per xdist worker: the first worker to
    need it builds it in the run's shared folder under a file lock, and each worker takes a
    copy of its own (a copy of a closed DuckDB file is the same store)."""
    own = factory.mktemp(name) / file
    if not os.environ.get("PYTEST_XDIST_WORKER"):  # one process: its own folder is the run's
        build(own)
        return own
    import fcntl  # the workers' lock; POSIX, as the stores' /dev/shm

    shared = factory.getbasetemp().parent / f"built-{name}"  # the run's, above the workers'
    with open(f"{shared}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (shared / "done").exists():
            shutil.rmtree(shared, ignore_errors=True)  # a build that failed half-way
            shared.mkdir()
            build(shared / file)
            (shared / "done").touch()
    shutil.copy(shared / file, own)
    return own


@pytest.fixture
def one_retry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Collections in this process retry a failed request once instead of four times
    (ProviderSettings.max_retries): the retry path still runs, not seconds of its back-off."""
    settings = ProviderConfig.settings

    def once(self: ProviderConfig, env: Mapping[str, str]) -> tuple[ProviderSettings, list[str]]:
        got, missing = settings(self, env)
        return dataclasses.replace(got, max_retries=1), missing

    monkeypatch.setattr(ProviderConfig, "settings", once)


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Callable[[str, int], Path]]:
    """Mount a tmpfs of `size_kib` at `tmp_path / name`, a small disk a test can fill
    (`tiny_disk("disk", 4096)`); unmounted at the end. Skipped with the reason where it cannot
    be mounted: mounting needs root (CI runs as root)."""
    mounted: list[Path] = []

    def mount(name: str, size_kib: int) -> Path:
        if os.geteuid() != 0 or shutil.which("mount") is None:
            pytest.skip("mounting a small tmpfs needs root and mount(8)")
        where = tmp_path / name
        where.mkdir()
        command = ["mount", "-t", "tmpfs", "-o", f"size={size_kib}k", "tmpfs", str(where)]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
        mounted.append(where)
        return where

    yield mount
    for where in reversed(mounted):
        subprocess.run(["umount", "-l", str(where)], capture_output=True, check=False)


@pytest.fixture
def aws_test_keys(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Test keys for AWS, and no way for boto3 to find real ones (or ask the instance role)."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test")
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
