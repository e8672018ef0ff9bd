"""Every numeric option of `tco`, `history` and `latest` refuses NaN, infinities and values out
of its documented range with exit 2 naming the option, through the real CLI; the web API, which
parses its parameters with the same options, answers them as a bad request."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tracker.cli import cli
from tracker.cli import history as cli_history
from tracker.cli import tco as cli_tco
from tracker.web import api

NOT_NUMBERS = ["nan", "NaN", "inf", "-inf", "infinity", "", "ten"]
# (command and the options it needs, the option, the bad values beyond NOT_NUMBERS)
BAD = [
    (["tco", "--gpu", "A100"], "--gpus", ["0", "-1", "100001", "99999999999999999999", "1.5"]),
    (["tco", "--gpu", "A100"], "--months", ["0", "121", "99999999999", "2.5"]),
    (["tco", "--gpu", "A100"], "--utilization", ["0", "-0.1", "1.01", "1e308"]),
    (["tco", "--gpu", "A100"], "--memory", ["0", "-80", "10001", "1e308"]),
    (["tco", "--gpu", "A100"], "--spot-overhead", ["-1", "100.5", "1e308"]),
    (["tco", "--gpu", "A100"], "--migration-cost", ["-1", "1e13", "1e308"]),
    (["tco", "--gpu", "A100"], "--baseline", ["0", "100001", "99999999999999999999"]),
    (["tco", "--gpu", "A100"], "--limit", ["0", "1000001", "99999999999999999999"]),
    (["history"], "--below", ["-0.01", "1000001", "1e308"]),
    (["history"], "--term", ["0", "121", "99999999999999999999"]),
    (["history"], "--limit", ["0", "1000001", "99999999999999999999"]),
    (["latest"], "--limit", ["0", "1000001", "99999999999999999999", "1e3"]),
]
CASES = [(args, option, value) for args, option, bad in BAD for value in [*NOT_NUMBERS, *bad]]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # Never opened: the options are refused before the store is read.
    return tmp_path_factory.mktemp("ranges") / "prices.duckdb"


@pytest.mark.parametrize(
    ("args", "option", "value"), CASES, ids=[f"{a[0]} {o} {v!r}" for a, o, v in CASES]
)
def test_a_bad_number_is_refused_naming_the_option(
    store: Path, args: list[str], option: str, value: str
) -> None:
    result = CliRunner().invoke(cli, ["--db", str(store), *args, option, value])
    assert result.exit_code == 2, result.output
    assert f"Invalid value for '{option}'" in result.stderr
    assert result.stdout == ""
    assert not store.exists()


@pytest.mark.parametrize(
    ("args", "option", "value"),
    [
        (["tco", "--gpu", "A100"], "--gpus", "100000"),
        (["tco", "--gpu", "A100"], "--months", "120"),
        (["tco", "--gpu", "A100"], "--utilization", "1"),
        (["tco", "--gpu", "A100"], "--utilization", "0.001"),
        (["tco", "--gpu", "A100"], "--spot-overhead", "100"),
        (["tco", "--gpu", "A100"], "--spot-overhead", "advisor"),
        (["tco", "--gpu", "A100"], "--migration-cost", "0"),
        (["history"], "--below", "0"),
        (["history"], "--term", "36"),
        (["latest"], "--limit", " 7 "),
    ],
)
def test_the_ends_of_each_range_are_accepted(args: list[str], option: str, value: str) -> None:
    command = cli.commands[args[0]]
    ctx = command.make_context(args[0], [*args[1:], option, value])
    assert option.lstrip("-").replace("-", "_") in ctx.params  # not refused


def test_the_parsed_values_are_numbers_of_the_right_kind() -> None:
    ctx = cli_tco.tco.make_context(
        "tco", ["--gpu", "A100", "--gpus", "16", "--utilization", "0.5", "--spot-overhead", "25"]
    )
    assert ctx.params["gpus"] == 16 and isinstance(ctx.params["gpus"], int)
    assert ctx.params["utilization"] == 0.5
    assert ctx.params["spot_overhead"] == 25.0


@pytest.mark.parametrize(
    ("command", "name", "value"),
    [
        (cli_tco.tco, "utilization", "nan"),
        (cli_tco.tco, "gpus", "99999999999999999999"),
        (cli_tco.tco, "months", "99999999999"),
        (cli_tco.tco, "spot_overhead", "1e308"),
        (cli_history.history, "below", "nan"),
        (cli_history.history, "limit", "inf"),
    ],
)
def test_the_web_api_refuses_them_as_a_bad_request(command: object, name: str, value: str) -> None:
    query = {name: [value], **({"gpu": ["A100"]} if command is cli_tco.tco else {})}
    with pytest.raises(api.BadRequest, match=f"--{name.replace('_', '-')}"):
        api.options(command, query)  # type: ignore[arg-type]
