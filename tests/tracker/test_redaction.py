"""No credential the tracker holds is ever printed, logged or stored, whatever echoed it.

Every credential variable gets a recognisable value; every provider points at one loopback
server that answers each request with a 401 or a 500 whose body quotes the request back (its
path and query, every header, its body), in each provider's error shape. `collect -v` and the
daemon (its collections in child processes, its log as JSON) then run against it, and stdout,
stderr, the daemon's log and the raw bytes of the store file are searched for every value.
"""

from __future__ import annotations

import http.server
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from collectors import REGISTRY
from collectors.common import Redactor
from storage.query import query
from tracker.collecting import failure

# Values no real text would hold by chance, for every credential variable the registry names
# (IDs and tokens as well as secret halves) and the alert channels'.
_VARIABLES = sorted(
    {
        variable
        for info in REGISTRY.values()
        for variable in (*info.credential_env.values(), *info.optional_credential_env.values())
    }
)
SECRETS = {
    **{
        variable: f"Echo{variable.title().replace('_', '')}{i:03d}"
        for i, variable in enumerate(_VARIABLES)
    },
    "AWS_ACCESS_KEY_ID": "AKIAECHOTESTKEYID001",
    "AWS_SECRET_ACCESS_KEY": "echoSecretAccessKey/002+abcdefghijklmnopq",  # '/' and '+' too
    "SMTP_USERNAME": "echo-smtp-user-011@example.com",
    "SMTP_PASSWORD": "echoSmtpPassword012",
}
SLACK_PATH = "/services/T0ECHO/B0ECHO/echoSlackPath013"
# The secret halves only sign; everything else a client sends, and each must reach the server,
# so the test shows the echo really carried it back.
_SIGNING = {"AWS_SECRET_ACCESS_KEY", "TENCENTCLOUD_SECRET_KEY", "ALIBABA_CLOUD_ACCESS_KEY_SECRET"}
# Nebius' SDK speaks gRPC (HTTP/2), which the echo cannot read back; its credentials file is a
# path read on this machine, never sent. Both are still searched for in every output.
_NOT_HTTP = {"NEBIUS_IAM_TOKEN", "NEBIUS_SERVICE_ACCOUNT_CREDENTIALS"}
GRPC = {"nebius"}
_SIGNING |= {"HUAWEICLOUD_SDK_SK", "VOLCENGINE_SECRET_KEY"}
SENT = tuple(v for v in _VARIABLES if v not in _SIGNING | _NOT_HTTP)
TRACKER = (sys.executable, "-m", "tracker")
# `collect` as `python -m tracker` runs it, with one retry per request instead of the four of
# ProviderSettings.max_retries, and Alibaba's SDK waiting 10 ms before it instead of 1 s: the
# retry path (and what it logs) still runs, but not the back-off of four retries after a 500
# (up to 20 s for Alibaba and Tencent).
ONE_RETRY = """
import dataclasses
from collectors.alibaba import AlibabaCollector
from tracker import config
from tracker.cli import main
AlibabaCollector.backoff_ms = 10
settings = config.ProviderConfig.settings
def one_retry(self, env):
    got, missing = settings(self, env)
    return dataclasses.replace(got, max_retries=1), missing
config.ProviderConfig.settings = one_retry
main()
"""
COLLECT = (sys.executable, "-c", ONE_RETRY)
ONE_REGION = {"aws": "us-east-1", "tencent": "ap-guangzhou", "alibaba": "cn-hangzhou"}


class Echo(http.server.BaseHTTPRequestHandler):
    status = 401
    seen: list[str]

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode("utf-8", "replace") if length else ""
        # The secret-bearing parts first: some clients quote only the start of a body.
        said = f"{self.command} {self.path} {dict(self.headers)} {body}"
        self.seen.append(said)
        answer = {  # the error shapes of every provider's API, each quoting the request
            "message": said,
            "Message": said,
            "Code": "InvalidAccessKeyId.NotFound",
            "__type": "UnrecognizedClientException",
            "error": {"code": self.status, "message": said, "status": "UNAUTHENTICATED"},
            "id": "unauthorized",
            "Response": {
                "Error": {"Code": "AuthFailure.SecretIdNotFound", "Message": said},
                "RequestId": "echo",
            },
        }
        payload = json.dumps(answer).encode()
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = _answer

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(params=[401, 500])
def echo(request: pytest.FixtureRequest) -> Iterator[tuple[str, list[str]]]:
    seen: list[str] = []
    handler = type("Handler", (Echo,), {"status": request.param, "seen": seen})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", seen
    httpd.shutdown()
    httpd.server_close()


