"""`gpu-tracker mcp` driven by the MCP SDK's own client over stdio, as an assistant runs it: a
real subprocess over a copy of the demo's store. Each tool answers exactly what its command
prints with `--format json`, refuses what the command refuses in the command's words, and the
tools list carries schemas built from the commands' options."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tracker.cli import cli

ROOT = Path(__file__).parents[2]
WINDOW = ["--since", "2026-07-01", "--until", "2026-11-01"]


@pytest.fixture(scope="module")
def config(demo_kept: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("mcp")
    shutil.copy(demo_kept, folder / "prices.duckdb")
    path = folder / "config.toml"
    path.write_text('[storage]\npath = "prices.duckdb"\n')
    return path


def _server(config: Path) -> StdioServerParameters:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return StdioServerParameters(
        command=sys.executable, args=["-m", "tracker", "--config", str(config), "mcp"], env=env
    )


def session(config: Path, calls: list[tuple[str, dict[str, Any]]]) -> tuple[Any, list[Any]]:
    """The tools listed, and each call's result, over one stdio session."""

    async def run() -> tuple[Any, list[Any]]:
        async with Client(_server(config)) as client:
            listed = await client.list_tools()
            return listed, [await client.call_tool(name, args) for name, args in calls]

    return anyio.run(run)


def command_json(config: Path, *args: str) -> Any:
    done = CliRunner().invoke(cli, ["--config", str(config), *args, "--format", "json"])
    assert done.exit_code == 0, done.output
    return json.loads(done.stdout)


def test_each_tool_answers_its_commands_json_and_refuses_in_its_words(config: Path) -> None:
    calls = [
        ("latest", {"gpu": "H100", "usd": True, "limit": 5}),
        ("history", {"gpu": "A100", "kind": "spot", "since": "2026-07-01", "until": "2026-11-01"}),
        ("tco", {"gpu": "A100", "gpus": 8, "months": 12}),
        ("gpus", {}),
        ("index", {"gpu": "H100", "kind": "on_demand", "since": "2026-05-01"}),
        (
            "sql",
            {
                "query": "SELECT provider, count(*) AS offers FROM latest_prices "
                "GROUP BY provider ORDER BY provider"
            },
        ),
        ("latest", {"gpu": "H1000"}),
        ("latest", {"limit": 0}),
        ("sql", {"query": "DROP VIEW prices"}),
        ("nosuchtool", {}),
    ]
    listed, results = session(config, calls)
    names = {tool.name for tool in listed.tools}
    assert names == {"latest", "history", "tco", "index", "gpus", "sql"}
    latest_tool = next(t for t in listed.tools if t.name == "latest")
    properties = latest_tool.input_schema["properties"]
    assert properties["usd"]["type"] == "boolean"
    assert properties["limit"] == {**properties["limit"], "type": "integer", "minimum": 1}
    assert "aws" in properties["provider"]["enum"]
    assert "format" not in properties and "chart" not in properties
    assert latest_tool.annotations.read_only_hint is True

    expected = [
        command_json(config, "latest", "--gpu", "H100", "--usd", "--limit", "5"),
        command_json(config, "history", "--gpu", "A100", "--kind", "spot", *WINDOW),
        command_json(config, "tco", "--gpu", "A100", "--gpus", "8", "--months", "12"),
        command_json(config, "gpus"),
        command_json(
            config, "index", "--gpu", "H100", "--kind", "on-demand", "--since", "2026-05-01"
        ),
    ]
    for result, document in zip(results[:5], expected, strict=True):
        assert not result.is_error, result.content
        assert result.structured_content == {"rows": document}
        assert json.loads(result.content[0].text) == document
    assert expected[0] and expected[1] and expected[2] and expected[4]
    index_tool = next(t for t in listed.tools if t.name == "index")
    assert index_tool.input_schema["properties"]["kind"]["enum"] == ["on_demand", "spot"]

    counts = results[5].structured_content["rows"]
    assert {row["provider"] for row in counts} >= {"aws", "azure", "lambdalabs"}
    assert all(row["offers"] > 0 for row in counts)

    for result, words in zip(
        results[6:], ["H1000", "limit", "read-only", "unknown tool"], strict=True
    ):
        assert result.is_error
        assert words in result.content[0].text, result.content[0].text
