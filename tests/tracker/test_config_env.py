"""Credential keys of config.toml name environment variables; a secret pasted there instead is
refused without being repeated anywhere."""

from __future__ import annotations

from pathlib import Path

import pytest

from collectors.common import ConfigError
from tracker import config as config_mod

SECRET = "sk-live-0123456789abcdef"


@pytest.mark.parametrize(
    ("section", "key"),
    [("lambdalabs", "api_key_env"), ("gcp", "api_key_env"), ("aws", "aws_secret_access_key_env")],
)
def test_a_pasted_secret_is_refused_and_not_repeated(
    tmp_path: Path, section: str, key: str
) -> None:
    path = tmp_path / "config.toml"
    path.write_text(f'[providers.{section}]\n{key} = "{SECRET}"\n')
    with pytest.raises(ConfigError) as err:
        config_mod.load(path)
    message = str(err.value)
    assert message.startswith(f"{path}: providers.{section}.{key}: expected the NAME")
    assert SECRET not in message


def test_a_variable_name_is_taken(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[providers.lambdalabs]\napi_key_env = "TEAM_LAMBDA_KEY"\n')
    provider = config_mod.load(path).providers["lambdalabs"]
    settings, missing = provider.settings({"TEAM_LAMBDA_KEY": "k"})
    assert settings.credentials == {"api_key": "k"} and missing == []


@pytest.mark.parametrize(
    "pasted",
    [
        "dop_v1_" + "0" * 64,  # a DigitalOcean token is a valid identifier
        "AKIAIOSFODNN7EXAMPLE",  # AWS key IDs too (AWS's documented example)
        "AKIDz8krbsJ5yKBZQpn74WFkmLPx3EXAMPLE",  # Tencent SecretId
        "LTAI5tDemoKeyId00000000",  # Alibaba AccessKey ID
        "lower_case_name",  # environment names are upper case
    ],
)
def test_key_lookalikes_are_not_names(tmp_path: Path, pasted: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text(f'[providers.paperspace]\ntoken_env = "{pasted}"\n')
    with pytest.raises(ConfigError) as err:
        config_mod.load(path)
    assert pasted not in str(err.value)