def setup(tmp_path: Path, url: str) -> tuple[Path, dict[str, str]]:
    lines = ["[storage]\npath = 'prices.duckdb'", "[review]\nenabled = false"]
    lines.append("[daemon]\njitter = '0s'\nshutdown_grace = '5s'")
    lines.append("[alerts.slack]\nwebhook_url_env = 'SLACK_WEBHOOK_URL'")
    lines.append(
        "[alerts.email]\nsmtp_host = '127.0.0.1'\nsmtp_port = 9\nsecurity = 'none'\n"
        "from = 'a@example.com'\nto = ['b@example.com']"
    )
    for name, info in REGISTRY.items():
        keys = [k for k in info.options if k.endswith(("_endpoint", "_url"))]
        urls = "\n".join(f"{key} = '{url}'" for key in ("endpoint", *keys))
        region = f"\nregions = ['{ONE_REGION[name]}']" if name in ONE_REGION else ""
        # Nebius' gRPC gets no answer from the HTTP echo, only its deadline: a short one.
        timeout = 1 if name in GRPC else 5
        lines.append(f"[providers.{name}]\n{urls}{region}\ntimeout = {timeout}")
    config = tmp_path / "config.toml"
    config.write_text("\n\n".join(lines) + "\n")
    env = {
        **os.environ,
        **SECRETS,
        "SLACK_WEBHOOK_URL": url + SLACK_PATH,
        "AWS_CONFIG_FILE": str(tmp_path / "no-aws-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "no-aws-credentials"),
        "AWS_EC2_METADATA_DISABLED": "true",
        "PYTHONUNBUFFERED": "1",
    }
    env.pop("GPU_TRACKER_DB", None)
    return config, env


def leaks(text: bytes) -> list[str]:
    """The credentials found in `text`, as given or percent-encoded."""
    values = {**SECRETS, "SLACK_WEBHOOK_URL": SLACK_PATH}
    return [
        name
        for name, value in values.items()
        if value.encode() in text or quote(value, safe="").encode() in text
    ]


def assert_echoed(seen: list[str]) -> None:
    """The server did get the credentials a client sends: the answers carried them back."""
    requests = "\n".join(seen)
    assert [
        n for n in SENT if SECRETS[n] not in requests and quote(SECRETS[n]) not in requests
    ] == []


def store_bytes(tmp_path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(tmp_path.glob("prices.duckdb*")))


def test_collect_never_shows_or_stores_a_credential(
    tmp_path: Path, echo: tuple[str, list[str]]
) -> None:
    url, seen = echo
    config, env = setup(tmp_path, url)
    done = subprocess.run(
        [*COLLECT, "--config", str(config), "-v", "collect"],
        capture_output=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 1, done.stderr.decode()
    assert_echoed(seen)
    errors = query(tmp_path / "prices.duckdb", "SELECT provider, error FROM collection_runs").rows
    assert {p for p, _ in errors} == set(REGISTRY)
    assert leaks(done.stdout) == []
    assert leaks(done.stderr) == []
    assert leaks(store_bytes(tmp_path)) == []
    assert any("***" in (error or "") for _, error in errors)  # an echo reached an error, masked


@pytest.mark.daemon
def test_the_daemon_never_logs_or_stores_a_credential(
    tmp_path: Path, echo: tuple[str, list[str]]
) -> None:
    url, seen = echo
    config, env = setup(tmp_path, url)
    log = tmp_path / "daemon.log"
    with log.open("wb") as sink:
        daemon = subprocess.Popen(
            [*TRACKER, "--config", str(config), "-v", "daemon", "--log-format", "json"],
            stdout=sink,
            stderr=sink,
            env=env,
        )
        try:
            _wait_for_every_job(log, daemon)
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(60)
        finally:
            if daemon.poll() is None:
                daemon.kill()
                daemon.wait(10)
    assert_echoed(seen)
    written = log.read_bytes()
    assert b'"status": "failed"' in written
    assert leaks(written) == []
    assert leaks(store_bytes(tmp_path)) == []


def _wait_for_every_job(log: Path, daemon: subprocess.Popen[bytes]) -> None:
    """Until the daemon has logged one finished job per provider (a state, not a time; the
    limit is only a safety net)."""
    limit = time.monotonic() + 240
    while True:
        jobs = {
            json.loads(line).get("provider")
            for line in log.read_text(errors="replace").splitlines()
            if line.startswith("{") and '"status": ' in line
        }
        if set(REGISTRY) <= jobs:
            return
        assert daemon.poll() is None, log.read_text(errors="replace")
        assert time.monotonic() < limit, log.read_text(errors="replace")
        time.sleep(0.1)


def test_every_form_a_request_carries_is_masked() -> None:
    redact = Redactor("dop_v1_abc/def+ghi", min_length=8)
    for form in (
        "dop_v1_abc/def+ghi",
        "dop_v1_abc%2Fdef%2Bghi",  # a query string
        "dop_v1_abc\\/def+ghi",  # JSON that escapes slashes
        "ZG9wX3YxX2FiYy9kZWYrZ2hpOg==",  # Basic auth, the key as the user
    ):
        assert redact(f"x {form} y") == "x *** y"
    assert Redactor("test", min_length=8)("a test path") == "a test path"


def test_log_records_are_masked_once_held(caplog: pytest.LogCaptureFixture) -> None:
    failure.hold(["held-secret-value-42"])
    import logging

    logger = logging.getLogger("tests.redaction")
    try:
        raise ValueError("echoed held-secret-value-42 back")
    except ValueError:
        logger.exception("failed with %s", "held-secret-value-42")
    text = caplog.text
    assert "failed with ***" in text
    assert "echoed *** back" in text
    assert "held-secret-value-42" not in text
