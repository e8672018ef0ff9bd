"""Against the real provider APIs: opt-in with `pytest --live`, skipped without credentials
(and, for the APIs that need none, without a network).

They check what recorded fixtures cannot: that the real API still answers in the shape the
parsers know, with plausible prices, and that the GPU facts the run summary counts as the API's
own really come from the API (AWS DescribeInstanceTypes, Alibaba's, Lambda's and DigitalOcean's
descriptions).
"""

from __future__ import annotations

import os
import socket
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import pytest

from collectors import gpus
from collectors.aws import facts, feeds, terms
from collectors.aws.collector import AwsCollector
from collectors.aws.pages import Pages, pages_of
from collectors.aws.public import OFFERS_ENDPOINT
from collectors.azure.collector import AzureCollector
from collectors.base import ParseResult, ProviderSettings

pytestmark = pytest.mark.live

needs_aws = pytest.mark.skipif(
    not (os.environ.get("AWS_ACCESS_KEY_ID") or os.environ.get("AWS_PROFILE")),
    reason="needs AWS credentials (AWS_ACCESS_KEY_ID or AWS_PROFILE)",
)

PRICE_LIST_API = "https://api.pricing.us-east-1.amazonaws.com"


def online(url: str) -> None:
    """Skips the test when `url`'s host cannot be reached (no network, no DNS): a live test
    checks the API, not the machine's connection. Asked before any request of the collector,
    so a refusal by the API itself still fails the test."""
    parts = urlsplit(url)
    host, port = parts.hostname or "", parts.port or (80 if parts.scheme == "http" else 443)
    try:
        socket.create_connection((host, port), timeout=15).close()
    except OSError as exc:
        pytest.skip(f"no network: {host}:{port} cannot be reached ({exc})")


def facts_from_the_api(result: ParseResult) -> None:
    """The run summary's 'from API facts' equals its 'priced': every priced type's GPU facts are
    the API's own; a failure names the types whose are not, with where theirs came from."""
    summary = result.gpu_summary()
    priced = sorted({r.instance_type for r in result.records})
    elsewhere = {t: result.facts.get(t, "none") for t in priced if result.facts.get(t) != "api"}
    assert summary.priced > 0
    assert summary.from_api == summary.priced, f"GPU facts not from the API: {elsewhere}"


def test_azure_retail_prices_live() -> None:
    online("https://prices.azure.com")
    collector = AzureCollector(ProviderSettings(regions=("eastus",), timeout=60))
    result = collector.parse(collector.fetch(), observed_at=datetime.now(UTC))
    kinds = {r.price_kind for r in result.records}
    assert kinds == {"on_demand", "spot", "reserved"}
    nd = [r for r in result.records if r.instance_type == "Standard_ND96isr_H100_v5"]
    assert all(0 < r.price_per_hour < 500 for r in nd)


@needs_aws
def test_aws_price_list_and_spot_live() -> None:
    online(PRICE_LIST_API)
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


