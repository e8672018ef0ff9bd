"""Every command and option a user can type, and every provider, is documented."""

from __future__ import annotations

from pathlib import Path

import click
import pytest

from collectors import REGISTRY
from tracker.cli import cli

README = (Path(__file__).parents[2] / "README.md").read_text()
CONFIG = (Path(__file__).parents[2] / "config.toml").read_text()


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


@pytest.mark.parametrize("provider", sorted(REGISTRY))
def test_every_provider_has_a_readme_row_and_a_config_section(provider: str) -> None:
    assert f"\n| `{provider}` |" in README, f"README provider table lacks {provider}"
    assert f"[providers.{provider}]" in CONFIG, f"config.toml lacks [providers.{provider}]"
    for variable in REGISTRY[provider].credential_env.values():
        assert variable in README, f"README does not name {provider}'s {variable}"
