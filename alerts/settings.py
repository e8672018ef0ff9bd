"""The `[alerts]` table of config.toml, validated: channels, retry policy and rules.

Secrets are not here: the Slack and SMTP tables only name the environment variables that hold
them, and `tracker` resolves those. Every error names the key path; an error about a `*_env` key
never repeats its value (it may be the secret itself, pasted where its variable's name goes).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from alerts.rules import Rule, parse_rule
from collectors.common import ConfigError, env_variable_name, no_unknown, parse_duration, text
from storage.reads.gpu_filter import GpuNames

SECURITY = ("starttls", "ssl", "none")
_DEFAULT_PORT = {"starttls": 587, "ssl": 465, "none": 25}
_TOP_KEYS = {"slack", "email", "rules", "retry_base", "retry_max", "max_attempts"}
_SLACK_KEYS = {"webhook_url_env", "timeout"}
_EMAIL_KEYS = {
    "smtp_host",
    "smtp_port",
    "security",
    "username_env",
    "password_env",
    "from",
    "to",
    "timeout",
}
# The channels' keys, for the config's JSON Schema (tracker.config.schema).
CHANNEL_KEYS = {"slack": _SLACK_KEYS, "email": _EMAIL_KEYS}


@dataclass(frozen=True)
class RetryPolicy:
    """A failed send is retried on later runs, each wait twice the last, up to `max_s`; after
    `max_attempts` tries the event is marked 'failed' (its last error kept)."""

    base_s: int = 300
    max_s: int = 6 * 3600
    max_attempts: int = 24

    def delay_s(self, attempts: int) -> int:
        """The wait after the `attempts`-th failed try."""
        return int(min(self.base_s * 2 ** max(attempts - 1, 0), self.max_s))


@dataclass(frozen=True)
class SlackSettings:
    webhook_url_env: str = "SLACK_WEBHOOK_URL"
    timeout: float = 10.0


@dataclass(frozen=True)
class EmailSettings:
    smtp_host: str
    sender: str
    recipients: tuple[str, ...]
    smtp_port: int = 587
    security: str = "starttls"
    username_env: str = "SMTP_USERNAME"
    password_env: str = "SMTP_PASSWORD"
    timeout: float = 30.0


@dataclass(frozen=True)
class AlertSettings:
    slack: SlackSettings | None = None
    email: EmailSettings | None = None
    retry: RetryPolicy = RetryPolicy()
    rules: tuple[Rule, ...] = ()

    @property
    def channels(self) -> tuple[str, ...]:
        """Every channel a rule may name: the configured ones, and the console (always there)."""
        configured = [n for n in ("slack", "email") if getattr(self, n) is not None]
        return (*configured, "console")


def parse_settings(
    raw: Mapping[str, Any],
    *,
    gpu_models: Collection[str] | GpuNames,
    providers: Collection[str],
) -> AlertSettings:
    """The `[alerts]` table; `gpu_models` (the GPU table's names: models and their memory
    variants) and `providers` are the names a filter may use."""
    no_unknown(raw, _TOP_KEYS, "alerts.")
    slack = _slack(_table(raw, "slack")) if "slack" in raw else None
    email = _email(_table(raw, "email")) if "email" in raw else None
    settings = AlertSettings(slack, email, _retry(raw))
    # A rule without `channels` goes to every configured channel; with none, to the console.
    default = tuple(c for c in settings.channels if c != "console") or ("console",)
    rules_raw = raw.get("rules", [])
    if not isinstance(rules_raw, list):
        raise ConfigError(f"alerts.rules: expected [[alerts.rules]] tables, got {rules_raw!r}")
    rules: list[Rule] = []
    for i, rule_raw in enumerate(rules_raw):
        rule = parse_rule(
            rule_raw,
            f"alerts.rules[{i}]",
            channels=settings.channels,
            default_channels=default,
            gpu_models=gpu_models,
            providers=providers,
        )
        if rule.name == _review_rule():  # the periodic review's own events carry this name
            raise ConfigError(f"alerts.rules[{i}].name: {rule.name!r} is reserved for the review")
        for j, other in enumerate(rules):
            if other.name == rule.name:
                raise ConfigError(
                    f"alerts.rules[{i}].name: {rule.name!r} is already the name of "
                    f"alerts.rules[{j}]"
                )
        rules.append(rule)
    return AlertSettings(slack, email, settings.retry, tuple(rules))


def _retry(raw: Mapping[str, Any]) -> RetryPolicy:
    default = RetryPolicy()
    base = _duration(raw, "retry_base")
    cap = _duration(raw, "retry_max")
    attempts = raw.get("max_attempts", default.max_attempts)
    if not isinstance(attempts, int) or isinstance(attempts, bool) or not 1 <= attempts <= 1000:
        raise ConfigError(
            f"alerts.max_attempts: expected a whole number from 1 to 1000, got {attempts!r}"
        )
    policy = RetryPolicy(base or default.base_s, cap or default.max_s, attempts)
    if policy.max_s < policy.base_s:
        raise ConfigError("alerts.retry_max: shorter than alerts.retry_base")
    return policy


def _slack(raw: Mapping[str, Any]) -> SlackSettings:
    no_unknown(raw, _SLACK_KEYS, "alerts.slack.")
    return SlackSettings(
        webhook_url_env=env_variable_name(
            raw.get("webhook_url_env", "SLACK_WEBHOOK_URL"), "alerts.slack.webhook_url_env"
        ),
        timeout=_seconds(raw.get("timeout", 10), "alerts.slack.timeout"),
    )


def _email(raw: Mapping[str, Any]) -> EmailSettings:
    k = "alerts.email."
    no_unknown(raw, _EMAIL_KEYS, k)
    for required in ("smtp_host", "from", "to"):
        if required not in raw:
            raise ConfigError(f"{k}{required}: required in [alerts.email]")
    security = raw.get("security", "starttls")
    if security not in SECURITY:
        raise ConfigError(f"{k}security: expected one of {', '.join(SECURITY)}, got {security!r}")
    port = raw.get("smtp_port", _DEFAULT_PORT[security])
    if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
        raise ConfigError(f"{k}smtp_port: expected a port number, got {port!r}")
    to = raw["to"] if isinstance(raw["to"], list) else [raw["to"]]
    if not to:
        raise ConfigError(f"{k}to: expected at least one address")
    return EmailSettings(
        smtp_host=_host(raw["smtp_host"], k + "smtp_host"),
        sender=_address(raw["from"], k + "from"),
        recipients=tuple(_address(a, f"{k}to[{i}]") for i, a in enumerate(to)),
        smtp_port=port,
        security=security,
        username_env=env_variable_name(
            raw.get("username_env", "SMTP_USERNAME"), k + "username_env"
        ),
        password_env=env_variable_name(
            raw.get("password_env", "SMTP_PASSWORD"), k + "password_env"
        ),
        timeout=_seconds(raw.get("timeout", 30), k + "timeout"),
    )


def _host(value: Any, key: str) -> str:
    """A host name or address: what a resolver would take, not a URL or a sentence."""
    host = text(value, key)
    if len(host) > 253 or any(c.isspace() or not c.isprintable() or c in "/@" for c in host):
        raise ConfigError(f"{key}: {host[:60]!r} is not a host name (like smtp.example.com)")
    return host


def _address(value: Any, key: str) -> str:
    if not isinstance(value, str) or "@" not in value or any(c in value for c in "\r\n,"):
        raise ConfigError(f"{key}: expected one email address, got {value!r}")
    return value


def _duration(raw: Mapping[str, Any], key: str) -> int | None:
    # Beyond 30 days a retry is no longer news worth delivering.
    return parse_duration(raw[key], f"alerts.{key}", most=30 * 86400) if key in raw else None


def _seconds(value: Any, key: str) -> float:
    """A send's timeout: up to 10 minutes (a socket refuses far larger ones with an error)."""
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if not number or not math.isfinite(value) or not 0 < value <= 600:
        raise ConfigError(f"{key}: expected a number of seconds > 0 and <= 600, got {value!r}")
    return float(value)


def _table(raw: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = raw[name]
    if not isinstance(value, Mapping):
        raise ConfigError(f"alerts.{name}: expected a table ([alerts.{name}]), got {value!r}")
    return value


def _review_rule() -> str:
    # The digest brings the review's store access: not needed to read config.toml.
    from alerts.digest import RULE

    return RULE
