"""Every date, time and duration option refuses a value outside its supported range with exit 2
naming the option, through the real CLI; the web API, a real server on loopback, answers the
same values with HTTP 400 in the command's words, and the history page shows the refusal.
The ranges are listed in docs/commands.md."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import pytest
from click.testing import CliRunner

from tests.storage.reads.series_support import build
from tests.tracker.web_support import get, serving
from tracker.cli import cli
from tracker.web.server import Running

# A moment is a duration back from now, or a date or timestamp from 1970-01-01 to 9998-12-31.
MOMENTS = [
    "0001-01-01",
    "0001-01-31T00:00:00",
    "0001-01-01T00:00+01:00",
    "1969-12-31",
    "1969-12-31T23:59:59Z",
    "1970-01-01T00:30+01:00",  # 1969-12-31 23:30 UTC
    "9999-01-01",
    "9999-12-31T23:59:59.999999",
    "9999-12-31T23:59-05:00",
    "3651d",
    "99999999999999999999d",
]
# (the command and the options it needs, the option, its API parameter or None, bad values)
BAD = [
    (["history"], "--until", "until", MOMENTS),
    (["history"], "--since", "since", MOMENTS),
    (["tco", "--gpu", "A100"], "--spot-window", "spot_window", ["3651d", "87601h", "0d", "9e9d"]),
    (["review"], "--since", None, ["121mo", "11y", "0mo", "99999999999y"]),
    (["sql", "SELECT 1"], "--timeout", None, ["25h", "1441m", "0s", "99999999999999999999s"]),
]
CLI_CASES = [(args, option, value) for args, option, _, values in BAD for value in values]
API_CASES = [(args[0], name, value) for args, _, name, values in BAD if name for value in values]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("dates") / "prices.duckdb")


@pytest.fixture(scope="module")
def server(store: Path) -> Iterator[Running]:
    with serving(store) as running:
        yield running


def refusal(store: Path, args: list[str], option: str, value: str) -> str:
    result = CliRunner().invoke(cli, ["--db", str(store), *args, option, value])
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert "Traceback" not in result.output
    return result.stderr


@pytest.mark.parametrize(
    ("args", "option", "value"), CLI_CASES, ids=[f"{a[0]} {o} {v}" for a, o, v in CLI_CASES]
)
def test_a_date_or_duration_out_of_range_is_exit_2_naming_the_option(
    store: Path, args: list[str], option: str, value: str
) -> None:
    err = refusal(store, args, option, value)
    assert option in err and (value in err or "out of range" in err), err


@pytest.mark.parametrize(
    ("command", "name", "value"), API_CASES, ids=[f"{c} {n} {v}" for c, n, v in API_CASES]
)
def test_the_api_answers_them_400_with_the_commands_words(
    server: Running, store: Path, command: str, name: str, value: str
) -> None:
    extra = {"gpu": "A100"} if command == "tco" else {}
    status, body = get(server, f"/api/{command}?{urlencode({name: value, **extra})}")
    assert status == 400, body
    message = json.loads(body)["error"]
    option = "--" + name.replace("_", "-")
    assert option in message
    args = [command, *(["--gpu", "A100"] if extra else [])]
    assert message in " ".join(refusal(store, args, option, value).split())


@pytest.mark.parametrize("name", ["since", "until"])
def test_the_history_page_shows_the_refusal(server: Running, name: str) -> None:
    status, body = get(server, f"/history?gpu=A100&{name}=0001-01-01")
    assert status == 200
    assert "is out of range (from 1970-01-01 to 9998-12-31, UTC)" in body


@pytest.mark.parametrize(
    "window",
    [
        ["--since", "1970-01-01", "--until", "2026-11-11"],
        ["--since", "1970-01-01T01:00+01:00", "--until", "1970-01-31T00:00Z"],
        ["--until", "9998-12-31T23:59:59Z"],  # later than now: the window ends now
        ["--since", "3650d", "--until", "3649d"],
    ],
)
def test_the_ends_of_the_range_are_answered(store: Path, window: list[str]) -> None:
    result = CliRunner().invoke(cli, ["--db", str(store), "history", *window, "--format", "json"])
    assert result.exit_code == 0, result.output
    assert isinstance(json.loads(result.stdout), list)


def test_the_api_answers_the_earliest_moment(server: Running) -> None:
    status, body = get(server, "/api/history?since=1970-01-01&until=2026-11-11")
    assert status == 200, body
    assert len(json.loads(body)) == 2
