"""The dashboard under eight concurrent clients on a year's store, against one client in the
same run, while a writer stores a collection every second: page and API latencies (p50, p99),
answers lost (must be 0), and how long each write waited for its turn.

The store is `big_store.py`'s generous year by default (`--rows 361000`: the demo's 361 offers
with about 1,000 price changes each). A request is one of a mix a browser and a script make:
the Now page (HTML, script, stylesheet: kept and rebuilt in the background on each write),
the Health panel, `/api/latest?limit=100`, `/api/tco?gpu=H100` and a History chart of H100
spot over 30 days, each on a fresh loopback connection. The baseline is the same mix read by
one client, measured first in the same run with the same writer; the figure is the 8-client
percentile against it. A writer in the same process, as the daemon with `[web] listen` is:
each write waits at the store's gate for the page reads in flight, then writes alone.

    python bench/bench_web_load.py [--rows 361000] [--runs 200] [--store PATH [--reuse]]
"""

from __future__ import annotations

import http.client
import statistics
import sys
import threading
import time
from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import big_store

from collectors.base import PriceRecord
from storage.store import Store
from tracker import config as config_mod
from tracker.config.web import WebSettings
from tracker.web.server import Running, start_for

CLIENTS = 8
MIX = (
    "/",
    "/assets/app.js",
    "/assets/style.css",
    "/health",
    "/api/latest?limit=100",
    "/api/tco?gpu=H100",
    "/history?gpu=H100&kind=spot&since=30d",
)
WRITE_EVERY_S = 1.0
OFFER = PriceRecord(
    provider="benchwriter",
    region="us-east-1",
    zone=None,
    instance_type="gpu_8x_h100_sxm5",
    price_kind="on_demand",
    term_months=None,
    payment_option=None,
    offering_class=None,
    currency="USD",
    price_per_hour=Decimal("31.92"),
    upfront_total=None,
    gpu_model="H100",
    gpu_count=8,
    gpu_memory_gib=80,
    available=True,
)


def fetch(port: int, path: str) -> str | None:
    """None for a good answer, else what was wrong."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        connection.request("GET", path)
        answer = connection.getresponse()
        body = answer.read()
    except OSError as exc:
        return f"{path}: {exc!r}"
    finally:
        connection.close()
    return None if answer.status == 200 and body else f"{path}: HTTP {answer.status}"


class Writer(threading.Thread):
    """Stores a one-offer collection every second (a new price each time) and notes how long
    each write took, its wait for the readers in flight included."""

    def __init__(self, store: Path) -> None:
        super().__init__(daemon=True)
        self.store = Store(store, lock_wait_s=120)
        self.stop = threading.Event()
        self.took: list[float] = []
        self.failed: list[str] = []

    def run(self) -> None:
        n = 0
        while not self.stop.wait(WRITE_EVERY_S):
            n += 1
            at = datetime.now(UTC)
            record = replace(OFFER, price_per_hour=Decimal("31.92") + n % 7)
            began = time.perf_counter()
            try:
                self.store.write_run(
                    "benchwriter", [record], started_at=at, observed_at=at, regions=None
                )
            except Exception as exc:  # counted, the run goes on
                self.failed.append(repr(exc))
            self.took.append((time.perf_counter() - began) * 1000)


def load(
    port: int, clients: int, requests: int, by_page: dict[str, list[float]] | None = None
) -> tuple[list[float], list[str]]:
    """`requests` requests of the mix spread over `clients` threads; latencies (ms), failures.
    `by_page` gathers the latencies per page as well."""
    latencies: list[float] = []
    failures: list[str] = []
    lock = threading.Lock()

    def client(first: int) -> None:
        for n in range(first, requests, clients):
            page = MIX[n % len(MIX)]
            began = time.perf_counter()
            wrong = fetch(port, page)
            took = (time.perf_counter() - began) * 1000
            with lock:
                latencies.append(took)
                if by_page is not None:
                    by_page.setdefault(page, []).append(took)
                if wrong is not None:
                    failures.append(wrong)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return latencies, failures


def _pct(values: list[float], pct: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(pct) - 1]


def measure(store: Path, runs: int) -> None:
    config = config_mod.from_dict({"storage": {"path": str(store)}}, source=None)
    running: Running = start_for(config, WebSettings("127.0.0.1", 0), "web.listen")
    port = running.address[1]
    writer = Writer(store)
    try:
        load(port, 1, len(MIX))  # warm: the first requests import the pages' modules
        writer.start()
        figures = {}
        pages: dict[int, dict[str, list[float]]] = {1: {}, CLIENTS: {}}
        for clients in (1, CLIENTS):
            latencies, failures = load(port, clients, runs, pages[clients])
            figures[clients] = (_pct(latencies, 50), _pct(latencies, 99))
            print(
                f"{clients} client(s), {len(latencies)} requests: p50 {figures[clients][0]:.0f} "
                f"ms, p99 {figures[clients][1]:.0f} ms; answers lost: {len(failures)}"
                + (f" (first: {failures[0]})" if failures else "")
            )
    finally:
        writer.stop.set()
        writer.join()
        running.close()
    print("per page, 1 client / 8 clients: median and max (ms)")
    for page in MIX:
        one_page, many_page = pages[1][page], pages[CLIENTS][page]
        print(
            f"  {page}: {statistics.median(one_page):.0f} / {statistics.median(many_page):.0f}, "
            f"max {max(one_page):.0f} / {max(many_page):.0f}"
        )
    one, many = figures[1], figures[CLIENTS]
    print(f"{CLIENTS} clients against 1: p50 {many[0] / one[0]:.2f}x, p99 {many[1] / one[1]:.2f}x")
    took = writer.took
    print(
        f"writes meanwhile: {len(took)}, failed {len(writer.failed)}; each took median "
        f"{statistics.median(took):.0f} ms, max {max(took):.0f} ms (its wait for the readers "
        "included)" + (f"; first failure: {writer.failed[0]}" if writer.failed else "")
    )


def main() -> None:
    big_store.bench_main(
        __doc__.splitlines()[0], measure, runs=200, rows=361_000, name="bench-web-load"
    )


if __name__ == "__main__":
    main()
