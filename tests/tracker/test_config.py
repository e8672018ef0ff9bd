"""config.toml: defaults, validation errors that name the key, credentials from the environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from collectors import REGISTRY
from collectors.common import ConfigError, parse_duration
from tracker import config as config_mod

REPO = Path(__file__).resolve().parents[2]


def load_text(tmp_path: Path, text: str) -> config_mod.Config:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return config_mod.load(path)


def test_the_shipped_config_toml_loads() -> None:
    config = config_mod.load(REPO / "config.toml")
    assert config.store_path == REPO / "prices.duckdb"
    assert config.providers["aws"].interval_s == 3600
    assert config.providers["azure"].interval_s == 6 * 3600
    assert set(config.providers) == set(REGISTRY)


def test_defaults_without_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    config = config_mod.load(None)
    assert config.source is None
    assert config.store_path == Path("prices.duckdb")
    assert sorted(p.name for p in config.enabled()) == sorted(REGISTRY)


def test_relative_store_path_is_beside_the_config(tmp_path: Path) -> None:
    config = load_text(tmp_path, '[storage]\npath = "data/p.duckdb"\n')
    assert config.store_path == tmp_path / "data/p.duckdb"


def test_provider_settings(tmp_path: Path) -> None:
    config = load_text(
        tmp_path,
        """
        [providers.aws]
        regions = ["us-east-1", "eu-west-1"]
        interval = "15m"
        instance_types = ["p5.48xlarge"]
        ec2_endpoint = "http://127.0.0.1:4566"
        [providers.azure]
        enabled = false
        """
        + "".join(
            f"[providers.{n}]\nenabled = false\n" for n in REGISTRY if n != "aws" and n != "azure"
        ),
    )
    aws = config.providers["aws"]
    assert aws.regions == ("us-east-1", "eu-west-1")
    assert aws.interval_s == 900
    assert aws.options == {
        "instance_types": ["p5.48xlarge"],
        "ec2_endpoint": "http://127.0.0.1:4566",
    }
    assert [p.name for p in config.enabled()] == ["aws"]
    assert [p.name for p in config.enabled(("azure",))] == ["azure"]  # named: even if disabled


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[storage]\npaht = 'x'\n", "storage.paht: unknown key"),
        ("[providers.aws]\nregion = ['us-east-1']\n", "providers.aws.region: unknown key"),
        ("[providers.oracle]\n", "providers.oracle: unknown key"),
        ("[providers.aws]\ninterval = 'hourly'\n", "providers.aws.interval: 'hourly'"),
        ("[providers.aws]\ninterval = '0m'\n", "providers.aws.interval"),
        ("[providers.azure]\nendpoint = 'prices.azure.com'\n", "providers.azure.endpoint"),
        ("[providers.aws]\nregions = 'us-east-1'\n", "providers.aws.regions: expected a list"),
        ("[providers.aws]\nregions = ['']\n", r"providers.aws.regions\[0\]"),
        ("[providers.aws]\nenabled = 'yes'\n", "providers.aws.enabled"),
        ("[providers.aws]\ninstance_types = 'p5'\n", "providers.aws.instance_types"),
        ("[providers.aws]\ntimeout = -1\n", "providers.aws.timeout"),
        ("providers = 3\n", "providers: expected a table"),
        ("[sorage]\n", "sorage: unknown key"),
        ("[storage\n", "not valid TOML"),
    ],
)
def test_bad_config_names_the_key(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_text(tmp_path, text)


def test_missing_config_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such file"):
        config_mod.load(tmp_path / "missing.toml")


def test_unknown_provider_on_the_command_line() -> None:
    config = config_mod.from_dict({}, source=None)
    with pytest.raises(ConfigError, match="--provider oracle: unknown provider"):
        config.enabled(("oracle",))


def test_intervals() -> None:
    assert [parse_duration(v, "k") for v in ("30s", "15m", "1h", "2d")] == [
        30,
        900,
        3600,
        172800,
    ]


def test_optional_credentials_are_passed_on_when_set() -> None:
    aws = config_mod.from_dict({}, source=None).providers["aws"]
    settings, missing = aws.settings({"AWS_ACCESS_KEY_ID": "AKIA", "AWS_SECRET_ACCESS_KEY": "s"})
    assert missing == []
    assert settings.credentials == {"aws_access_key_id": "AKIA", "aws_secret_access_key": "s"}
    settings, missing = aws.settings({})
    assert (settings.credentials, missing) == ({}, [])
    assert settings.history_window_s == 5400  # one 1 h interval back, plus half of one


def test_a_tencent_endpoint_with_a_path_is_refused_before_any_request(tmp_path: Path) -> None:
    """The SDK posts to the root of the host: a path is refused when the config is read, one
    line naming the key, exit 2, and the endpoint never asked."""
    import socket

    from click.testing import CliRunner

    from tracker.cli import cli

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.setblocking(False)
        url = f"http://127.0.0.1:{server.getsockname()[1]}/v2"
        config = tmp_path / "config.toml"
        config.write_text(f'[providers.tencent]\nendpoint = "{url}"\n')
        env = {"TENCENTCLOUD_SECRET_ID": "id", "TENCENTCLOUD_SECRET_KEY": "key"}
        result = CliRunner().invoke(
            cli, ["--config", str(config), "collect", "--provider", "tencent"], env=env
        )
        assert result.exit_code == 2
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and "providers.tencent.endpoint" in lines[0]
        with pytest.raises(BlockingIOError):  # nothing connected
            server.accept()
    with pytest.raises(ConfigError, match=r"providers\.tencent\.endpoint: .*root"):
        config_mod.load(config)
    config.write_text('[providers.tencent]\nendpoint = "https://cvm.tencentcloudapi.com/"\n')
    assert config_mod.load(config).providers["tencent"].endpoint
