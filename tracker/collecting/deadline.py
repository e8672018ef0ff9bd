"""The overall deadline of one provider's collection, whatever library does its I/O.

`timeout` bounds each socket read, so a server that trickles a byte every few seconds never
trips it and keeps a collection running for hours (cron-driven runs then pile up). The SDKs
(boto3, Tencent's, Alibaba's Tea, google-api-core) each have their own notion of a timeout and
none of an overall one, so the deadline is kept here, outside them: in `collect` the fetch and
parse run in a thread of their own that is given up at the deadline (a daemon thread: it ends
with the process, and nothing it still does reaches the store, which only the caller writes);
in the daemon the collection's child process is killed at it (`tracker.collecting.isolation`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from collectors.common import CollectorError, duration_words

T = TypeVar("T")


class DeadlinePassed(CollectorError):
    """The provider's collection outlasted `[providers.<name>] deadline` and was given up."""

    def __init__(self, provider: str, seconds: float) -> None:
        words = duration_words(round(seconds)) or f"{seconds:g}s"
        super().__init__(
            provider,
            f"deadline of {words} passed; the collection was stopped "
            f"(providers.{provider}.deadline)",
        )


def within(provider: str, seconds: float | None, work: Callable[[], T]) -> T:
    """`work()`'s result, or DeadlinePassed when it runs longer than `seconds` (None: no
    deadline). An exception of `work` is raised here as it was."""
    if seconds is None:
        return work()
    result: list[T] = []
    failure: list[BaseException] = []
    done = threading.Event()

    def run() -> None:
        try:
            result.append(work())
        except BaseException as exc:  # handed to the caller, which decides what it means
            failure.append(exc)
        finally:
            done.set()

    threading.Thread(target=run, name=f"collect-{provider}", daemon=True).start()
    if not done.wait(seconds):
        raise DeadlinePassed(provider, seconds)
    if failure:
        raise failure[0]
    return result[0]
