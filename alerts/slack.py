"""Slack: one Block Kit message per batch, posted to an incoming webhook.

The webhook URL is the secret: it is never logged, stored or put in an error (see
alerts.notify.Redactor). Retries of connection errors, 429 (honouring Retry-After) and 5xx
answers happen within a send through the shared urllib3 Retry session; when they run out, the
alert stays pending and a Retry-After Slack sent is honoured for the next attempt too. A POST is
never repeated within a send once it may have reached Slack (a read timeout or a connection
dropped after sending): that is left to the next run's retry, the one duplicate window there is.

The session is built here from urllib3's Retry, not borrowed from the collectors: alerts sit
beside them, not above, and a webhook POST wants its own policy anyway (no read retries).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from alerts import digest
from alerts.digest_render import slack_message
from alerts.message import alternatives_table, subject_line
from alerts.notify import AlertEvent, ChannelError, Redactor, redacted_logs
from collectors.common import flat

# Slack allows 50 blocks a message; each alert takes up to three, plus header and footer.
MAX_ALERTS_SHOWN = 14
_FIELD_NAMES = (
    ("value_text", "Value"),
    ("threshold_text", "Threshold"),
    ("where", "Provider / region"),
    ("instance", "Instance"),
)
_RETRY_STATUSES = (429, 500, 502, 503, 504)
# Slack asking for a longer wait than this is left to the next run (its Retry-After is kept
# for it): a send must not hold the alerts run for an hour.
MAX_RETRY_AFTER_S = 60.0
USER_AGENT = "gpu-price-tracker alerts"


class SlackNotifier:
    name = "slack"

    def __init__(
        self,
        webhook_url: str,
        *,
        timeout: float = 10.0,
        max_retries: int = 3,
        backoff_factor: float = 1.0,
    ) -> None:
        self._url = webhook_url
        self._redact = Redactor(webhook_url)
        self.timeout = timeout
        self.session = webhook_session(max_retries=max_retries, backoff_factor=backoff_factor)

    def send(self, events: Sequence[AlertEvent]) -> None:
        with redacted_logs(self._redact):
            try:
                response = self.session.post(self._url, json=message(events), timeout=self.timeout)
            except requests.RequestException as exc:
                # from None: the chained exception's text holds the URL.
                raise ChannelError(
                    f"slack: {type(exc).__name__}: {self._redact(str(exc))}"
                ) from None
        if response.status_code == 200:
            return
        body = flat(self._redact(response.text[:200]))  # an HTML page: one plain line
        raise ChannelError(
            f"slack: HTTP {response.status_code}: {body or response.reason}",
            retry_after_s=_retry_after(response),
        )


def webhook_session(*, max_retries: int, backoff_factor: float) -> requests.Session:
    """A session retrying what cannot have reached Slack: connection errors, 429 (after its
    Retry-After, capped) and 5xx. Webhook posts are not idempotent: an error once the request
    was sent (a read timeout, a dropped connection, a TLS error urllib3 counts as "other") is
    raised at once."""
    retry = _CappedRetry(
        total=max_retries,
        connect=max_retries,
        read=0,
        other=0,
        status=max_retries,
        status_forcelist=_RETRY_STATUSES,
        allowed_methods=frozenset({"POST"}),
        backoff_factor=backoff_factor,
        respect_retry_after_header=True,
        raise_on_status=False,
    )
    session = requests.Session()
    session.mount("https://", HTTPAdapter(max_retries=retry))
    session.mount("http://", HTTPAdapter(max_retries=retry))
    session.headers["User-Agent"] = USER_AGENT
    return session


def message(events: Sequence[AlertEvent]) -> dict[str, Any]:
    """The Block Kit payload: a header, then per alert what crossed, the numbers, where, and a
    plain table of the three best alternatives. A review is its digest instead."""
    if digest.is_review(events):
        return slack_message(events[0].facts)
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": subject_line(events)[:150]}}
    ]
    for event in events[:MAX_ALERTS_SHOWN]:
        blocks.extend(_alert_blocks(event))
    more = len(events) - MAX_ALERTS_SHOWN
    fired = min(e.fired_at for e in events).strftime("%Y-%m-%d %H:%M UTC")
    footer = f"gpu-tracker, fired {fired}"
    if more > 0:
        footer += f"; +{more} more: `gpu-tracker alerts list`"
    blocks.append({"type": "context", "elements": [_mrkdwn(footer)]})
    return {"text": subject_line(events), "blocks": blocks}


def _alert_blocks(event: AlertEvent) -> list[dict[str, Any]]:
    f = event.facts
    section: dict[str, Any] = {
        "type": "section",
        "text": _mrkdwn(f"*{_escape(event.rule)}*: {_escape(f.get('headline') or event.detail)}"),
    }
    fields = [_mrkdwn(f"*{label}*\n{_escape(f[key])}") for key, label in _FIELD_NAMES if f.get(key)]
    if fields:
        section["fields"] = fields
    blocks = [section]
    table = alternatives_table(f)
    if table:
        text = "Best alternatives:\n```" + _escape("\n".join(table)) + "```"
        blocks.append({"type": "section", "text": _mrkdwn(text)})
    blocks.append({"type": "divider"})
    return blocks


def _mrkdwn(text: str) -> dict[str, str]:
    return {"type": "mrkdwn", "text": text[:2900]}


def _escape(text: Any) -> str:
    # The three characters Slack's mrkdwn reserves (links and mentions).
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _retry_after(response: requests.Response) -> float | None:
    value = response.headers.get("Retry-After")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


class _CappedRetry(Retry):
    """Retry whose Retry-After wait is capped (retry_after_max is not in every urllib3 2.x)."""

    def get_retry_after(self, response: Any) -> float | None:
        value = super().get_retry_after(response)
        return None if value is None else min(value, MAX_RETRY_AFTER_S)
