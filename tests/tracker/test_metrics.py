"""The Prometheus endpoint: a real HTTP server on loopback, scraped and parsed like Prometheus
would, over a real DuckDB store written through the store's own write path."""

from __future__ import annotations

import logging
import shutil
import socket
import tomllib
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from alerts.delivery import Delivery
from collectors.base import PriceRecord
from collectors.common import ConfigError
from storage.fx import FxRate
from storage.store import Store
from tracker import config as config_mod
from tracker.collecting.pipeline import Outcome
from tracker.config.daemon import MetricsSettings
from tracker.daemon.metrics import Metrics, MetricsServer

T0 = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)
H = timedelta(hours=1)
README = (Path(__file__).parents[2] / "docs" / "daemon.md").read_text()
# 7.2 CNY per USD: 1 / 7.2 = 0.138888889 USD per CNY (the store keeps 9 places).
FX = [FxRate.per_usd("CNY", date(2026, 1, 8), Decimal("7.2"), "test rate")]
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def rec(
    provider: str,
    region: str,
    itype: str,
    price: str,
    *,
    kind: str = "on_demand",
    gpu: tuple[str, float] = ("A100", 8),
    zone: str | None = None,
    term: int | None = None,
    currency: str = "USD",
    available: bool | None = None,
) -> PriceRecord:
    return PriceRecord(
        provider=provider,
        region=region,
        zone=zone,
        instance_type=itype,
        price_kind=kind,  # type: ignore[arg-type]
        term_months=term,
        payment_option="all_upfront" if term else None,
        offering_class=None,
        currency=currency,
        price_per_hour=Decimal(price),
        upfront_total=Decimal(0) if term else None,
        gpu_model=gpu[0],
        gpu_count=gpu[1],
        gpu_memory_gib=80,
        available=available,
    )


AWS = [
    rec("aws", "us-east-1", "p4d.24xlarge", "21.957642"),  # / 8 = 2.744705 per GPU-hour
    rec("aws", "us-east-1", "p4d.24xlarge", "8.0468", kind="spot", zone="use1-az1"),  # 1.00585
    rec("aws", "us-east-1", "p4d.24xlarge", "8.85", kind="spot", zone="use1-az4"),  # 1.10625
    rec("aws", "us-east-1", "p4d.24xlarge", "8.159056", kind="reserved", term=36),  # 1.019882
    rec("aws", "us-east-1", "p4d.24xlarge", "13.921094", kind="reserved", term=12),  # 1.740137
    rec("aws", "us-east-1", "p5.48xlarge", "98.32", gpu=("H100", 8)),  # 12.29
    rec("aws", "us-west-2", "p4d.24xlarge", "22.5"),  # 2.8125
]
LAMBDA = [
    rec("lambdalabs", "us-east-1", "gpu_1x_h100_sxm5", "2.49", gpu=("H100", 1), available=True),
    # Cheaper per GPU-hour (18.32 / 8 = 2.29) but sold out: no series.
    rec("lambdalabs", "us-east-1", "gpu_8x_h100_sxm5", "18.32", gpu=("H100", 8), available=False),
]
# 230.40 CNY / 8 = 28.80 CNY per GPU-hour; in USD 230.40 x 0.138888889 / 8 = 4.000000 (6 places).
TENCENT = [rec("tencent", "ap-guangzhou", "GT4.41XLARGE948", "230.40", currency="CNY")]
AZURE = [rec("azure", "eastus", "Standard_ND96asr_v4", "27.197")]  # goes stale below


def write(path: Path, provider: str, records: list[PriceRecord], at: datetime) -> int:
    store = Store(path, fx_rates=FX)
    result = store.write_run(
        provider, records, started_at=at, observed_at=at, regions=None, interval_seconds=3600
    )
    return result.run_id


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    path = tmp_path / "prices.duckdb"
    for provider, records in [("aws", AWS), ("lambdalabs", LAMBDA), ("tencent", TENCENT)]:
        write(path, provider, records, T0)
    stale_run = write(path, "azure", AZURE, T0)
    # Azure's last success three hours ago, with a 1 h interval: older than twice it, stale.
    with duckdb.connect(str(path)) as con:
        con.execute(
            "UPDATE runs SET finished_at = now() - INTERVAL 3 HOUR WHERE run_id = ?", [stale_run]
        )
    return path


