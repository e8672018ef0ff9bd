"""Hostile configurations through the real `collect`: each refused in one line that names the
key and the file, exit 2, before any provider is asked and with the store untouched.

Every provider is enabled, has credentials and points at one loopback server that counts the
requests it gets: a case that slipped past validation would reach it (or change the store).
"""

from __future__ import annotations

import http.server
import re
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from collectors import REGISTRY
from storage.store import Store
from tracker.cli import cli

RULE = (
    "[[alerts.rules]]\nname = 'r'\nkind = 'spot_price_below'\nthreshold = 2.5\ncurrency = 'USD'\n"
)
EMAIL = "[alerts.email]\nsmtp_host = 'localhost'\nfrom = 'a@example.com'\nto = ['b@example.com']\n"
# Stand-in credentials for every variable the registry names, so that every provider would be
# asked if its configuration passed.
CREDENTIALS = {
    variable: "AKIDTEST" if variable == "AWS_ACCESS_KEY_ID" else "test"
    for info in REGISTRY.values()
    for variable in (*info.credential_env.values(), *info.optional_credential_env.values())
    if variable != "AWS_SESSION_TOKEN"
}


def endpoints(name: str, url: str) -> str:
    """Every URL key of provider `name` (its endpoint, the extra ones such as AWS's feeds)
    pointed at `url`, as config.toml lines."""
    keys = [k for k in REGISTRY[name].options if k.endswith(("_endpoint", "_url"))]
    return "".join(f"{key} = '{url}'\n" for key in ("endpoint", *keys))


