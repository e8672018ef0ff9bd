"""`gpu-tracker serve`: how long the dashboard takes to load over loopback on a store of a year
of hourly collections, against the same reads run directly in the same run.

The store comes from `big_store.py`, which ties the offers to the rows (about one offer per
1,000 change-rows). `--rows 361000` is the demo's set of offers (361 current offers, as
`gpu-tracker demo` stores them) with about 1,000 price changes each: more than a year of
hourly collections brings them at realistic rates (some 2 % of offers changing each hour:
176 each), so it is a generous year. The default, 4 million rows and 3,812 offers, is the
stress case: ten times the offers, each changing as often. A page load is what a browser
fetches for the first view: the HTML of the Now panel (every current offer, rendered on the
server: the first data), then the script and the stylesheet, each on a fresh loopback
connection. The baseline, measured just before each load: the reads that page makes, run
directly (`storage.reads.dashboard.offers` on a fresh connection, every row fetched). Also
timed, each against its own direct read: the Health panel, `/api/latest?limit=100`,
`/api/tco?gpu=H100`, a History chart of H100 spot over 30 days and Decide for H100.

The Now page is kept and rebuilt in the background when the store changes
(`tracker.web.cache`), so the page load is timed three ways: as most loads find it (kept);
right after a write (the store's modification time moved, no rebuild done yet: the request
waits for the rebuild at most its bound, then gets the last completed page, marked with its
read time); and the first load once the background rebuild is done. The rebuild itself (from
the write to the page ready: read and render off the request path) is timed too. Figures are
medians over the runs. Target: the page load under 300 ms.

    python bench/bench_web.py [--rows 4000000] [--runs 15] [--store PATH [--reuse]]
"""

from __future__ import annotations

import http.client
import os
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import big_store

from storage.reads import dashboard
from storage.reads.series import SeriesFilters, Window
from storage.reads.tco import Need
from tracker import config as config_mod
from tracker.config.web import WebSettings
from tracker.web.server import Running, start_for

DEFAULT_ROWS = 4_000_000
TARGET_MS = 300.0
PAGE = ("/", "/assets/app.js", "/assets/style.css")


def fetch(running: Running, path: str) -> int:
    host, port = running.address
    connection = http.client.HTTPConnection(str(host), int(port), timeout=120)
    try:
        connection.request("GET", path)
        answer = connection.getresponse()
        body = answer.read()
        if answer.status != 200:
            raise SystemExit(f"{path}: HTTP {answer.status}: {body[:300]!r}")
        return len(body)
    finally:
        connection.close()


def _touch(store: Path) -> None:
    # What a collection's write does to the page cache's view of the store: a new mtime. The
    # stamp is set forward explicitly, so two writes within the file system's resolution
    # still count as two.
    stamp = store.stat().st_mtime_ns + 1_000_000
    os.utime(store, ns=(stamp, stamp))


def _rebuilt(running: Running) -> None:
    # Wait on the state, not the clock: the kept page is current again. A page past its
    # minute is rebuilt only when asked for (the watcher follows the store, not the clock).
    if not running.dashboard.pages.ready("/"):
        fetch(running, "/")
    while not running.dashboard.pages.ready("/"):
        time.sleep(0.005)


def _right_after_a_write(running: Running, store: Path) -> None:
    _touch(store)
    for path in PAGE:
        fetch(running, path)


def _after_the_rebuild(running: Running, store: Path) -> Callable[[], Any]:
    _touch(store)
    _rebuilt(running)
    return lambda: [fetch(running, path) for path in PAGE]


def _ms(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def _once(served: Callable[[], Any]) -> None:
    found = served()
    if callable(found):
        found()


def _ms_of(served: Callable[[], Any]) -> float:
    """The time of `served`; when it returns a callable (its setup done), of that callable."""
    start = time.perf_counter()
    found = served()
    if callable(found):
        start = time.perf_counter()
        found()
    return (time.perf_counter() - start) * 1000


def cases(store: Path, running: Running) -> dict[str, tuple[Callable[[], Any], Callable[[], Any]]]:
    """name -> (the direct read, the request(s)), measured in that order."""
    now = datetime.now(UTC)
    window = Window(now - timedelta(days=30), now)
    h100_spot = SeriesFilters(gpu="H100", kind="spot")
    return {
        "page load: Now HTML + script + stylesheet": (
            lambda: dashboard.offers(store, timeout_s=60),
            lambda: [fetch(running, path) for path in PAGE],
        ),
        "page load right after a write (rebuild running: waited for at most 0.1 s)": (
            lambda: dashboard.offers(store, timeout_s=60),
            lambda: _right_after_a_write(running, store),
        ),
        "page load after a write, once the background rebuild is done": (
            lambda: dashboard.offers(store, timeout_s=60),
            lambda: _after_the_rebuild(running, store),
        ),
        "background rebuild (a write until the page is ready: read + render)": (
            lambda: dashboard.offers(store, timeout_s=60),
            lambda: (_touch(store), _rebuilt(running)),
        ),
        "Health panel": (
            lambda: running.dashboard.site.status(dashboard.health(store, 20, timeout_s=60).runs),
            lambda: fetch(running, "/health"),
        ),
        "/api/latest?limit=100": (
            lambda: dashboard.offers(store, timeout_s=60, limit=100),
            lambda: fetch(running, "/api/latest?limit=100"),
        ),
        "/api/tco?gpu=H100": (
            lambda: dashboard.tco(store, Need(gpu="H100"), timeout_s=60),
            lambda: fetch(running, "/api/tco?gpu=H100"),
        ),
        "History: H100 spot, 30 days (chart + statistics)": (
            lambda: dashboard.statistics(store, h100_spot, window, timeout_s=60),
            lambda: fetch(running, "/history?gpu=H100&kind=spot&since=30d"),
        ),
        "Decide: H100 (chart + tables)": (
            lambda: dashboard.tco(store, Need(gpu="H100"), timeout_s=60),
            lambda: fetch(running, "/decide?gpu=H100"),
        ),
    }


def measure(store: Path, runs: int) -> None:
    config = config_mod.from_dict({"storage": {"path": str(store)}}, source=None)
    running = start_for(config, WebSettings("127.0.0.1", 0), "web.listen")
    try:
        size = fetch(running, "/")  # warm: the first request imports the page's modules
        print(f"Now page: {size:,} bytes of HTML")
        for name, (direct, served) in cases(store, running).items():
            _once(served)
            _rebuilt(running)
            pairs = []
            for _ in range(runs):
                base = _ms(direct)
                pairs.append((base, _ms_of(served)))
                _rebuilt(running)  # each run starts from a current page
            base = statistics.median(p[0] for p in pairs)
            ours = statistics.median(p[1] for p in pairs)
            worst = max(p[1] for p in pairs)
            print(
                f"{name}: {ours:.0f} ms (max {worst:.0f}) against the direct read "
                f"{base:.0f} ms, {ours / base:.2f}x"
            )
            if name.startswith("page load"):
                verdict = "within" if ours < TARGET_MS else "OVER"
                print(f"  target {TARGET_MS:.0f} ms: {verdict}")
    finally:
        running.close()


def main() -> None:
    big_store.bench_main(
        __doc__.splitlines()[0], measure, runs=15, rows=DEFAULT_ROWS, name="bench-web"
    )


if __name__ == "__main__":
    main()
