"""config.toml's JSON Schema (`gpu-tracker config schema`) and `gpu-tracker config check`: the
schema is a valid draft 2020-12 schema built from the same declarations the reader uses; every
configuration the docs show and the shipped config.toml pass it; mistakes the reader refuses
(an unknown key, a wrong type, a rule without its required keys) fail it too; and the check
command exits 0, or 2 with one line naming the file and the key."""

from __future__ import annotations

import json
import re
import tomllib
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from jsonschema import Draft202012Validator

from collectors import REGISTRY
from collectors.common import ConfigError
from tracker import config as config_mod
from tracker.cli import cli
from tracker.config.schema import config_schema

ROOT = Path(__file__).parents[2]
SCHEMA = config_schema()
VALIDATOR = Draft202012Validator(SCHEMA)


def as_editors_see_it(value: Any) -> Any:
    """A TOML document as an editor's schema check sees it: dates as ISO 8601 strings."""
    if isinstance(value, dict):
        return {k: as_editors_see_it(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_editors_see_it(v) for v in value]
    return value.isoformat() if isinstance(value, date) else value


def errors(document: dict[str, Any]) -> list[str]:
    found = VALIDATOR.iter_errors(as_editors_see_it(document))
    return [f"{list(e.absolute_path)}: {e.message}" for e in found]


def test_the_schema_is_a_valid_draft_2020_12_schema() -> None:
    Draft202012Validator.check_schema(SCHEMA)


def test_every_declared_key_and_every_provider_is_in_the_schema() -> None:
    properties = SCHEMA["properties"]
    for table in config_mod.DECLARED:
        if "<" in table.name:
            continue
        assert set(properties[table.name]["properties"]) == table.names(), table.name
    providers = properties["providers"]["properties"]
    assert set(providers) == set(REGISTRY)
    aws = providers["aws"]["properties"]
    assert {"enabled", "regions", "interval", "aws_access_key_id_env", "offers_endpoint"} <= set(
        aws
    )
    assert aws["interval"]["default"] == REGISTRY["aws"].default_interval


def _doc_examples() -> list[tuple[str, dict[str, Any]]]:
    """Every ```toml block of the docs that the reader accepts as a whole config."""
    found = []
    for page in sorted((ROOT / "docs").glob("*.md")):
        for n, block in enumerate(re.findall(r"```toml\n(.*?)```\n", page.read_text(), re.S)):
            try:
                document = tomllib.loads(block)
                config_mod.from_dict(document, source=None)
            except (tomllib.TOMLDecodeError, ConfigError):
                continue  # a fragment, or an example of a mistake
            found.append((f"{page.name}[{n}]", document))
    return found


def test_every_config_the_docs_show_passes() -> None:
    examples = _doc_examples()
    assert len(examples) >= 10
    for name, document in examples:
        assert errors(document) == [], name


def test_the_shipped_config_with_every_example_uncommented_passes() -> None:
    shipped = (ROOT / "config.toml").read_text()
    assert errors(tomllib.loads(shipped)) == []
    # Each commented table ("# [metrics]" and the lines under it) as a user would enable it.
    blocks = re.findall(r"^# (\[\[?[a-z_.]+\]\]?)\n((?:# .*\n|#\n)*)", shipped, flags=re.M)
    assert len(blocks) >= 8
    for header, body in blocks:
        text = header + "\n" + "\n".join(line[2:] for line in body.splitlines())
        try:
            document = tomllib.loads(text)
            config_mod.from_dict(document, source=None)
        except (tomllib.TOMLDecodeError, ConfigError):
            continue  # needs another table's keys (a rule without [alerts] channels, say)
        assert errors(document) == [], header


@pytest.mark.parametrize(
    ("document", "where"),
    [
        ({"storag": {}}, []),
        ({"daemon": {"jitter": 5}}, ["daemon", "jitter"]),
        ({"providers": {"aws": {"enabled": "yes"}}}, ["providers", "aws", "enabled"]),
        ({"providers": {"aws": {"regoins": ["us-east-1"]}}}, ["providers", "aws"]),
        ({"providers": {"nosuchcloud": {}}}, ["providers"]),
        ({"providers": {"azure": {"endpoint": "ftp://x"}}}, ["providers", "azure", "endpoint"]),
        ({"web": {"listen": 8080}}, ["web", "listen"]),
        ({"fx": {"USD": {"units_per_usd": 1, "date": "2026-01-01"}}}, ["fx"]),
        ({"fx": {"CNY": {"units_per_usd": 7.1}}}, ["fx", "CNY"]),
        (
            {"alerts": {"rules": [{"name": "x", "kind": "spot_price_below", "threshold": 2}]}},
            ["alerts", "rules", 0],
        ),
        ({"alerts": {"rules": [{"name": "x", "kind": "nosuchkind"}]}}, ["alerts", "rules", 0]),
        ({"gpus": {"models": {"B300": {"fp16_tflops": "lots"}}}}, ["gpus", "models", "B300"]),
    ],
)
def test_a_mistake_the_reader_refuses_fails_the_schema_too(
    document: dict[str, Any], where: list[Any]
) -> None:
    with pytest.raises(ConfigError):
        config_mod.from_dict(document, source=None)
    found = list(VALIDATOR.iter_errors(as_editors_see_it(document)))
    assert found, "the schema accepts what the reader refuses"
    assert any(list(e.absolute_path)[: len(where)] == where for e in found), errors(document)


def test_config_schema_prints_the_schema() -> None:
    result = CliRunner().invoke(cli, ["config", "schema"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == json.loads(json.dumps(SCHEMA))


def test_config_check_passes_a_good_file_and_names_the_key_of_a_bad_one(tmp_path: Path) -> None:
    good = tmp_path / "good.toml"
    good.write_text('[providers.aws]\nenabled = false\n[daemon]\njitter = "30s"\n')
    done = CliRunner().invoke(cli, ["config", "check", str(good)])
    assert done.exit_code == 0, done.output
    assert f"{good}: ok" in done.output
    assert "aws" not in done.output.split("enabled:")[1].split(";")[0]
    bad = tmp_path / "bad.toml"
    bad.write_text('[daemon]\njitter = "30s"\n[providers.azure]\ninterval = "often"\n')
    done = CliRunner().invoke(cli, ["config", "check", str(bad)])
    assert done.exit_code == 2
    lines = done.output.strip().splitlines()
    assert len(lines) == 1
    assert str(bad) in lines[0] and "providers.azure.interval" in lines[0]


def test_config_check_takes_the_global_config_option_and_refuses_a_missing_file(
    tmp_path: Path,
) -> None:
    good = tmp_path / "c.toml"
    good.write_text('[raw]\nkeep = "30d"\n')
    done = CliRunner().invoke(cli, ["--config", str(good), "config", "check"])
    assert done.exit_code == 0, done.output
    done = CliRunner().invoke(cli, ["config", "check", str(tmp_path / "none.toml")])
    assert done.exit_code == 2
    assert "none.toml: no such file" in done.output
