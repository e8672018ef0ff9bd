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
