"""Against the real provider APIs: opt-in with `pytest --live`, skipped without credentials.

They check what recorded fixtures cannot: that the real API still answers in the shape the
parsers know, with plausible prices.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime

import pytest

from collectors.aws import AwsCollector
from collectors.azure import AzureCollector
from collectors.base import ProviderSettings

pytestmark = pytest.mark.live


def test_azure_retail_prices_live() -> None:
    collector = AzureCollector(ProviderSettings(regions=("eastus",), timeout=60))
    result = collector.parse(collector.fetch(), observed_at=datetime.now(UTC))
    kinds = {r.price_kind for r in result.records}
    assert kinds == {"on_demand", "spot", "reserved"}
    nd = [r for r in result.records if r.instance_type == "Standard_ND96isr_H100_v5"]
    assert all(0 < r.price_per_hour < 500 for r in nd)


@pytest.mark.skipif(
    not (os.environ.get("AWS_ACCESS_KEY_ID") or os.environ.get("AWS_PROFILE")),
    reason="needs AWS credentials (AWS_ACCESS_KEY_ID or AWS_PROFILE)",
)
def test_aws_price_list_and_spot_live() -> None:
    settings = ProviderSettings(
        regions=("us-east-1",), options={"instance_types": ["g4dn.xlarge"]}, timeout=60
    )
    collector = AwsCollector(settings)
    collector.check_credentials()
    result = collector.parse(collector.fetch(), observed_at=datetime.now(UTC))
    on_demand = [r for r in result.records if r.price_kind == "on_demand"]
    assert len(on_demand) == 1 and 0.1 < on_demand[0].price_per_hour < 5
    assert any(r.price_kind == "spot" and r.zone for r in result.records)
    assert any(r.price_kind == "reserved" and r.term_months == 36 for r in result.records)


def _live_settings(
    env: dict[str, str], *, regions: tuple[str, ...] = (), history_window_s: int | None = None
) -> ProviderSettings:
    return ProviderSettings(
        credentials=env, regions=regions, timeout=60, history_window_s=history_window_s
    )


@pytest.mark.skipif(not os.environ.get("LAMBDA_API_KEY"), reason="needs LAMBDA_API_KEY")
def test_lambda_instance_types_live() -> None:
    from collectors.lambdalabs import LambdaCollector

    collector = LambdaCollector(_live_settings({"api_key": os.environ["LAMBDA_API_KEY"]}))
    result = collector.parse(collector.fetch(), observed_at=datetime.now(UTC))
    # Capacity comes and goes, but the answer must be readable: every type placed or sold out.
    assert result.skipped_rows == 0
    assert all(r.available is True and 0.3 < r.price_per_hour < 100 for r in result.records)
    assert result.records or result.sold_out


@pytest.mark.skipif(not os.environ.get("DIGITALOCEAN_TOKEN"), reason="needs DIGITALOCEAN_TOKEN")
def test_digitalocean_gpu_sizes_live() -> None:
    from collectors.paperspace import PaperspaceCollector

    collector = PaperspaceCollector(_live_settings({"token": os.environ["DIGITALOCEAN_TOKEN"]}))
    result = collector.parse(collector.fetch(), observed_at=datetime.now(UTC))
    h100 = [r for r in result.records if r.gpu_model == "H100"]
    assert h100 and all(r.gpu_memory_gib == 80 for r in h100)
    assert all(0.3 < r.price_per_hour / r.gpu_count < 20 for r in result.records)


@pytest.mark.skipif(
    not (
        os.environ.get("ALIBABA_CLOUD_ACCESS_KEY_ID")
        and os.environ.get("ALIBABA_CLOUD_ACCESS_KEY_SECRET")
    ),
    reason="needs ALIBABA_CLOUD_ACCESS_KEY_ID and ALIBABA_CLOUD_ACCESS_KEY_SECRET",
)
def test_alibaba_one_region_live() -> None:
    from collectors.alibaba import AlibabaCollector

    keys = {
        "access_key_id": os.environ["ALIBABA_CLOUD_ACCESS_KEY_ID"],
        "access_key_secret": os.environ["ALIBABA_CLOUD_ACCESS_KEY_SECRET"],
    }
    collector = AlibabaCollector(
        _live_settings(keys, regions=("cn-hangzhou",), history_window_s=3 * 3600)
    )
    result = collector.parse(collector.fetch(), observed_at=datetime.now(UTC))
    kinds = {r.price_kind for r in result.records}
    assert {"on_demand", "reserved"} <= kinds
    assert {r.currency for r in result.records} <= {"CNY", "USD"}


def test_vastai_offer_search_live() -> None:
    from collectors.vastai import VastaiCollector

    key = os.environ.get("VAST_API_KEY")
    collector = VastaiCollector(_live_settings({"api_key": key} if key else {}))
    result = collector.parse(collector.fetch(), observed_at=datetime.now(UTC))
    # A market: which groups exist moves, but verified H100 or RTX 4090 offers are always there
    assert {"H100", "RTX4090"} & {r.gpu_model for r in result.records}
    assert all(0.01 < r.price_per_hour / r.gpu_count < 100 for r in result.records)
    assert result.skipped_rows < len(result.records)


@pytest.mark.skipif(not os.environ.get("RUNPOD_API_KEY"), reason="needs RUNPOD_API_KEY")
def test_runpod_gpu_types_live() -> None:
    from collectors.runpod import RunpodCollector

    collector = RunpodCollector(_live_settings({"api_key": os.environ["RUNPOD_API_KEY"]}))
    result = collector.parse(collector.fetch(), observed_at=datetime.now(UTC))
    assert result.skipped_rows == 0
    assert {"on_demand", "spot"} <= {r.price_kind for r in result.records}
    assert all(r.region is None and 0.05 < r.price_per_hour < 100 for r in result.records)
