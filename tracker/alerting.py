"""Alerts as the CLI (and the daemon) run them: the [alerts] config and the environment turned
into notifiers, then `alerts.run` over the store.

This is the only place the alert secrets are read: the Slack webhook URL and the SMTP login
come from the variables the config names, and go down to the notifiers as arguments. A
configured channel whose secret is missing is not a configuration error (the file is fine):
its alerts stay pending, each run says which variable to set, and they go out once it is set.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import Any, TextIO

from alerts import AlertReport, Notifier, Rule, run
from alerts.console import ConsoleNotifier
from alerts.email import EmailNotifier
from alerts.message import test_event
from alerts.notify import Unavailable
from alerts.settings import AlertSettings, EmailSettings
from alerts.slack import SlackNotifier
from collectors.common import ConfigError
from tracker.config import Config
from tracker.review import chart as review_chart


def channels(
    settings: AlertSettings, env: Mapping[str, str], console: TextIO
) -> dict[str, Notifier]:
    """Every channel a rule may name, ready to send (or Unavailable, saying why)."""
    result: dict[str, Notifier] = {"console": ConsoleNotifier(console)}
    if settings.slack is not None:
        variable = settings.slack.webhook_url_env
        url = env.get(variable)
        result["slack"] = (
            SlackNotifier(url, timeout=settings.slack.timeout)
            if url
            else Unavailable("slack", f"slack: no webhook URL: set {variable}")
        )
    if settings.email is not None:
        result["email"] = _email(settings.email, env)
    return result


def wanted(config: Config) -> bool:
    """Whether a collection should be followed by an alerts run at all."""
    settings = config.alerts
    return bool(settings.rules) or settings.slack is not None or settings.email is not None


def check(
    config: Config,
    env: Mapping[str, str],
    console: TextIO,
    *,
    now: datetime | None = None,
    dry_run: bool = False,
    rules: Sequence[Rule] | None = None,
    store_lock: AbstractContextManager[Any] | None = None,
) -> AlertReport:
    """Evaluate the rules now (the configured ones unless `rules` says otherwise) and deliver
    what is due (dry run: evaluate only)."""
    return run(
        config.store_path,
        config.alerts.rules if rules is None else rules,
        channels(config.alerts, env, console),
        now=now,
        dry_run=dry_run,
        retry=config.alerts.retry,
        store_lock=store_lock,
    )


def send_test(config: Config, env: Mapping[str, str], channel: str, console: TextIO) -> None:
    """Send a test message through `channel`; ConfigError when it is not set up, ChannelError
    when it refused."""
    notifier = channels(config.alerts, env, console).get(channel)
    if notifier is None:
        raise ConfigError(f"--channel {channel}: not configured (add [alerts.{channel}])")
    if isinstance(notifier, Unavailable):
        raise ConfigError(notifier.reason)
    notifier.send([test_event(channel, datetime.now(UTC))])


def _email(email: EmailSettings, env: Mapping[str, str]) -> Notifier:
    username = env.get(email.username_env) or None
    password = env.get(email.password_env) or None
    # Half a login is a setup problem, not a send to retry until the alerts are given up.
    if username and not password:
        return Unavailable(
            "email", f"email: {email.username_env} is set but {email.password_env} is not"
        )
    if password and not username:
        return Unavailable(
            "email", f"email: {email.password_env} is set but {email.username_env} is not"
        )
    # smtplib's AUTH encodes the login as ASCII: anything else would fail every attempt.
    for variable, value in ((email.username_env, username), (email.password_env, password)):
        if value is not None and not value.isascii():
            return Unavailable("email", f"email: {variable} holds non-ASCII characters")
    return EmailNotifier(
        host=email.smtp_host,
        port=email.smtp_port,
        security=email.security,
        sender=email.sender,
        recipients=email.recipients,
        username=username,
        password=password,
        timeout=email.timeout,
        review_images=review_chart.images,  # the review's chart, inline in its email
    )
