"""The [alerts] table: what it means when valid, and errors that name the key when not."""

from __future__ import annotations

import tomllib
from decimal import Decimal

import pytest

from alerts.rules import Filters
from alerts.settings import AlertSettings, EmailSettings, RetryPolicy, SlackSettings, parse_settings
from collectors.common import ConfigError, parse_duration
from storage.reads.gpu_filter import GpuChoice

MODELS = ["H100", "A100", "L40S"]
PROVIDERS = ["aws", "azure", "lambdalabs"]


def parse(text: str) -> AlertSettings:
    return parse_settings(
        tomllib.loads(text).get("alerts", {}), gpu_models=MODELS, providers=PROVIDERS
    )


def test_a_full_table() -> None:
    settings = parse(
        """
        [alerts]
        retry_base = "1m"
        max_attempts = 10
        [alerts.slack]
        [alerts.email]
        smtp_host = "smtp.example.com"
        security = "ssl"
        from = "gpu-tracker@example.com"
        to = ["ops@example.com"]
        [[alerts.rules]]
        name = "cheap-h100-spot"
        kind = "spot_price_below"
        threshold = 2.35
        currency = "USD"
        gpu_model = "h100"
        provider = ["aws", "azure"]
        hysteresis = 0.1
        cooldown = "12h"
        [[alerts.rules]]
        name = "long-rental"
        kind = "reserved_discount_below"
        threshold = 30
        term_months = [12, 36]
        payment_option = "all_upfront"
        channels = ["email"]
        """
    )
    assert settings.slack == SlackSettings(webhook_url_env="SLACK_WEBHOOK_URL", timeout=10.0)
    assert settings.email == EmailSettings(
        smtp_host="smtp.example.com",
        sender="gpu-tracker@example.com",
        recipients=("ops@example.com",),
        smtp_port=465,  # the default for "ssl"
        security="ssl",
    )
    assert settings.retry == RetryPolicy(base_s=60, max_s=6 * 3600, max_attempts=10)
    cheap, long_rental = settings.rules
    assert cheap.threshold == Decimal("2.35")  # the number written, not its binary neighbour
    assert cheap.filters == Filters(gpu_model=(GpuChoice("H100"),), provider=("aws", "azure"))
    assert (cheap.hysteresis, cheap.cooldown_s, cheap.per) == (Decimal("0.1"), 43200, "gpu")
    assert cheap.channels == ("slack", "email")  # default: every configured channel
    assert long_rental.filters.term_months == (12, 36)
    assert long_rental.channels == ("email",)


def test_without_channels_rules_go_to_the_console() -> None:
    settings = parse('[[alerts.rules]]\nname = "s"\nkind = "stale_data"\nwindow = "6h"\n')
    assert settings.rules[0].channels == ("console",)
    assert settings.rules[0].window_s == 6 * 3600