# (config.toml text, the key the message must name). The rest of the file is valid.
CASES: list[tuple[str, str]] = [
    # the file and its tables
    ("[sorage]\n", "sorage"),
    ("providers = 3\n", "providers"),
    ("storage = 'prices.duckdb'\n", "storage"),
    ("[storage]\npath = 'p.duckdb'\nwal = true\n", "storage.wal"),
    ("[providers]\nazure = 3\n", "providers.azure"),
    ("[providers.oracle]\nenabled = true\n", "providers.oracle"),
    ("[storage\n", "not valid TOML"),
    ("a = 'unterminated\n", "not valid TOML"),
    # the store's path
    ("[storage]\npath = ''\n", "storage.path"),
    ("[storage]\npath = 3\n", "storage.path"),
    ('[storage]\npath = "a\\u0000b.duckdb"\n', "storage.path"),
    # DuckDB takes a backslash for a directory separator: the store would land in a/b.duckdb.
    ("[storage]\npath = 'a\\b.duckdb'\n", "storage.path"),
    ('[storage]\npath = "a\\nb.duckdb"\n', "storage.path"),
    ("[storage]\npath = 'a-file/prices.duckdb'\n", "storage.path"),
    ("[storage]\npath = 'a-file/deeper/prices.duckdb'\n", "storage.path"),
    ("[storage]\npath = 'a-dir'\n", "storage.path"),
    # durations
    ("[providers.aws]\ninterval = '25000d'\n", "providers.aws.interval"),
    ("[providers.aws]\ninterval = '2147483648s'\n", "providers.aws.interval"),
    ("[providers.aws]\ninterval = '99999999999999d'\n", "providers.aws.interval"),
    ("[providers.azure]\ninterval = '366d'\n", "providers.azure.interval"),
    ("[providers.azure]\ninterval = '0m'\n", "providers.azure.interval"),
    ("[providers.azure]\ninterval = 'hourly'\n", "providers.azure.interval"),
    ("[providers.azure]\ninterval = 3600\n", "providers.azure.interval"),
    ("[providers.azure]\ninterval = '-5m'\n", "providers.azure.interval"),
    ("[providers.azure]\ninterval = '1.5h'\n", "providers.azure.interval"),
    ("[providers.azure]\ninterval = '" + "9" * 5000 + "d'\n", "providers.azure.interval"),
    ("[providers.gcp]\ndeadline = '2d'\n", "providers.gcp.deadline"),
    ("[providers.gcp]\ndeadline = '0s'\n", "providers.gcp.deadline"),
    ("[providers.gcp]\ndeadline = 600\n", "providers.gcp.deadline"),
    ("[providers.gcp]\ndeadline = 'soon'\n", "providers.gcp.deadline"),
    # timeouts
    ("[providers.aws]\ntimeout = nan\n", "providers.aws.timeout"),
    ("[providers.aws]\ntimeout = inf\n", "providers.aws.timeout"),
    ("[providers.aws]\ntimeout = -inf\n", "providers.aws.timeout"),
    ("[providers.aws]\ntimeout = 0\n", "providers.aws.timeout"),
    ("[providers.aws]\ntimeout = -1\n", "providers.aws.timeout"),
    ("[providers.aws]\ntimeout = 1e9\n", "providers.aws.timeout"),
    ("[providers.aws]\ntimeout = '30'\n", "providers.aws.timeout"),
    ("[providers.aws]\ntimeout = true\n", "providers.aws.timeout"),
    # endpoints
    ("[providers.azure]\nendpoint = 'http://127.0.0.1:99999/'\n", "providers.azure.endpoint"),
    ("[providers.azure]\nendpoint = 'http://127.0.0.1:0/'\n", "providers.azure.endpoint"),
    ("[providers.azure]\nendpoint = 'http://127.0.0.1:abc/'\n", "providers.azure.endpoint"),
    ("[providers.azure]\nendpoint = 'http://127.0.0.1/a b'\n", "providers.azure.endpoint"),
    ("[providers.azure]\nendpoint = ' http://127.0.0.1/'\n", "providers.azure.endpoint"),
    ('[providers.azure]\nendpoint = "http://127.0.0.1/\\n"\n', "providers.azure.endpoint"),
    ("[providers.azure]\nendpoint = 'ftp://127.0.0.1/'\n", "providers.azure.endpoint"),
    ("[providers.azure]\nendpoint = 'prices.azure.com'\n", "providers.azure.endpoint"),
    ("[providers.azure]\nendpoint = 'http://'\n", "providers.azure.endpoint"),
    ("[providers.azure]\nendpoint = 'http://:8080/'\n", "providers.azure.endpoint"),
    ("[providers.azure]\nendpoint = 3\n", "providers.azure.endpoint"),
    ("[providers.azure]\nendpoint = ''\n", "providers.azure.endpoint"),
    ("[providers.aws]\nec2_endpoint = 'http://127.0.0.1:70000'\n", "providers.aws.ec2_endpoint"),
    ("[providers.aws]\npricing_endpoint = 'not a url'\n", "providers.aws.pricing_endpoint"),
    # lists and names
    ("[providers.aws]\nregions = []\n", "providers.aws.regions"),
    ("[providers.aws]\nregions = 'us-east-1'\n", "providers.aws.regions"),
    ("[providers.aws]\nregions = ['']\n", r"providers.aws.regions\[0\]"),
    ('[providers.aws]\nregions = ["us-east-1\\u0000"]\n', r"providers.aws.regions\[0\]"),
    ("[providers.azure]\nregions = [' eastus']\n", r"providers.azure.regions\[0\]"),
    ("[providers.azure]\nregions = ['" + "x" * 300 + "']\n", r"providers.azure.regions\[0\]"),
    ("[providers.azure]\nregions = [1]\n", r"providers.azure.regions\[0\]"),
    ("[providers.aws]\ninstance_types = []\n", "providers.aws.instance_types"),
    ("[providers.aws]\nenabled = 'yes'\n", "providers.aws.enabled"),
    ("[providers.aws]\nregion = ['us-east-1']\n", "providers.aws.region"),
    ('[providers.aws]\n"bad\\nkey" = 1\n', r"providers.aws.bad\\nkey: unknown key"),
    ('[providers.aws]\n"' + "k" * 100_000 + '" = 1\n', r"providers.aws.kkkk"),
    ("[providers.tencent]\ncurrency = 'EUR'\n", "providers.tencent.currency"),
    ("[providers.lambdalabs]\napi_key_env = 'my secret'\n", "providers.lambdalabs.api_key_env"),
    ("[providers.paperspace]\ntoken_env = 'DOP_V1_ABC'\n", "providers.paperspace.token_env"),
    # the daemon's tables (a one-shot collect refuses them too: one config, one validation)
    ("[daemon]\njitter = '99999999999999d'\n", "daemon.jitter"),
    ("[daemon]\njob_timeout = '30d'\n", "daemon.job_timeout"),
    ("[daemon]\nshutdown_grace = '2h'\n", "daemon.shutdown_grace"),
    ("[daemon]\nmax_backoff = '25000d'\n", "daemon.max_backoff"),
    ("[daemon]\nlog_format = 'xml'\n", "daemon.log_format"),
    ("[metrics]\nlisten = '127.0.0.1:99999'\n", "metrics.listen"),
    ("[metrics]\nlisten = 'local host:9108'\n", "metrics.listen"),
    (EMAIL.replace("'localhost'", "'smtp.example.com/x'"), "alerts.email.smtp_host"),
    (EMAIL.replace("'localhost'", "'smtp example com'"), "alerts.email.smtp_host"),
    ("[review]\nsince = '100y'\n", "review.since"),
    # alerts
    (RULE + "provider = []\n", r"alerts.rules\[0\].provider"),
    (RULE + "gpu_model = []\n", r"alerts.rules\[0\].gpu_model"),
    (RULE + "region = []\n", r"alerts.rules\[0\].region"),
    (RULE.replace("2.5", "nan"), r"alerts.rules\[0\].threshold"),
    (RULE.replace("2.5", "inf"), r"alerts.rules\[0\].threshold"),
    (RULE.replace("spot_price_below", "price_change") + "window = '25000d'\n", "window"),
    ("[alerts.slack]\ntimeout = inf\n", "alerts.slack.timeout"),
    ("[alerts.slack]\ntimeout = 1e300\n", "alerts.slack.timeout"),
    (RULE.replace("2.5", "1e15"), r"alerts.rules\[0\].threshold"),
    (RULE + "hysteresis = 1e13\n", r"alerts.rules\[0\].hysteresis"),
    (
        RULE.replace("spot_price_below", "reserved_discount_above") + "term_months = 1000000\n",
        "term",
    ),
    ("[alerts]\nmax_attempts = 1000000000\n", "alerts.max_attempts"),
    ("[alerts]\nretry_max = '25000d'\n", "alerts.retry_max"),
    (EMAIL + "smtp_port = 99999\n", "alerts.email.smtp_port"),
    # exchange rates
    ("[fx.CNY]\nunits_per_usd = nan\ndate = 2026-01-08\n", "fx.CNY.units_per_usd"),
    ("[fx.CNY]\nunits_per_usd = 7.1\n", "fx.CNY.date"),
]


