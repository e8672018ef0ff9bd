"""The dashboard's server on a loopback port over a store, and a GET that returns the status
and body of any answer, errors included: shared by the web tests."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tracker import config as config_mod
from tracker.config.web import WebSettings
from tracker.web.server import Running, start_for


@contextmanager
def serving(store: Path) -> Iterator[Running]:
    config = config_mod.from_dict({"storage": {"path": str(store)}}, source=None)
    running = start_for(config, WebSettings("127.0.0.1", 0), "web.listen")
    try:
        yield running
    finally:
        running.close()


def get(server: Running, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(server.url.rstrip("/") + path, timeout=60) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, exc.read().decode()