RULE = 'name = "r"\nkind = "spot_price_below"\nthreshold = 2.5\ncurrency = "USD"\n'


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[alerts]\nslak = {}", r"alerts.slak: unknown key"),
        ("[alerts.slack]\nwebhook_url = 'https://hooks.slack.com/x'", r"alerts.slack.webhook_url:"),
        ("[alerts.email]\nsmtp_host = 'h'\nfrom = 'a@b'", r"alerts.email.to: required"),
        ("[alerts.email]\nsmtp_host='h'\nfrom='a@b'\nto=['x']", r"alerts.email.to\[0\]"),
        ("[alerts.email]\nsmtp_host='h'\nfrom='a@b'\nto=[]", r"alerts.email.to: expected at"),
        ("[alerts.email]\nsmtp_host='h'\nfrom='a@b'\nto='c@d'\nsecurity='tls'", "security"),
        ("[alerts.email]\nsmtp_host='h'\nfrom='a@b'\nto='c@d'\nsmtp_port=0", "smtp_port"),
        ("[alerts]\nmax_attempts = 0", r"alerts.max_attempts"),
        ("[alerts]\nretry_base = '1h'\nretry_max = '5m'", r"alerts.retry_max: shorter"),
        ("[alerts]\nrules = 3", r"alerts.rules: expected"),
        (
            "[[alerts.rules]]\nname = 'r'\nkind = 'cheap'",
            r"alerts.rules\[0\].kind: expected one of",
        ),
        (
            "[[alerts.rules]]\n" + RULE.replace("threshold = 2.5\n", ""),
            r"\[0\].threshold: required",
        ),
        ("[[alerts.rules]]\n" + RULE.replace("2.5", "'2.5'"), r"alerts.rules\[0\].threshold"),
        (
            "[[alerts.rules]]\n" + RULE.replace("2.5", "0"),
            r"\[0\].threshold: expected a number > 0",
        ),
        ("[[alerts.rules]]\n" + RULE.replace("USD", "usd"), r"alerts.rules\[0\].currency"),
        ("[[alerts.rules]]\n" + RULE + "gpu_model = 'H110'", r"\[0\].gpu_model: unknown GPU model"),
        ("[[alerts.rules]]\n" + RULE + "provider = 'oracle'", r"\[0\].provider: unknown provider"),
        ("[[alerts.rules]]\n" + RULE + "region = ['a', 3]", r"alerts.rules\[0\].region\[1\]"),
        ("[[alerts.rules]]\n" + RULE + "per = 'node'", r"alerts.rules\[0\].per"),
        ("[[alerts.rules]]\n" + RULE + "window = '7d'", r"\[0\].window: unknown key for kind"),
        ("[[alerts.rules]]\n" + RULE + "price_kind = 'spot'", r"\[0\].price_kind: unknown key"),
        ("[[alerts.rules]]\n" + RULE + "cooldown = 'daily'", r"alerts.rules\[0\].cooldown"),
        ("[[alerts.rules]]\n" + RULE + "hysteresis = -1", r"alerts.rules\[0\].hysteresis"),
        ("[[alerts.rules]]\n" + RULE + "channels = ['slack']", r"\[0\].channels\[0\]: 'slack' is"),
        ("[[alerts.rules]]\n" + RULE + "channels = []", r"alerts.rules\[0\].channels"),
        ("[[alerts.rules]]\n" + RULE + "[[alerts.rules]]\n" + RULE, r"\[1\].name: 'r' is already"),
        (
            "[[alerts.rules]]\nname='d'\nkind='spot_discount_above'\nthreshold=100",
            r"alerts.rules\[0\].threshold: a discount is a percent under 100",
        ),
        (
            "[[alerts.rules]]\nname='c'\nkind='price_change'\nthreshold=10\nwindow='1w'",
            r"alerts.rules\[0\].window: '1w' is not a duration",
        ),
        (
            "[[alerts.rules]]\nname='c'\nkind='price_change'\nthreshold=10\nwindow='7d'\n"
            "direction='sideways'",
            r"alerts.rules\[0\].direction",
        ),
        (
            "[[alerts.rules]]\nname='r'\nkind='reserved_discount_above'\nthreshold=10\n"
            "term_months=0",
            r"alerts.rules\[0\].term_months: expected months > 0",
        ),
        (
            "[[alerts.rules]]\nname='r'\nkind='reserved_discount_above'\nthreshold=10\n"
            "payment_option='some_upfront'",
            r"alerts.rules\[0\].payment_option",
        ),
        ("[[alerts.rules]]\nname='l'\nkind='new_low'\nwindow='7d'", r"\[0\].currency: required"),
        ("[[alerts.rules]]\nname='s'\nkind='stale_data'\nwindow='6h'\nthreshold=1", "threshold"),
        # TOML's nan compares false with everything: such a rule would never fire.
        ("[[alerts.rules]]\n" + RULE.replace("2.5", "nan"), r"\[0\].threshold: expected a finite"),
        ("[[alerts.rules]]\n" + RULE.replace("2.5", "inf"), r"\[0\].threshold: expected a finite"),
        ("[[alerts.rules]]\n" + RULE + "hysteresis = nan", r"\[0\].hysteresis: expected a finite"),
        ("[[alerts.rules]]\n" + RULE + "hysteresis = inf", r"\[0\].hysteresis: expected a finite"),
        ("[alerts.slack]\ntimeout = inf", r"alerts.slack.timeout: expected a number of seconds"),
        ("[alerts.email]\nsmtp_host='h'\nfrom='a@b'\nto='c@d'\ntimeout=nan", "email.timeout"),
        ("[alerts.slack]\nwebhook_url_env = ''", r"alerts.slack.webhook_url_env: expected the"),
        ("[alerts.slack]\nwebhook_url_env = 3", r"alerts.slack.webhook_url_env: expected the"),
    ],
)
def test_bad_values_name_the_key(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse(text)


@pytest.mark.parametrize(("text", "seconds"), [("30m", 1800), ("24h", 86400), ("7d", 604800)])
def test_durations(text: str, seconds: int) -> None:
    assert parse_duration(text, "k") == seconds


def test_retry_policy_doubles_up_to_its_cap() -> None:
    policy = RetryPolicy(base_s=300, max_s=3600, max_attempts=24)
    assert [policy.delay_s(n) for n in range(1, 7)] == [300, 600, 1200, 2400, 3600, 3600]


@pytest.mark.parametrize(
    ("table", "key", "secret"),
    [
        ("slack", "webhook_url_env", "https://hooks.slack.com/services/T0001/B0002/Pa5t3dT0k3n"),
        ("email", "password_env", "Pa5t3d pa55word!"),
        ("email", "username_env", "alerts@example.com"),
        ("email", "password_env", "9PASTED"),
    ],
)
def test_a_secret_pasted_for_a_variable_name_is_refused_without_repeating_it(
    table: str, key: str, secret: str
) -> None:
    email = {"smtp_host": "h", "from": "a@example.com", "to": "b@example.com"}
    raw = {table: {**(email if table == "email" else {}), key: secret}}
    with pytest.raises(ConfigError) as caught:
        parse_settings(raw, gpu_models=MODELS, providers=PROVIDERS)
    assert str(caught.value).startswith(f"alerts.{table}.{key}: expected the NAME of an env")
    assert secret not in str(caught.value)


def test_variable_names_as_the_ecosystem_writes_them() -> None:
    raw = {"slack": {"webhook_url_env": "_TEAM_HOOK_2"}}
    settings = parse_settings(raw, gpu_models=MODELS, providers=PROVIDERS)
    assert settings.slack == SlackSettings(webhook_url_env="_TEAM_HOOK_2")