class _Counting(http.server.BaseHTTPRequestHandler):
    hits: list[str]

    def _answer(self) -> None:
        self.hits.append(self.path)
        self.send_response(401)  # not retried: the harness check stays quick
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST = _answer

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def counting() -> Iterator[tuple[str, list[str]]]:
    hits: list[str] = []
    handler = type("Handler", (_Counting,), {"hits": hits})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", hits
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def server(counting: tuple[str, list[str]]) -> tuple[str, list[str]]:
    """The loopback server, its count of requests started afresh for each case."""
    counting[1].clear()
    return counting


@pytest.fixture(autouse=True)
def credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name, value in CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("GPU_TRACKER_DB", raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def write_config(tmp_path: Path, text: str, url: str) -> Path:
    """`text`, plus every table it leaves out, each provider pointed at `url`."""
    for name in REGISTRY:
        header = f"[providers.{name}]\n"
        if header in text:
            if "endpoint" not in text.split(header)[1].split("[")[0]:
                text = text.replace(header, header + endpoints(name, url))
        elif "[providers]" not in text and "providers = " not in text:
            text += f"\n{header}timeout = 2\n{endpoints(name, url)}"
    if "[storage]" not in text and "storage = " not in text:
        text += "\n[storage]\npath = 'prices.duckdb'\n"
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path


def store_state(tmp_path: Path) -> dict[str, bytes]:
    """Every file beside the config but the config: the store and anything a write left."""
    return {
        str(p.relative_to(tmp_path)): p.read_bytes()
        for p in sorted(tmp_path.rglob("*"))
        if p.is_file() and p.name != "config.toml"
    }


def assert_refused(result: Any, key: str, file: Path | None) -> str:
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: "), lines[0]
    assert re.search(key, lines[0]), lines[0]
    if file is not None:
        assert str(file) in lines[0]
    assert "Traceback" not in result.output
    return lines[0]


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real, migrated store, made once (migrating one per case would be most of the time)."""
    store = tmp_path_factory.mktemp("template") / "prices.duckdb"
    Store(store).migrate()
    return store


@pytest.fixture
def existing(tmp_path: Path, template: Path) -> Path:
    """A real store beside the config, with a file and a directory as path traps."""
    store = tmp_path / "prices.duckdb"
    shutil.copyfile(template, store)
    (tmp_path / "a-file").write_text("not a directory\n")
    (tmp_path / "a-dir").mkdir()
    return store


@pytest.mark.parametrize(("text", "key"), CASES, ids=[f"{i:02d}" for i in range(len(CASES))])
def test_refused_before_any_fetch(
    tmp_path: Path, server: tuple[str, list[str]], existing: Path, text: str, key: str
) -> None:
    url, hits = server
    config = write_config(tmp_path, text, url)
    before = store_state(tmp_path)
    result = CliRunner().invoke(cli, ["--config", str(config), "collect"])
    assert_refused(result, key, config)
    assert hits == []
    assert store_state(tmp_path) == before


def test_there_are_many_cases() -> None:
    assert len(CASES) >= 60
    assert len({text for text, _ in CASES}) == len(CASES)


def test_a_config_file_not_in_utf8(tmp_path: Path, existing: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_bytes(b"[storage]\npath = 'caf\xe9.duckdb'\n")
    before = store_state(tmp_path)
    result = CliRunner().invoke(cli, ["--config", str(config), "collect"])
    line = assert_refused(result, "not UTF-8", config)
    assert "offset 21" in line
    assert store_state(tmp_path) == before


@pytest.mark.parametrize(
    ("where", "key"),
    [("a-file/prices.duckdb", "--db"), ("a-file/x/y.duckdb", "--db"), ("a\\b.duckdb", "--db")],
)
def test_a_bad_db_option(
    tmp_path: Path, server: tuple[str, list[str]], existing: Path, where: str, key: str
) -> None:
    url, hits = server
    config = write_config(tmp_path, "", url)
    before = store_state(tmp_path)
    db = tmp_path / where
    result = CliRunner().invoke(cli, ["--config", str(config), "--db", str(db), "collect"])
    line = assert_refused(result, key, None)
    assert str(db) in line or repr(str(db))[1:-1] in line  # quoted where it holds a backslash
    assert (hits, store_state(tmp_path)) == ([], before)


def test_a_bad_store_variable(
    tmp_path: Path,
    server: tuple[str, list[str]],
    existing: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url, hits = server
    config = write_config(tmp_path, "", url)
    before = store_state(tmp_path)
    monkeypatch.setenv("GPU_TRACKER_DB", str(tmp_path / "a-file" / "p.duckdb"))
    result = CliRunner().invoke(cli, ["--config", str(config), "collect"])
    assert_refused(result, "GPU_TRACKER_DB", None)
    assert (hits, store_state(tmp_path)) == ([], before)


@pytest.mark.usefixtures("one_retry")
def test_the_walk_reaches_the_server_when_the_config_is_good(
    tmp_path: Path, server: tuple[str, list[str]], existing: Path
) -> None:
    """The harness itself: a valid config does reach every provider's (failing) server."""
    url, hits = server
    config = write_config(tmp_path, "[daemon]\njitter = '1m'\n", url)
    text = config.read_text().replace("timeout = 2", "timeout = 2\ndeadline = '5s'")
    config.write_text(text)
    result = CliRunner().invoke(cli, ["--config", str(config), "collect"])
    assert result.exit_code == 1, result.output
    assert hits
