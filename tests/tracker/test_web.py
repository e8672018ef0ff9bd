"""The web dashboard (`gpu-tracker serve`) over a store the demo built from the recorded answers,
through a real server on loopback: the API answers exactly what the commands print with
`--format json`, refuses what they refuse with their words, the pages render, and the store is
never held between requests."""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import pytest
from click.testing import CliRunner

from collectors.common import ConfigError
from storage.reads import dashboard
from storage.reads.sandbox import QueryStopped
from tests.tracker.daemon_support import wait_until
from tests.tracker.web_support import get, serving
from tracker import config as config_mod
from tracker.cli import cli
from tracker.config.web import WebSettings, checked, parse_web
from tracker.web.cache import PageCache
from tracker.web.server import Running

# A window in the past of the demo's history (its earlier snapshot is six months before T0),
# fixed, so the command and the API count the same hours.
WINDOW = ("--since", "2026-07-01", "--until", "2026-11-01")


@pytest.fixture(scope="module")
def store(demo_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    # A copy: one test opens it for writing while the server runs.
    return Path(shutil.copy(demo_store, tmp_path_factory.mktemp("web") / "prices.duckdb"))


@pytest.fixture(scope="module")
def server(store: Path) -> Iterator[Running]:
    with serving(store) as running:
        yield running


def command_json(store: Path, *args: str) -> Any:
    result = CliRunner().invoke(cli, ["--db", str(store), *args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def command_error(store: Path, *args: str) -> str:
    result = CliRunner().invoke(cli, ["--db", str(store), *args])
    assert result.exit_code == 2, result.output
    return result.stderr


@pytest.mark.parametrize(
    ("path", "args"),
    [
        ("/api/latest?gpu=H100&kind=spot", ("latest", "--gpu", "H100", "--kind", "spot")),
        ("/api/latest?usd=true&per-gpu=1&limit=50",
         ("latest", "--usd", "--per-gpu", "--limit", "50")),
        ("/api/latest?sort=pflop&provider=Lambda",
         ("latest", "--sort", "pflop", "--provider", "lambda")),
        ("/api/latest?include_sold_out=true&provider=jarvislabs&limit=1000",
         ("latest", "--include-sold-out", "--provider", "jarvislabs", "--limit", "1000")),
        ("/api/tco?gpu=A100&provider=aws&provider=azure&months=12",
         ("tco", "--gpu", "A100", "--provider", "aws", "--provider", "azure", "--months", "12")),
        ("/api/tco?gpu=H100&gpus=4&utilization=0.5&limit=5&spot_overhead=25",
         ("tco", "--gpu", "H100", "--gpus", "4", "--utilization", "0.5", "--limit", "5",
          "--spot-overhead", "25")),
        ("/api/tco?gpu=A100&per_node=8&months=12",
         ("tco", "--gpu", "A100", "--per-node", "8", "--months", "12")),
        ("/api/history?gpu=A100&since=2026-07-01&until=2026-11-01&limit=100",
         ("history", "--gpu", "A100", *WINDOW, "--limit", "100")),
        ("/api/history?provider=aws&kind=spot&since=2026-07-01&until=2026-11-01&below=10",
         ("history", "--provider", "aws", "--kind", "spot", *WINDOW, "--below", "10")),
    ],
)  # fmt: skip
def test_the_api_answers_what_the_command_prints(
    server: Running, store: Path, path: str, args: tuple[str, ...]
) -> None:
    status, body = get(server, path)
    assert status == 200, body
    answer = json.loads(body)
    assert answer, "an empty answer would make the comparison say nothing"
    assert answer == command_json(store, *args)


def test_a_tco_total_is_the_formula_on_the_answers_own_numbers(server: Running) -> None:
    status, body = get(server, "/api/tco?gpu=A100&provider=aws&gpus=8&months=36&utilization=0.5")
    assert status == 200, body
    rows = json.loads(body)
    on_demand = next(r for r in rows if r["price_kind"] == "on_demand")
    spot = next(r for r in rows if r["price_kind"] == "spot")
    reserved = next(r for r in rows if r["price_kind"] == "reserved" and r["term_months"] == 12)
    hours = 730 * 36
    assert on_demand["total_usd"] == pytest.approx(
        on_demand["instances"] * on_demand["price_per_hour_usd"] * hours * 0.5, abs=0.01
    )
    assert spot["total_usd"] == pytest.approx(
        spot["instances"] * spot["price_per_hour_usd"] * hours * 0.5 * 1.10, abs=0.01
    )
    # Reserved is paid whatever the utilization: three whole 12-month terms.
    assert reserved["total_usd"] == pytest.approx(
        reserved["instances"] * 3 * reserved["price_per_hour_usd"] * 730 * 12, abs=0.01
    )
    assert on_demand["usd_per_gpu_hour"] == pytest.approx(
        on_demand["total_usd"] / (8 * hours * 0.5), abs=1e-6
    )


@pytest.mark.parametrize(
    ("path", "args"),
    [
        ("/api/latest?kind=weekly", ("latest", "--kind", "weekly")),
        ("/api/latest?provider=nimbus", ("latest", "--provider", "nimbus")),
        ("/api/latest?gpu=H999", ("latest", "--gpu", "H999")),
        ("/api/tco?gpus=8", ("tco", "--gpus", "8")),
        ("/api/tco?gpu=H100&utilization=1.5", ("tco", "--gpu", "H100", "--utilization", "1.5")),
        ("/api/tco?gpu=H100&gpus=4&baseline=6",
         ("tco", "--gpu", "H100", "--gpus", "4", "--baseline", "6")),
        ("/api/history?since=yesterday", ("history", "--since", "yesterday")),
        ("/api/history?gpu=H1000", ("history", "--gpu", "H1000")),
        ("/api/tco?gpu=H1000", ("tco", "--gpu", "H1000")),
        ("/api/history?since=2026-11-01&until=2026-07-01",
         ("history", "--since", "2026-11-01", "--until", "2026-07-01")),
    ],
)  # fmt: skip
def test_a_bad_parameter_is_400_with_the_commands_words(
    server: Running, store: Path, path: str, args: tuple[str, ...]
) -> None:
    status, body = get(server, path)
    assert status == 400, body
    message = json.loads(body)["error"]
    assert message and message in " ".join(command_error(store, *args).split())


def test_sold_out_offers_only_when_asked_for(server: Running) -> None:
    """As `latest`: what can be rented by default; with include_sold_out the rest too, marked
    `available: false`."""
    status, body = get(server, "/api/latest?provider=jarvislabs&limit=1000")
    assert status == 200, body
    rentable = json.loads(body)
    assert rentable and all(row["available"] is not False for row in rentable)
    status, body = get(server, "/api/latest?provider=jarvislabs&limit=1000&include_sold_out=1")
    every = json.loads(body)
    sold_out = [row for row in every if row["available"] is False]
    assert sold_out and len(every) == len(rentable) + len(sold_out)


def test_what_is_not_a_callers_option_is_refused(server: Running) -> None:
    for path in ("/api/latest?db=/etc/passwd", "/api/tco?gpu=H100&chart=x.png", "/api/latest?x=1"):
        status, body = get(server, path)
        assert status == 400, path
        assert "unknown parameter" in json.loads(body)["error"]
    assert get(server, "/api/latest?usd=perhaps")[0] == 400
    assert get(server, "/api/nothing")[0] == 404
    assert get(server, "/nothing")[0] == 404
    assert get(server, "/?" + "a" * 5000)[0] == 414


def test_only_reads_are_answered(server: Running) -> None:
    request = urllib.request.Request(server.url + "api/latest", data=b"{}", method="POST")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 405
    refused.value.close()


def test_the_now_page_lists_every_current_offer(server: Running, store: Path) -> None:
    status, body = get(server, "/")
    assert status == 200
    with duckdb.connect(str(store), read_only=True) as con:
        (offers,) = con.execute("SELECT count(*) FROM latest_prices").fetchone() or (0,)
    assert offers > 100
    data = re.search(r'<script type="application/json" id="offers-data">(.*?)</script>', body)
    assert data is not None
    assert len(json.loads(data[1])) == offers  # the rows, as data the page's script shows
    assert 'src="/assets/app.js"' in body and "http" not in body.split("<main")[0].replace(
        'content="width', ""
    )  # nothing fetched from elsewhere
    for asset in ("/assets/app.js", "/assets/style.css"):
        assert get(server, asset)[0] == 200


def test_the_history_decide_and_health_pages(server: Running) -> None:
    status, body = get(server, "/history?gpu=A100&provider=aws&since=365d")
    assert status == 200 and "<svg" in body and 'id="stats"' in body
    status, body = get(server, "/decide?gpu=A100&gpus=8&months=36&utilization=1")
    assert status == 200 and "<svg" in body and 'id="tco"' in body
    status, body = get(server, "/decide?gpu=A100&utilization=7")
    assert status == 200 and "problem" in body and "--utilization" in body
    status, body = get(server, "/health")
    assert status == 200 and 'id="runs"' in body
    assert "<td>aws</td>" in body and "<td>ok</td>" in body


def test_the_store_is_not_held_between_requests(server: Running, store: Path) -> None:
    assert get(server, "/")[0] == 200
    assert get(server, "/health")[0] == 200
    # A writer (the daemon) can open the store at once: no connection is left open.
    with duckdb.connect(str(store)) as writer:
        writer.execute("CHECKPOINT")
    assert get(server, "/api/latest?limit=1")[0] == 200


def test_the_health_read_is_the_runs_and_alerts_through_the_sandbox(store: Path) -> None:
    from storage import runs
    from storage.alerts import log as alert_log

    found = dashboard.health(store, 3, timeout_s=60)
    assert found.runs == runs.latest(store) and "aws" in found.runs
    assert (found.alerts, found.total_alerts) == alert_log.recent(store, 3)
    assert len(found.alerts.rows) == min(3, found.total_alerts)
    missing = dashboard.health(store.with_name("none.duckdb"), 3, timeout_s=60)
    assert (missing.runs, missing.total_alerts) == ({}, 0)


def test_a_query_past_its_time_limit_is_stopped(store: Path) -> None:
    with pytest.raises(QueryStopped), dashboard.bounded(store, 0.2) as con:
        con.execute("SELECT count(*) FROM range(100000000000) a, range(10) b").fetchall()


def test_a_remote_address_needs_to_be_asked_for() -> None:
    assert WebSettings("127.0.0.1", 8080).loopback and WebSettings("::1", 1).loopback
    with pytest.raises(ConfigError, match=r"web\.listen: 0\.0\.0\.0:8080 is not a loopback"):
        parse_web({"listen": "0.0.0.0:8080"})
    assert parse_web({"listen": "0.0.0.0:8080", "allow_remote": True}).host == "0.0.0.0"
    with pytest.raises(ConfigError, match=r"web\.port"):
        parse_web({"port": 1})
    with pytest.raises(ConfigError, match=r"web\.listen"):
        parse_web({"listen": "8080"})
    assert checked(WebSettings("localhost", 1), "k", "h").loopback


def test_serve_refuses_a_remote_address_without_the_flag(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["--db", str(tmp_path / "p.duckdb"), "serve", "--listen", "0.0.0.0:0"]
    )
    assert result.exit_code == 2
    assert "--allow-remote" in result.stderr and "no login" in result.stderr


def test_the_now_page_is_kept_until_the_store_changes(tmp_path: Path) -> None:
    store = tmp_path / "prices.duckdb"
    store.write_bytes(b"x")
    now = [0.0]
    # wait_s long: each rebuild here is waited for, so what is served is decided by the state
    cache = PageCache(store, max_age_s=60, wait_s=30, clock=lambda: now[0])
    built: list[int] = []

    def build() -> bytes:
        built.append(1)
        return str(len(built)).encode()

    assert cache.get("/", build) == b"1"
    assert cache.get("/", build) == b"1"  # kept
    os.utime(store, ns=(1, 1))  # a write: the store's modification time moved
    assert cache.get("/", build) == b"2"
    Path(f"{store}.wal").write_bytes(b"w")  # a write still in the write-ahead log
    assert cache.get("/", build) == b"3"
    now[0] = 61.0  # staleness follows the clock: an old copy is built again
    assert cache.get("/", build) == b"4"
    assert cache.get("/", build) == b"4"


def test_a_rebuild_is_not_waited_for_past_its_bound(tmp_path: Path) -> None:
    store = tmp_path / "prices.duckdb"
    store.write_bytes(b"x")
    cache = PageCache(store, wait_s=0.01)
    release = threading.Event()
    pages = iter([b"first", b"second"])

    def build() -> bytes:
        body = next(pages)
        if body == b"second":
            release.wait(30)
        return body

    assert cache.get("/", build) == b"first"
    os.utime(store, ns=(1, 1))
    # The rebuild is held: the request gets the last completed page (which says its as-of time)
    assert cache.get("/", build) == b"first"
    assert cache.get("/", build) == b"first"  # the running rebuild is not started twice
    release.set()
    wait_until(lambda: cache.get("/", build) == b"second", "the rebuilt page")


def test_the_watcher_rebuilds_a_changed_page_without_a_request(tmp_path: Path) -> None:
    store = tmp_path / "prices.duckdb"
    store.write_bytes(b"x")
    cache = PageCache(store, poll_s=0.01)
    built: list[bytes] = []

    def build() -> bytes:
        built.append(str(len(built) + 1).encode())
        return built[-1]

    assert cache.get("/", build) == b"1"
    cache.start()
    try:
        os.utime(store, ns=(1, 1))
        # rebuilt by the watcher: no get() in between
        wait_until(lambda: len(built) == 2, "the watcher's rebuild")
        assert cache.get("/", build) == b"2"
        assert len(built) == 2  # and the request found it current
    finally:
        cache.close()


def test_the_now_page_says_when_it_read_the_store(server: Running) -> None:
    with urllib.request.urlopen(server.url, timeout=30) as answer:
        html = answer.read().decode()
    stamp = re.search(r'id="as-of">as of (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC<', html)
    assert stamp is not None, html[:500]
    read_at = datetime.strptime(stamp[1], "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)
    assert abs((datetime.now(UTC) - read_at).total_seconds()) < 3600


def test_head_is_answered_without_a_body(server: Running) -> None:
    request = urllib.request.Request(server.url + "assets/app.js", method="HEAD")
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert answer.status == 200 and int(answer.headers["Content-Length"]) > 100
        assert answer.read() == b""
        assert "frame-ancestors 'none'" in answer.headers["Content-Security-Policy"]


def test_the_daemons_web_table_is_read_from_config() -> None:
    config = config_mod.from_dict({"web": {"listen": "[::1]:8181"}}, source=None)
    assert (config.web.host, config.web.port, config.web.loopback) == ("::1", 8181, True)
    assert not config_mod.from_dict({}, source=None).web.enabled
    with pytest.raises(ConfigError, match=r"web\.allow_remote"):
        config_mod.from_dict({"web": {"listen": "192.0.2.1:80"}}, source=None)
    with pytest.raises(ConfigError, match=r"web\.lisen"):
        config_mod.from_dict({"web": {"lisen": "127.0.0.1:80"}}, source=None)


@pytest.mark.parametrize("name", ["latest", "history", "tco", "index"])
def test_the_openapi_document_names_the_parameters_the_api_accepts(
    server: Running, name: str
) -> None:
    status, body = get(server, "/api/openapi.json")
    assert status == 200
    document = json.loads(body)
    assert document["openapi"].startswith("3.1")
    operation = document["paths"][f"/api/{name}"]["get"]
    described = {p["name"]: p for p in operation["parameters"]}
    # The API's own refusal lists what it accepts: the document says the same, no more.
    status, body = get(server, f"/api/{name}?nonsense=1")
    assert status == 400
    accepted = json.loads(body)["error"].partition("(accepted: ")[2].rstrip(")").split(", ")
    assert sorted(described) == sorted(accepted)
    assert set(operation["responses"]) == {"200", "400", "503"}
    if name in ("latest", "history"):
        assert "spot" in described["kind"]["schema"]["enum"]
    if name == "tco":  # --provider is repeatable: an array, each value a parameter again
        assert described["provider"]["schema"]["type"] == "array"
        assert described["provider"]["explode"] is True
        assert described["utilization"]["schema"]["maximum"] == 1
