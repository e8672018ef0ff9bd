"""The docs' examples are real: the SQL reference (docs/sql.md) documents every view a fresh
store offers and every column of each, in that view's own section, and the configuration
examples load as they are shown."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

from click.testing import CliRunner

from storage.store import Store
from tracker import config as config_mod
from tracker.cli import cli

DOCS = Path(__file__).parents[1] / "docs"
REFERENCE = (DOCS / "sql.md").read_text()
COLUMNS = """SELECT c.table_name AS view, c.column_name AS col
             FROM information_schema.columns c JOIN duckdb_views() v ON v.view_name = c.table_name
             WHERE NOT v.internal ORDER BY view, c.ordinal_position"""


def documented() -> dict[str, set[str]]:
    """Per `## view` section, the columns its table lists (first cell of each row)."""
    sections = re.split(r"^## ", REFERENCE, flags=re.M)[1:]
    out = {}
    for section in sections:
        title, _, body = section.partition("\n")
        out[title.strip()] = set(re.findall(r"^\| `(\w+)` \|", body, flags=re.M))
    return out


def test_every_view_and_column_is_in_the_reference(tmp_path: Path) -> None:
    Store(tmp_path / "prices.duckdb").migrate()
    config = tmp_path / "config.toml"
    config.write_text('[storage]\npath = "prices.duckdb"\n')
    result = CliRunner().invoke(cli, ["--config", str(config), "sql", COLUMNS, "--format", "json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    views = {row["view"] for row in rows}
    assert {"prices", "latest_prices", "collection_runs", "alert_events"} <= views
    docs = documented()
    missing = []
    for row in rows:
        view, column = row["view"], row["col"]
        # latest_prices documents only what it adds to prices.
        known = docs.get(view, set()) | (docs["prices"] if view == "latest_prices" else set())
        if column not in known:
            missing.append(f"{view}.{column}")
    assert not missing, f"docs/sql.md does not document {missing}"


def test_the_configuration_examples_load() -> None:
    blocks = re.findall(r"```toml\n(.*?)```\n", (DOCS / "configuration.md").read_text(), re.S)
    assert len(blocks) >= 2
    for block in blocks:
        config_mod.from_dict(tomllib.loads(block), source=None)