@needs_aws
def test_aws_every_gpu_type_with_facts_from_describe_instance_types_live(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    online(PRICE_LIST_API)
    asked: list[tuple[str, dict[str, Any]]] = []
    walk = Pages.walk

    def recorded(self: Pages, client: Any, method: str, prefix: str, query: Any) -> None:
        asked.append((method, query))
        walk(self, client, method, prefix, query)

    monkeypatch.setattr(Pages, "walk", recorded)
    collector = AwsCollector(ProviderSettings(regions=("us-east-1",), timeout=60))
    collector.check_credentials()
    payloads = collector.fetch()
    result = collector.parse(payloads, observed_at=datetime.now(UTC))
    denied = payloads.get("types/denied/answer")
    assert denied is None, f"{denied}: allow ec2:DescribeInstanceTypes to these credentials"

    # DescribeInstanceTypes is asked as `facts` asks it, by filter and for types the first
    # region does not sell too; it describes every type the Price List prices there, no other.
    queries = [q for method, q in asked if method == "describe_instance_types"]
    sent = sorted(v for q in queries for v in q["Filters"][0]["Values"])
    assert sent and queries == list(facts.describe_queries(sent))
    assert all(q["IncludeUnsupportedInRegion"] is True for q in queries)
    answers = [page for _, page in pages_of(payloads, "types")]
    names = _gpu_names(answers)
    assert not set(sent) - set(names), f"not described: {sorted(set(sent) - set(names))}"
    assert set(names) <= set(sent), f"not asked: {sorted(set(names) - set(sent))}"

    # Every record of a type EC2 describes with GPUs names its model (a name EC2 gives that
    # [names.aws] lacks is the failure), with the API's facts; the summary counts them.
    described = facts.described(answers)
    unnamed = sorted({r.instance_type for r in result.records if r.gpu_model is None})
    assert not [t for t in unnamed if described.get(t)], {t: names.get(t) for t in unnamed}
    from_ec2 = {r.instance_type for r in result.records if described.get(r.instance_type)}
    assert from_ec2 and all(result.facts[t] == "api" for t in from_ec2)
    assert result.gpu_summary().from_api >= len(from_ec2) > 0
    p4d = [r for r in result.records if r.instance_type == "p4d.24xlarge"]
    assert p4d and {(r.gpu_model, r.gpu_count, r.gpu_memory_gib) for r in p4d} == {("A100", 8, 40)}

    # DescribeSpotPriceHistory: no limit on InstanceType.N is documented (the EC2 API model
    # sets none, unlike DescribeInstanceTypes' 100), so every priced type goes in one request.
    # EC2 must accept that many (the walk above raised nothing) and answer for the whole list,
    # not a first part of it.
    [spot] = [q for method, q in asked if method == "describe_spot_price_history"]
    assert spot["InstanceTypes"] == sent
    answered = {r.instance_type for r in result.records if r.price_kind == "spot"}
    assert answered <= set(sent)
    assert answered & set(sent[-len(sent) // 4 :]), f"{len(sent)} types asked, {answered} answered"


def _gpu_names(answers: list[Any]) -> dict[str, list[str]]:
    """instance type -> the GPU names its DescribeInstanceTypes item gives ([] for none)."""
    names: dict[str, list[str]] = {}
    for page in answers:
        for item in page.get("InstanceTypes") or []:
            devices = (item.get("GpuInfo") or {}).get("Gpus") or []
            names[item["InstanceType"]] = [str(d.get("Name")) for d in devices]
    return names


def test_aws_public_files_give_every_gpu_type_count_and_memory_live(tmp_path: Any) -> None:
    online(OFFERS_ENDPOINT)
    settings = ProviderSettings(
        regions=("us-east-1",), options={"source": "public"}, timeout=120, state_dir=tmp_path
    )
    collector = AwsCollector(settings)
    payloads = collector.fetch()
    result = collector.parse(payloads, observed_at=datetime.now(UTC))
    assert collector.source[0] == "public"
    # Every GPU instance type of the region's file: the Price List's `gpu` and `gpuMemory` give
    # its count and memory (or the GPU table knows it), and it is priced with them.
    kept = payloads["public/offers/us-east-1"]
    products = [p["product"]["attributes"] for p in feeds.products(kept["columns"], kept["rows"])]
    family = [a for a in products if a.get("instanceFamily") == facts.GPU_FAMILY]
    lacking = sorted(
        {
            str(a["instanceType"])
            for a in family
            if facts.from_price_list(a) is None and gpus.lookup("aws", a["instanceType"]) is None
        }
    )
    assert family and lacking == [], f"GPU types without a count and memory: {lacking}"
    sold = {
        str(a["instanceType"])
        for a in family
        if terms.is_plain_linux_box(a) and a.get("regionCode") == "us-east-1"
    }
    priced = {r.instance_type for r in result.records}
    assert not result.unknown_instance_types
    assert sold and sold <= priced, f"not priced: {sorted(sold - priced)}"
    assert all(r.gpu_count and r.gpu_memory_gib for r in result.records)
    p4d = [r for r in result.records if r.instance_type == "p4d.24xlarge"]
    assert p4d and {(r.gpu_model, r.gpu_count, r.gpu_memory_gib) for r in p4d} == {("A100", 8, 40)}
    assert {"on_demand", "reserved", "spot"} <= {r.price_kind for r in result.records}
    # The spot feed is current: it prices g6e, launched in August 2024 (the old feed's URL is
    # said to have stopped changing in May 2024).
    spot = {r.instance_type for r in result.records if r.price_kind == "spot"}
    assert any(t.startswith("g6e.") for t in spot), f"the spot feed prices no g6e: {sorted(spot)}"
    # The public Savings Plans file prices the GPU boxes under both kinds of plan.
    classes = ("compute_savings_plan", "ec2_instance_savings_plan")
    p4d_plans = [r for r in p4d if r.offering_class in classes]
    plans = {(r.offering_class, r.term_months) for r in p4d_plans}
    assert {c for c, _ in plans} == set(classes), plans
    assert {m for _, m in plans} == {12, 36}, plans


def _live_settings(
    env: dict[str, str], *, regions: tuple[str, ...] = (), history_window_s: int | None = None
) -> ProviderSettings:
    return ProviderSettings(
        credentials=env, regions=regions, timeout=60, history_window_s=history_window_s
    )


@pytest.mark.skipif(not os.environ.get("LAMBDA_API_KEY"), reason="needs LAMBDA_API_KEY")
def test_lambda_instance_types_live() -> None:
    from collectors.lambdalabs import DEFAULT_ENDPOINT, LambdaCollector

    online(DEFAULT_ENDPOINT)
    collector = LambdaCollector(_live_settings({"api_key": os.environ["LAMBDA_API_KEY"]}))
    result = collector.parse(collector.fetch(), observed_at=datetime.now(UTC))
    # Capacity comes and goes, but the answer must be readable: every type placed, or sold out
    # with its list price kept in a record of no region.
    assert result.skipped_rows == 0
    assert all(r.available is (r.region is not None) for r in result.records)
    assert all(0.3 < r.price_per_hour < 100 for r in result.records)
    facts_from_the_api(result)


@pytest.mark.skipif(not os.environ.get("DIGITALOCEAN_TOKEN"), reason="needs DIGITALOCEAN_TOKEN")
def test_digitalocean_gpu_sizes_live() -> None:
    from collectors.paperspace.collector import DEFAULT_ENDPOINT, PaperspaceCollector

    online(DEFAULT_ENDPOINT)
    collector = PaperspaceCollector(_live_settings({"token": os.environ["DIGITALOCEAN_TOKEN"]}))
    result = collector.parse(collector.fetch(), observed_at=datetime.now(UTC))
    h100 = [r for r in result.records if r.gpu_model == "H100"]
    assert h100 and all(r.gpu_memory_gib == 80 for r in h100)
    assert all(0.3 < r.price_per_hour / r.gpu_count < 20 for r in result.records)
    facts_from_the_api(result)


@pytest.mark.skipif(
    not (
        os.environ.get("ALIBABA_CLOUD_ACCESS_KEY_ID")
        and os.environ.get("ALIBABA_CLOUD_ACCESS_KEY_SECRET")
    ),
    reason="needs ALIBABA_CLOUD_ACCESS_KEY_ID and ALIBABA_CLOUD_ACCESS_KEY_SECRET",
)
def test_alibaba_one_region_live() -> None:
    from collectors.alibaba.collector import AlibabaCollector

    online("https://ecs.cn-hangzhou.aliyuncs.com")
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
    facts_from_the_api(result)


def test_vastai_offer_search_live() -> None:
    from collectors.vastai.collector import DEFAULT_ENDPOINT, VastaiCollector

    online(DEFAULT_ENDPOINT)
    key = os.environ.get("VAST_API_KEY")
    collector = VastaiCollector(_live_settings({"api_key": key} if key else {}))
    result = collector.parse(collector.fetch(), observed_at=datetime.now(UTC))
    # A market: which groups exist moves, but verified H100 or RTX 4090 offers are always there
    assert {"H100", "RTX4090"} & {r.gpu_model for r in result.records}
    assert all(0.01 < r.price_per_hour / r.gpu_count < 100 for r in result.records)
    assert result.skipped_rows < len(result.records)


@pytest.mark.skipif(not os.environ.get("RUNPOD_API_KEY"), reason="needs RUNPOD_API_KEY")
def test_runpod_gpu_types_live() -> None:
    from collectors.runpod import DEFAULT_ENDPOINT, RunpodCollector

    online(DEFAULT_ENDPOINT)
    collector = RunpodCollector(_live_settings({"api_key": os.environ["RUNPOD_API_KEY"]}))
    result = collector.parse(collector.fetch(), observed_at=datetime.now(UTC))
    assert result.skipped_rows == 0
    assert {"on_demand", "spot"} <= {r.price_kind for r in result.records}
    assert all(r.region is None and 0.05 < r.price_per_hour < 100 for r in result.records)


def test_cloudrift_instance_types_live() -> None:
    from collectors.cloudrift.collector import DEFAULT_ENDPOINT, CloudriftCollector

    online(DEFAULT_ENDPOINT)
    collector = CloudriftCollector(_live_settings({}))
    result = collector.parse(collector.fetch(), observed_at=datetime.now(UTC))
    # Prices in cents for the whole machine: a GPU-hour between 5 cents and 20 dollars
    assert result.records and result.skipped_rows == 0
    assert all(0.05 < r.price_per_hour / r.gpu_count < 20 for r in result.records)
    facts_from_the_api(result)


@pytest.mark.skipif(
    not (os.environ.get("VERDA_CLIENT_ID") and os.environ.get("VERDA_CLIENT_SECRET")),
    reason="needs VERDA_CLIENT_ID and VERDA_CLIENT_SECRET",
)
def test_verda_instance_types_live() -> None:
    from collectors.verda.collector import DEFAULT_ENDPOINT, VerdaCollector

    online(DEFAULT_ENDPOINT)
    keys = {
        "client_id": os.environ["VERDA_CLIENT_ID"],
        "client_secret": os.environ["VERDA_CLIENT_SECRET"],
    }
    collector = VerdaCollector(_live_settings(keys))
    result = collector.parse(collector.fetch(), observed_at=datetime.now(UTC))
    assert result.skipped_rows == 0 and {r.currency for r in result.records} == {"USD"}
    assert all(0.05 < r.price_per_hour / r.gpu_count < 20 for r in result.records)
    facts_from_the_api(result)


@pytest.mark.skipif(not os.environ.get("HYPERSTACK_API_KEY"), reason="needs HYPERSTACK_API_KEY")
def test_hyperstack_flavors_and_pricebook_live() -> None:
    from collectors.hyperstack.collector import DEFAULT_ENDPOINT, HyperstackCollector

    online(DEFAULT_ENDPOINT)
    collector = HyperstackCollector(_live_settings({"api_key": os.environ["HYPERSTACK_API_KEY"]}))
    result = collector.parse(collector.fetch(), observed_at=datetime.now(UTC))
    assert result.records and {r.price_kind for r in result.records} == {"on_demand"}
    assert all(0.05 < r.price_per_hour / r.gpu_count < 20 for r in result.records)


@pytest.mark.skipif(not os.environ.get("FLUIDSTACK_API_KEY"), reason="needs FLUIDSTACK_API_KEY")
def test_fluidstack_configurations_live() -> None:
    from collectors.fluidstack.collector import DEFAULT_ENDPOINT, FluidstackCollector

    online(DEFAULT_ENDPOINT)
    collector = FluidstackCollector(_live_settings({"api_key": os.environ["FLUIDSTACK_API_KEY"]}))
    result = collector.parse(collector.fetch(), observed_at=datetime.now(UTC))
    assert result.records and result.skipped_rows == 0
    assert all(0.05 < r.price_per_hour / r.gpu_count < 20 for r in result.records)


@pytest.mark.skipif(not os.environ.get("SEEWEB_API_TOKEN"), reason="needs SEEWEB_API_TOKEN")
def test_seeweb_plans_live() -> None:
    from collectors.seeweb.collector import DEFAULT_ENDPOINT, SeewebCollector

    online(DEFAULT_ENDPOINT)
    collector = SeewebCollector(_live_settings({"api_token": os.environ["SEEWEB_API_TOKEN"]}))
    result = collector.parse(collector.fetch(), observed_at=datetime.now(UTC))
    assert result.records and {r.currency for r in result.records} == {"EUR"}
    assert all(0.05 < r.price_per_hour / r.gpu_count < 20 for r in result.records)


def test_scaleway_product_catalog_live() -> None:
    from collectors.scaleway.collector import DEFAULT_ENDPOINT, ScalewayCollector

    online(DEFAULT_ENDPOINT)
    collector = ScalewayCollector(_live_settings({}))
    result = collector.parse(collector.fetch(), observed_at=datetime.now(UTC))
    # The catalog sells L4 and H100 Instances in Paris; each with its memory in its type's name
    assert {"L4", "H100"} <= {r.gpu_model for r in result.records}
    assert {r.currency for r in result.records} == {"EUR"}
    assert all(r.zone and 0.1 < r.price_per_hour / r.gpu_count < 50 for r in result.records)
    assert result.skipped_rows == 0


@pytest.mark.skipif(
    not any(os.environ.get(v) for v in ("NEBIUS_SERVICE_ACCOUNT_CREDENTIALS", "NEBIUS_IAM_TOKEN")),
    reason="needs NEBIUS_SERVICE_ACCOUNT_CREDENTIALS or NEBIUS_IAM_TOKEN",
)
def test_nebius_calculator_live() -> None:
    from collectors.nebius.collector import NebiusCollector

    online("https://compute.api.nebius.cloud")
    keys = {
        "credentials_file": os.environ.get("NEBIUS_SERVICE_ACCOUNT_CREDENTIALS", ""),
        "iam_token": os.environ.get("NEBIUS_IAM_TOKEN", ""),
    }
    collector = NebiusCollector(_live_settings({k: v for k, v in keys.items() if v}))
    result = collector.parse(collector.fetch(), observed_at=datetime.now(UTC))
    assert result.skipped_rows == 0
    assert "on_demand" in {r.price_kind for r in result.records}
    assert all(0.1 < r.price_per_hour / r.gpu_count < 50 for r in result.records)
    facts_from_the_api(result)


@pytest.mark.skipif(
    not (os.environ.get("HUAWEICLOUD_SDK_AK") and os.environ.get("HUAWEICLOUD_SDK_SK")),
    reason="needs HUAWEICLOUD_SDK_AK and HUAWEICLOUD_SDK_SK",
)
def test_huawei_one_region_live() -> None:
    from collectors.huawei import HuaweiCollector

    keys = {
        "access_key_id": os.environ["HUAWEICLOUD_SDK_AK"],
        "secret_access_key": os.environ["HUAWEICLOUD_SDK_SK"],
    }
    settings = ProviderSettings(regions=("cn-north-4",), credentials=keys, timeout=60)
    collector = HuaweiCollector(settings)
    result = collector.parse(collector.fetch(), observed_at=datetime.now(UTC))
    assert {"on_demand", "reserved"} <= {r.price_kind for r in result.records}
    assert {r.currency for r in result.records} == {"CNY"}
    facts_from_the_api(result)


@pytest.mark.skipif(
    not (os.environ.get("VOLCENGINE_ACCESS_KEY") and os.environ.get("VOLCENGINE_SECRET_KEY")),
    reason="needs VOLCENGINE_ACCESS_KEY and VOLCENGINE_SECRET_KEY",
)
def test_volcengine_one_region_live() -> None:
    from collectors.volcengine import VolcengineCollector

    keys = {
        "access_key_id": os.environ["VOLCENGINE_ACCESS_KEY"],
        "secret_access_key": os.environ["VOLCENGINE_SECRET_KEY"],
    }
    settings = ProviderSettings(regions=("cn-beijing",), credentials=keys, timeout=60)
    collector = VolcengineCollector(settings)
    result = collector.parse(collector.fetch(), observed_at=datetime.now(UTC))
    assert {r.price_kind for r in result.records} == {"spot"}
    assert all(r.zone and r.zone.startswith("cn-beijing-") for r in result.records)
    facts_from_the_api(result)
