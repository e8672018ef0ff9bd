"""Every answer a collection received, kept as received before it is parsed (docs/trust.md).

A collector's `fetch` returns its answers as payloads ({name: the JSON document}); each entry is
kept under its name in the raw folder (`storage.raw`), in the process that fetched: `collect`'s
own, or the daemon's collection child. Where the entry is the very document an HTTP answer was
decoded from (`collectors.http`), its bytes are kept as the server sent them; any other (an
SDK's decoded answer, the AWS offer files' kept rows) as compact UTF-8 JSON. Either way
`json.loads` of the kept bytes is the entry, so the kept answers parse as the fetched ones did.

A run whose parse failed after the fetch answered keeps its answers too (a renamed field is the
answer a bug report needs), and so does a fetch that failed midway (the HTTP answers it had,
named `answer-1`, `answer-2`, ... in the order received): they travel on the exception
(`attach`, `attached`) to the failed run's record.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

from collectors.base import Collector, ParseResult, Payloads
from collectors.http import Heard, listening
from collectors.transfer import with_flat_rates
from storage.raw import Kept, RawStore

log = logging.getLogger("tracker.pipeline")

# The attribute an exception carries its run's kept answers in.
_ON_ERROR = "kept_answers"


def fetch_and_parse(
    collector: Collector, observed_at: datetime, folder: Path | None
) -> tuple[ParseResult, list[Kept] | None]:
    """`collector`'s answers fetched, kept in `folder` (None: not kept) and parsed; the parse
    and what was kept, in order. An error of the parse carries the kept answers (`attached`).

    Each HTTP answer is compressed and written in a thread of its own as it arrives, while the
    next one is awaited and then while the answers are parsed (zlib and hashlib let go of the
    interpreter as they work), so keeping adds little to a collection's time
    (docs/performance.md)."""
    if folder is None:
        parsed = collector.parse(collector.fetch(), observed_at=observed_at)
        return with_flat_rates(collector.name, parsed), None
    raw = RawStore(folder)
    with ThreadPoolExecutor(1, thread_name_prefix=f"keep-{collector.name}") as pool:
        with listening(lambda data: pool.submit(raw.put, "", data)) as heard:
            try:
                payloads = collector.fetch()
            except BaseException as exc:
                begun = heard.all_begun()  # what a fetch that failed midway had read
                named = [(f"answer-{n}", future) for n, future in enumerate(begun, 1)]
                attach(exc, _kept(named, collector.name) if named else None)
                raise
            pending = [
                (name, heard.begun(value) or pool.submit(_put_json, raw, value))
                for name, value in payloads.items()
            ]
        try:
            parsed = collector.parse(payloads, observed_at=observed_at)
        except BaseException as exc:
            attach(exc, _kept(pending, collector.name))
            raise
        return with_flat_rates(collector.name, parsed), _kept(pending, collector.name)


def _kept(pending: list[tuple[str, Future[Kept]]], provider: str) -> list[Kept] | None:
    """The answers kept, named as the run received them; None (and a warning) when they could
    not be: keeping is the history's insurance, never the reason a collection fails."""
    try:
        return [replace(future.result(), name=name) for name, future in pending]
    except (OSError, TypeError, ValueError) as exc:  # a full disk; a value JSON cannot hold
        log.warning("%s: the raw answers could not be kept: %s", provider, exc)
        return None


def keep(folder: Path, heard: Heard, payloads: Payloads, provider: str) -> list[Kept] | None:
    """Each entry of `payloads` kept in `folder` at once, in order (what a benchmark or a test
    keeps of a fetch of its own); None when they could not be."""
    raw = RawStore(folder)
    try:
        return [raw.put(name, answer_bytes(heard, value)) for name, value in payloads.items()]
    except (OSError, TypeError, ValueError) as exc:
        log.warning("%s: the raw answers could not be kept: %s", provider, exc)
        return None


def answer_bytes(heard: Heard, value: Any) -> bytes:
    """The bytes kept for a payload entry: the HTTP answer's own, else its JSON text."""
    exact = heard.bytes_of(value)
    return exact if exact is not None else _json(value)


def _put_json(raw: RawStore, value: Any) -> Kept:
    return raw.put("", _json(value))


def _json(value: Any) -> bytes:
    """A payload entry no HTTP answer here carried (an SDK's decoded answer) as JSON text."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def attach(exc: BaseException, kept: Sequence[Kept] | None) -> None:
    """Let `exc` carry the answers its run kept (nothing when none were)."""
    if kept is not None:
        setattr(exc, _ON_ERROR, list(kept))


def attached(exc: BaseException) -> list[Kept] | None:
    """The answers a failed run kept, carried by its error (None: none)."""
    kept = getattr(exc, _ON_ERROR, None)
    return kept if isinstance(kept, list) else None
