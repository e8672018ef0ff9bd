"""The README's taste of the output is what the code prints: each command shown before an
output block runs, through the real CLI, on a store the demo kept, and prints that block."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from tracker.cli import cli

README = (Path(__file__).parents[1] / "README.md").read_text()
START = README.index("## A taste\n")
TASTE = README[START : README.index("\n## ", START + 1)]
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```$", flags=re.S | re.M)
STORE = "demo.duckdb"


def commands(script: str) -> list[list[str]]:
    """The gpu-tracker commands of a shell block, each as its arguments."""
    out: list[list[str]] = []
    for token in shlex.split(script):
        if token == "gpu-tracker":
            out.append([])
        elif out:
            out[-1].append(token)
    return out


def examples() -> list[tuple[list[str], str]]:
    """(the last command of a shell block, the output block right after it)."""
    pairs, last = [], None
    for language, body in BLOCK.findall(TASTE):
        if language == "sh":
            last = commands(body)[-1]
        elif language == "text" and last is not None:
            pairs.append((last, body))
            last = None
    return pairs


def lines(text: str) -> list[str]:
    # Tables pad their lines; an editor may trim them.
    return [line.rstrip() for line in text.rstrip("\n").splitlines()]


@pytest.fixture(scope="module")
def kept(demo_kept: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("taste")
    shutil.copy(demo_kept, folder / STORE)
    return folder


def test_the_taste_starts_from_the_demo_store() -> None:
    first = BLOCK.findall(TASTE)[0]
    assert first[0] == "sh" and ["demo", "--keep", STORE] in commands(first[1])
    assert len(examples()) >= 2
    assert any(args[2:3] == ["tco"] for args, _ in examples()), "the taste of tco is missing"


@pytest.mark.parametrize(
    ("args", "shown"), examples(), ids=[" ".join(a[:3]) for a, _ in examples()]
)
def test_the_readme_shows_what_the_command_prints(
    kept: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], shown: str
) -> None:
    monkeypatch.chdir(kept)
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert lines(result.output) == lines(shown)
