"""The console channel: alerts written as plain text to a stream (a terminal, a log file).

For dry runs and for setups without Slack or email; it always accepts, so a rule routed here
is never left pending.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TextIO

from alerts import digest
from alerts.message import plain_text, subject_line
from alerts.notify import AlertEvent


class ConsoleNotifier:
    name = "console"

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def send(self, events: Sequence[AlertEvent]) -> None:
        if digest.is_review(events):
            self.stream.write(f"== {digest.plain_text(events[0].facts)}")
            self.stream.flush()
            return
        self.stream.write(f"== {subject_line(events)}\n{plain_text(events)}")
        self.stream.flush()
