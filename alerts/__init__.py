"""Alert rules evaluated over the stored price history, and their notifiers (Slack, email,
console).

`run` is the whole of it for a caller (the CLI after a collection, the daemon): evaluate the
rules as SQL over the store, record what fired as pending events, send what is due with the
store closed, record the outcome. Configuration comes in as arguments (`parse_settings` for
the `[alerts]` table, notifiers built with their secrets); nothing here reads the environment.
"""

from alerts.delivery import AlertReport, Delivery, run
from alerts.notify import AlertEvent, ChannelError, Notifier
from alerts.rules import Rule
from alerts.settings import AlertSettings, RetryPolicy, parse_settings

__all__ = [
    "AlertEvent",
    "AlertReport",
    "AlertSettings",
    "ChannelError",
    "Delivery",
    "Notifier",
    "RetryPolicy",
    "Rule",
    "parse_settings",
    "run",
]
