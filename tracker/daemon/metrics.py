"""The daemon's optional Prometheus endpoint: how each provider's collections go, and the
cheapest current price per GPU-hour per provider, region, GPU model and price kind.

Everything lives in a registry of its own (never prometheus_client's global one), so several
daemons in one process, and the tests, never collide. Price series are rebuilt from the store
after each write and swapped in whole: a scrape sees the old set or the new one, never half.
"""

from __future__ import annotations

import errno
import logging
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from threading import Thread
from typing import Any
from wsgiref.simple_server import WSGIServer

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    start_http_server,
)
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from alerts.delivery import Delivery
from collectors.common import ConfigError
from storage.reads.cheapest import Cheapest, cheapest_fresh
from tracker.collecting.pipeline import Outcome
from tracker.config.daemon import MetricsSettings

log = logging.getLogger("tracker.daemon.metrics")

RESULTS = ("ok", "failed", "skipped")
# Collections take from a second (Lambda) to many minutes (every AWS region with spot history).
DURATION_BUCKETS = (1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600)
PRICE_LABELS = ("provider", "region", "gpu_model", "price_kind", "currency")
USD_LABELS = ("provider", "region", "gpu_model", "price_kind", "priced_in")


@dataclass(frozen=True)
class MetricsServer:
    """A running endpoint; `close()` stops it and frees the port."""

    host: str
    port: int
    server: WSGIServer
    thread: Thread

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


