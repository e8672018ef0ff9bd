"""The migrations of the alerts' tables: the event log with its delivery bookkeeping and the
per-rule state (`storage.migrations`; append only).
"""

from __future__ import annotations

# Each migration: (version, name, statements). Append only.
STEPS: list[tuple[int, str, list[str]]] = [
    (
        3,
        "alert events and per-rule state",
        [
            "CREATE SEQUENCE alert_event_ids START 1",
            # One row per alert per channel, written as 'pending' before it is sent: a send
            # that fails stays pending (attempts, next_attempt_at) until it succeeds or runs
            # out of attempts ('failed'). last_error is redacted: never a webhook URL.
            """
            CREATE TABLE alert_event_log (
                event_id BIGINT PRIMARY KEY,
                rule VARCHAR NOT NULL,
                subject VARCHAR NOT NULL,
                fired_at TIMESTAMPTZ NOT NULL,
                value DOUBLE,
                threshold DOUBLE,
                channel VARCHAR NOT NULL,
                status VARCHAR NOT NULL CHECK (status IN ('sent', 'failed', 'pending')),
                detail VARCHAR NOT NULL,
                facts VARCHAR NOT NULL,
                attempts INTEGER NOT NULL DEFAULT 0,
                next_attempt_at TIMESTAMPTZ NOT NULL,
                last_error VARCHAR,
                sent_at TIMESTAMPTZ
            )
            """,
            # Edge triggering: a rule fires for a subject when its condition starts to hold
            # (active false -> true) and re-arms when it clears. last_value: the value it last
            # fired at (a new_low fires again only below it).
            """
            CREATE TABLE alert_state (
                rule VARCHAR NOT NULL,
                subject VARCHAR NOT NULL,
                active BOOLEAN NOT NULL,
                since TIMESTAMPTZ,
                last_fired_at TIMESTAMPTZ,
                last_value DOUBLE,
                PRIMARY KEY (rule, subject)
            )
            """,
        ],
    ),
]
