"""Alert rules evaluated over the stored price history, and their notifiers (Slack, email,
console).

`run` is the whole of it for a caller (the CLI after a collection, the daemon): evaluate the
rules as SQL over the store, record what fired as pending events, send what is due with the
store closed, record the outcome. Configuration comes in as arguments (`parse_settings` for
the `[alerts]` table, notifiers built with their secrets); nothing here reads the environment.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from alerts.delivery import AlertReport, Delivery, run
    from alerts.notify import AlertEvent, ChannelError, Notifier
    from alerts.rules import Rule
    from alerts.settings import AlertSettings, RetryPolicy, parse_settings

# Imported on first use: reading config.toml needs only alerts.settings, and a command that
# never sends (`gpu-tracker sql`) must not pay for the notifiers' HTTP stack at start-up.
_HOMES = {
    "AlertReport": "alerts.delivery",
    "Delivery": "alerts.delivery",
    "run": "alerts.delivery",
    "AlertEvent": "alerts.notify",
    "ChannelError": "alerts.notify",
    "Notifier": "alerts.notify",
    "Rule": "alerts.rules",
    "AlertSettings": "alerts.settings",
    "RetryPolicy": "alerts.settings",
    "parse_settings": "alerts.settings",
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'alerts' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)


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