class Metrics:
    """The daemon's metrics: `observe` after each provider job, `refresh_prices` after each
    write, `serve` once at start-up."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self._prices = _PriceCollector()
        self._define(self.registry)
        self.registry.register(self._prices)
        ProcessCollector(registry=self.registry)  # process_*: memory, CPU, open files

    def observe(
        self, outcome: Outcome, finished_at: datetime, *, consecutive_failures: int
    ) -> None:
        """Record one provider's collection. `consecutive_failures` is the daemon's count of
        failed runs in a row (0 after a success)."""
        provider = outcome.provider
        for result in RESULTS:  # every result present from the start, so rate() sees 0 -> 1
            self.collections.labels(provider, result)
        self.collections.labels(provider, outcome.status).inc()
        self.held.labels(provider).inc(outcome.status == "held")
        if outcome.status != "skipped":  # a skipped provider did not collect anything
            self.duration.labels(provider).observe(outcome.seconds)
        self.last_run.labels(provider).set(finished_at.timestamp())
        self.consecutive_failures.labels(provider).set(consecutive_failures)
        if outcome.status == "ok":
            self.last_success.labels(provider).set(finished_at.timestamp())
            self.records.labels(provider).set(outcome.records)
            self.changes.labels(provider).inc(outcome.changed)

    def seed(
        self,
        provider: str,
        *,
        last_run: datetime | None,
        last_success: datetime | None,
        consecutive_failures: int,
        interval_s: float | None = None,
    ) -> None:
        """What the store knows from before this process started: after a restart with the
        provider down, its last success time is still there for `time() - ...` alerts. With
        the provider's configured interval, which the shipped alerting rules measure data age
        against (deploy/prometheus)."""
        if interval_s is not None:
            self.interval.labels(provider).set(interval_s)
        if last_run is not None:
            self.last_run.labels(provider).set(last_run.timestamp())
        if last_success is not None:
            self.last_success.labels(provider).set(last_success.timestamp())
        self.consecutive_failures.labels(provider).set(consecutive_failures)

    def delivered(self, deliveries: Iterable[Delivery]) -> None:
        """Count each alert message sent to a channel, by whether it went out."""
        for delivery in deliveries:
            for result in ("ok", "failed"):  # both present from the first, so rate() sees 0 -> 1
                self.deliveries.labels(delivery.channel, result)
            self.deliveries.labels(delivery.channel, "failed" if delivery.error else "ok").inc()

    def refresh_prices_at(
        self,
        store_path: Path,
        *,
        lock: AbstractContextManager[Any] | None = None,
        wait_s: float = 30.0,
    ) -> int:
        """Rebuild the price gauges from the store (the daemon passes its store lock). Returns
        how many price series there are now."""
        rows = cheapest_fresh(store_path, lock=lock, wait_s=wait_s)
        self._prices.replace(rows)
        return len(rows)

    def serve(self, settings: MetricsSettings) -> MetricsServer:
        """Start the HTTP endpoint on `settings` (port 0: any free port). A port that cannot
        be had is a ConfigError naming `metrics.listen`."""
        if settings.host is None:
            raise ConfigError("metrics.listen: not set, so there is no endpoint to start")
        shown = _address(settings.host, settings.port)
        if not settings.loopback:
            log.warning(
                "metrics.listen = %r is not a loopback address: anyone who can reach this"
                " machine on that port can read the metrics",
                shown,
            )
        try:
            server, thread = start_http_server(
                settings.port, addr=settings.host, registry=self.registry
            )
        except OSError as exc:
            raise ConfigError(f"metrics.listen: cannot listen on {shown}: {_why(exc)}") from exc
        port = int(server.server_port)
        log.info("metrics: serving on http://%s/metrics", _address(settings.host, port))
        return MetricsServer(settings.host, port, server, thread)

    def _define(self, registry: CollectorRegistry) -> None:
        self.duration = Histogram(
            "gpu_tracker_collection_duration_seconds",
            "Time one collection of a provider took (ok and failed runs)",
            ("provider",),
            buckets=DURATION_BUCKETS,
            registry=registry,
        )
        self.collections = Counter(
            "gpu_tracker_collections",
            "Collections run, by result (ok, failed, held, skipped for lack of credentials)",
            ("provider", "result"),
            registry=registry,
        )
        # docs/trust.md: an answer that would rewrite the history, nothing of it stored.
        self.held = Counter(
            "gpu_tracker_runs_held",
            "Collections held as suspect (nothing stored), by provider",
            ("provider",),
            registry=registry,
        )
        self.changes = Counter(
            "gpu_tracker_price_changes",
            "Prices that changed (intervals opened plus offers withdrawn) in ok collections",
            ("provider",),
            registry=registry,
        )
        self.records = _gauge(
            registry,
            "gpu_tracker_last_success_records",
            "Prices the provider's last successful collection returned",
        )
        self.last_success = _gauge(
            registry,
            "gpu_tracker_last_success_timestamp_seconds",
            "When the provider's last successful collection finished (unix time)",
        )
        self.last_run = _gauge(
            registry,
            "gpu_tracker_last_run_timestamp_seconds",
            "When the provider's last collection finished, whatever its result (unix time)",
        )
        self.consecutive_failures = _gauge(
            registry,
            "gpu_tracker_consecutive_failures",
            "Failed collections of the provider in a row (0 after a success)",
        )
        self.interval = _gauge(
            registry,
            "gpu_tracker_collection_interval_seconds",
            "The provider's configured collection interval (before any backoff)",
        )
        self.deliveries = Counter(
            "gpu_tracker_alert_deliveries",
            "Alert messages sent, by channel (slack, email, console) and result (ok, failed)",
            ("channel", "result"),
            registry=registry,
        )


class _PriceCollector(Collector):
    """Yields the price gauges from the last snapshot; `replace` swaps in a new one whole."""

    def __init__(self) -> None:
        self._rows: tuple[Cheapest, ...] = ()

    def replace(self, rows: list[Cheapest]) -> None:
        self._rows = tuple(rows)  # one assignment: a concurrent scrape sees old or new

    def describe(self) -> Iterator[Metric]:
        return iter(_families())

    def collect(self) -> Iterator[Metric]:
        native, usd = _families()
        for provider, region, gpu, kind, currency, price, price_usd in self._rows:
            # A provider without regions (RunPod, Lambda's sold-out types) is the empty value:
            # the exposition takes no None, and one such label would fail the whole scrape.
            labels = [provider, region or "", gpu, kind, currency]
            native.add_metric(labels, float(price))
            if price_usd is not None:
                usd.add_metric(labels, float(price_usd))
        yield native
        yield usd


def _gauge(registry: CollectorRegistry, name: str, documentation: str) -> Gauge:
    return Gauge(name, documentation, ("provider",), registry=registry)


def _families() -> tuple[GaugeMetricFamily, GaugeMetricFamily]:
    native = GaugeMetricFamily(
        "gpu_tracker_price_per_gpu_hour",
        "Cheapest current price per GPU-hour (fresh, not sold out) in the provider's currency",
        labels=PRICE_LABELS,
    )
    usd = GaugeMetricFamily(
        "gpu_tracker_price_per_gpu_hour_usd",
        "The same price converted to USD with the [fx] rates (priced_in: its own currency)",
        labels=USD_LABELS,
    )
    return native, usd


def _address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _why(exc: OSError) -> str:
    if exc.errno == errno.EADDRINUSE:
        return "the port is already in use (another daemon, or another exporter on it?)"
    if exc.errno == errno.EADDRNOTAVAIL:
        return "no network interface of this machine has that address"
    if exc.errno == errno.EACCES:
        return "permission denied (ports below 1024 need privileges)"
    return exc.strerror or str(exc)