class Held:
    """A lock that counts how often it was taken and given back."""

    def __init__(self) -> None:
        self.entered = self.exited = 0

    def __enter__(self) -> None:
        self.entered += 1

    def __exit__(self, *_: object) -> None:
        self.exited += 1


@pytest.fixture
def metrics() -> Metrics:
    return Metrics()


@pytest.fixture
def served(metrics: Metrics) -> Iterator[MetricsServer]:
    server = metrics.serve(MetricsSettings("127.0.0.1", 0))
    yield server
    server.close()


def scrape(server: MetricsServer) -> Samples:
    answer = requests.get(f"http://127.0.0.1:{server.port}/metrics", timeout=5)
    answer.raise_for_status()
    samples: Samples = {}
    for family in text_string_to_metric_families(answer.text):
        for sample in family.samples:
            samples[sample.name, tuple(sorted(sample.labels.items()))] = sample.value
    return samples


def named(samples: Samples, name: str, *keys: str) -> dict[tuple[str, ...], float]:
    """The samples of one metric, keyed by the values of the labels `keys` (default: provider)."""
    keys = keys or ("provider",)
    return {
        tuple(dict(labels)[k] for k in keys): value
        for (n, labels), value in samples.items()
        if n == name
    }


def price_labels(provider: str, region: str, gpu: str, kind: str, currency: str) -> tuple[str, ...]:
    return (provider, region, gpu, kind, currency)


PRICE = ("provider", "region", "gpu_model", "price_kind", "currency")
USD = ("provider", "region", "gpu_model", "price_kind", "priced_in")


def test_collections_are_counted_per_provider_and_result(
    metrics: Metrics, served: MetricsServer
) -> None:
    ok = Outcome("aws", records=120, changed=7, seconds=42.5)
    metrics.observe(ok, T0, consecutive_failures=0)
    failed = Outcome("aws", status="failed", seconds=3.0, error="aws: HTTP 500")
    metrics.observe(failed, T0 + H, consecutive_failures=1)
    skipped = Outcome("gcp", status="skipped", error="no credentials: set GOOGLE_API_KEY")
    metrics.observe(skipped, T0 + H, consecutive_failures=0)
    samples = scrape(served)

    runs = named(samples, "gpu_tracker_collections_total", "provider", "result")
    assert runs == {
        ("aws", "ok"): 1,
        ("aws", "failed"): 1,
        ("aws", "skipped"): 0,
        ("gcp", "ok"): 0,
        ("gcp", "failed"): 0,
        ("gcp", "skipped"): 1,
    }
    assert named(samples, "gpu_tracker_last_success_timestamp_seconds") == {
        ("aws",): T0.timestamp()  # the failure after it does not move it; gcp never succeeded
    }
    assert named(samples, "gpu_tracker_last_run_timestamp_seconds") == {
        ("aws",): (T0 + H).timestamp(),
        ("gcp",): (T0 + H).timestamp(),
    }
    assert named(samples, "gpu_tracker_consecutive_failures") == {("aws",): 1, ("gcp",): 0}
    assert named(samples, "gpu_tracker_last_success_records") == {("aws",): 120}
    assert named(samples, "gpu_tracker_price_changes_total") == {("aws",): 7}
    # Both aws runs timed (42.5 + 3.0 s); the skipped gcp run collected nothing, so no timing.
    assert named(samples, "gpu_tracker_collection_duration_seconds_count") == {("aws",): 2}
    assert named(samples, "gpu_tracker_collection_duration_seconds_sum") == {("aws",): 45.5}
    buckets = named(samples, "gpu_tracker_collection_duration_seconds_bucket", "provider", "le")
    assert buckets[("aws", "5.0")] == 1  # the 3 s failure
    assert buckets[("aws", "30.0")] == 1
    assert buckets[("aws", "60.0")] == 2


