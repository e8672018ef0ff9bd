"""Every command and option a user can type is documented in the README."""

from __future__ import annotations

from pathlib import Path

import click
import pytest

from tracker.cli import cli

README = (Path(__file__).parents[2] / "README.md").read_text()


def _commands() -> list[tuple[str, click.Command]]:
    assert isinstance(cli, click.Group)
    return sorted(cli.commands.items())


@pytest.mark.parametrize(("name", "command"), _commands())
def test_command_is_documented(name: str, command: click.Command) -> None:
    assert f"gpu-tracker {name}" in README
    for param in command.params:
        if isinstance(param, click.Option):
            assert any(opt in README for opt in param.opts), f"{name} {param.opts}"


def test_global_options_are_documented() -> None:
    for param in cli.params:
        assert any(opt in README for opt in param.opts), param.opts
