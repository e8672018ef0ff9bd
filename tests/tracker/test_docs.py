"""Every command and option a user can type, and every provider, is documented: the commands
page names each option, the providers page has a row per provider, and the README's commands
table lists every command."""

from __future__ import annotations

from pathlib import Path

import click
import pytest

from collectors import REGISTRY
from tracker.cli import cli

ROOT = Path(__file__).parents[2]
README = (ROOT / "README.md").read_text()
COMMANDS = (ROOT / "docs" / "commands.md").read_text()
PROVIDERS = (ROOT / "docs" / "providers.md").read_text()
CONFIG = (ROOT / "config.toml").read_text()


def _commands() -> list[tuple[str, click.Command]]:
    assert isinstance(cli, click.Group)
    return sorted(cli.commands.items())


def _readme_table_rows() -> list[str]:
    start = README.index("## Commands\n")
    section = README[start : README.index("\n## ", start + 1)]
    return [line for line in section.splitlines() if line.startswith("| ")]


@pytest.mark.parametrize(("name", "command"), _commands())
def test_command_is_documented(name: str, command: click.Command) -> None:
    assert f"gpu-tracker {name}" in COMMANDS
    for param in command.params:
        if isinstance(param, click.Option):
            assert any(opt in COMMANDS for opt in param.opts), f"{name} {param.opts}"


@pytest.mark.parametrize(("name", "command"), _commands())
def test_the_readme_commands_table_lists_the_command(name: str, command: click.Command) -> None:
    rows = [row for row in _readme_table_rows() if f"`gpu-tracker {name}`" in row]
    assert rows, f"the README's commands table lacks gpu-tracker {name}"
    assert "(docs/commands.md#" in rows[0], f"gpu-tracker {name}: no link to its page"


def test_global_options_are_documented() -> None:
    for param in cli.params:
        assert any(opt in COMMANDS for opt in param.opts), param.opts


@pytest.mark.parametrize("provider", sorted(REGISTRY))
def test_every_provider_has_a_docs_row_and_a_config_section(provider: str) -> None:
    assert f"\n| `{provider}` |" in PROVIDERS, f"docs/providers.md lacks a row for {provider}"
    assert f"[providers.{provider}]" in CONFIG, f"config.toml lacks [providers.{provider}]"
    for variable in REGISTRY[provider].credential_env.values():
        assert variable in PROVIDERS, f"docs/providers.md does not name {provider}'s {variable}"