def test_a_success_after_failures_resets_the_streak(
    metrics: Metrics, served: MetricsServer
) -> None:
    for streak in (1, 2):
        metrics.observe(Outcome("azure", status="failed"), T0, consecutive_failures=streak)
    assert named(scrape(served), "gpu_tracker_consecutive_failures") == {("azure",): 2}
    metrics.observe(Outcome("azure", records=5, changed=5), T0 + H, consecutive_failures=0)
    samples = scrape(served)
    assert named(samples, "gpu_tracker_consecutive_failures") == {("azure",): 0}
    runs = named(samples, "gpu_tracker_collections_total", "provider", "result")
    assert runs[("azure", "failed")] == 2


def test_alert_deliveries_are_counted_per_channel_and_result(
    metrics: Metrics, served: MetricsServer
) -> None:
    metrics.delivered([Delivery("slack", 2), Delivery("email", 1, error="535 auth failed")])
    metrics.delivered([Delivery("slack", 1)])
    counts = named(scrape(served), "gpu_tracker_alert_deliveries_total", "channel", "result")
    assert counts == {
        ("slack", "ok"): 2,
        ("slack", "failed"): 0,
        ("email", "ok"): 0,
        ("email", "failed"): 1,
    }


def test_the_configured_interval_is_exported_for_data_age_rules(
    metrics: Metrics, served: MetricsServer
) -> None:
    metrics.seed("aws", last_run=T0, last_success=T0, consecutive_failures=0, interval_s=86400.0)
    metrics.seed("azure", last_run=None, last_success=None, consecutive_failures=0)
    intervals = named(scrape(served), "gpu_tracker_collection_interval_seconds")
    assert intervals == {("aws",): 86400.0}


EXPECTED_PRICES = {
    price_labels("aws", "us-east-1", "A100", "on_demand", "USD"): 2.744705,
    price_labels("aws", "us-east-1", "A100", "spot", "USD"): 1.00585,  # use1-az1, not az4
    price_labels("aws", "us-east-1", "A100", "reserved", "USD"): 1.019882,  # 3y, not 1y
    price_labels("aws", "us-east-1", "H100", "on_demand", "USD"): 12.29,
    price_labels("aws", "us-west-2", "A100", "on_demand", "USD"): 2.8125,
    price_labels("lambdalabs", "us-east-1", "H100", "on_demand", "USD"): 2.49,
    price_labels("tencent", "ap-guangzhou", "A100", "on_demand", "CNY"): 28.80,
    # no azure: its provider is stale; no 2.29 lambdalabs: sold out
}


def test_price_gauges_hold_the_cheapest_fresh_offer_per_region(
    metrics: Metrics, served: MetricsServer, store_path: Path
) -> None:
    assert metrics.refresh_prices_at(store_path) == len(EXPECTED_PRICES)
    samples = scrape(served)
    assert named(samples, "gpu_tracker_price_per_gpu_hour", *PRICE) == EXPECTED_PRICES
    # In USD the same offers, labelled with the currency they are priced in: CNY converted,
    # USD as it is.
    usd = named(samples, "gpu_tracker_price_per_gpu_hour_usd", *USD)
    assert usd[price_labels("tencent", "ap-guangzhou", "A100", "on_demand", "CNY")] == 4.0
    assert {k: v for k, v in usd.items() if k[-1] == "USD"} == {
        k: v for k, v in EXPECTED_PRICES.items() if k[-1] == "USD"
    }
    assert len(usd) == len(EXPECTED_PRICES)


def test_every_registered_provider_s_recordings_scrape(
    metrics: Metrics, served: MetricsServer, demo_kept: Path, tmp_path: Path
) -> None:
    """The demo's store holds every provider's recordings, some without regions (RunPod,
    Lambda's sold-out types, Vast.ai's groups): an empty label value, never a failed scrape."""
    from collectors import REGISTRY

    store = Path(shutil.copy(demo_kept, tmp_path / "prices.duckdb"))
    assert metrics.refresh_prices_at(store) > 0
    prices = named(scrape(served), "gpu_tracker_price_per_gpu_hour", *PRICE)
    assert {labels[0] for labels in prices} == set(REGISTRY)
    assert any(provider == "runpod" and region == "" for provider, region, *_ in prices)


def test_a_currency_without_a_rate_has_no_usd_series(
    metrics: Metrics, served: MetricsServer, tmp_path: Path
) -> None:
    path = tmp_path / "prices.duckdb"
    Store(path).write_run("tencent", TENCENT, started_at=T0, observed_at=T0, regions=None)
    lock = Held()  # the daemon's way: under its store lock
    assert metrics.refresh_prices_at(path, lock=lock) == 1
    assert lock.entered == lock.exited == 1
    samples = scrape(served)
    assert named(samples, "gpu_tracker_price_per_gpu_hour", *PRICE) == {
        price_labels("tencent", "ap-guangzhou", "A100", "on_demand", "CNY"): 28.80
    }
    assert named(samples, "gpu_tracker_price_per_gpu_hour_usd", *USD) == {}


def test_series_of_a_withdrawn_or_sold_out_offer_disappear(
    metrics: Metrics, served: MetricsServer, store_path: Path
) -> None:
    metrics.refresh_prices_at(store_path)
    # An hour later AWS no longer lists us-west-2 and the cheaper az1 spot offer sold out.
    later = [r for r in AWS if r.region != "us-west-2" and r.zone != "use1-az1"]
    sold_out = rec("aws", "us-east-1", "p4d.24xlarge", "8.0468", kind="spot", zone="use1-az1")
    write(store_path, "aws", [*later, replace(sold_out, available=False)], T0 + H)
    metrics.refresh_prices_at(store_path)
    got = named(scrape(served), "gpu_tracker_price_per_gpu_hour", *PRICE)
    expected = dict(EXPECTED_PRICES)
    del expected[price_labels("aws", "us-west-2", "A100", "on_demand", "USD")]
    expected[price_labels("aws", "us-east-1", "A100", "spot", "USD")] = 1.10625  # az4 now
    assert got == expected


def test_no_store_yet_means_no_price_series(metrics: Metrics, tmp_path: Path) -> None:
    assert metrics.refresh_prices_at(tmp_path / "none.duckdb") == 0
    assert not (tmp_path / "none.duckdb").exists()


def test_a_non_loopback_address_is_served_with_a_warning(
    metrics: Metrics, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="tracker.daemon.metrics"):
        server = metrics.serve(MetricsSettings("127.0.0.1", 0))
        server.close()
        assert not caplog.records
        server = metrics.serve(MetricsSettings("0.0.0.0", 0))
    try:
        answer = requests.get(f"http://127.0.0.1:{server.port}/metrics", timeout=5)
        assert "# TYPE gpu_tracker_price_per_gpu_hour gauge" in answer.text
    finally:
        server.close()
    (warning,) = caplog.records
    assert "metrics.listen" in warning.getMessage()
    assert "not a loopback address" in warning.getMessage()


def test_a_port_in_use_is_a_config_error_naming_the_key(metrics: Metrics) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ConfigError, match=rf"metrics\.listen: .*127\.0\.0\.1:{port}.*in use"):
            metrics.serve(MetricsSettings("127.0.0.1", port))


def test_two_instances_do_not_share_series() -> None:
    first, second = Metrics(), Metrics()
    first.observe(Outcome("aws"), T0, consecutive_failures=0)
    value = second.registry.get_sample_value(
        "gpu_tracker_collections_total", {"provider": "aws", "result": "ok"}
    )
    assert value is None


def test_every_metric_is_documented(metrics: Metrics) -> None:
    ours = {f.name for f in metrics.registry.collect() if not f.name.startswith("process_")}
    assert len(ours) == 12
    assert "`process_*`" in README
    for name in ours:
        # Counters are exposed with _total; the family name lacks it.
        shown = f"{name}_total" if f"`{name}_total`" in README else name
        assert f"`{shown}`" in README, f"README does not list {shown}"


def test_the_commented_metrics_section_of_config_toml_loads() -> None:
    shipped = (Path(__file__).parents[2] / "config.toml").read_text()
    start = shipped.index("# [metrics]\n")
    block = shipped[start : shipped.index("\n\n", start)]
    text = "\n".join(line.removeprefix("# ") for line in block.splitlines())
    settings = config_mod.from_dict(tomllib.loads(text), source=None).metrics
    assert settings == MetricsSettings("127.0.0.1", 9108)
    assert settings.loopback
