"""Per-provider price collectors, registered by their one name.

The registry says, per provider, which class collects it and which config keys and credential
variables it takes, without importing it: a provider's module (and its SDK) is imported only
when that provider runs, so `gpu-tracker collect --provider azure` never pays for boto3.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # reading the registry (config, the CLI's filters) needs no collector
    from collectors.base import Collector


@dataclass(frozen=True)
class ProviderInfo:
    target: str  # "module:Class"; the class knows its real endpoint, used when none is configured
    # Extra config keys of [providers.<name>] and the type each takes: str, list, or a tuple of
    # the only strings allowed.
    options: dict[str, Any] = field(default_factory=dict)
    # Credential name -> default environment variable; `<name>_env` in the config overrides it.
    credential_env: dict[str, str] = field(default_factory=dict)
    # Credentials passed on when set, but not required (the SDK has its own chain).
    optional_credential_env: dict[str, str] = field(default_factory=dict)
    default_interval: str = "1h"
    # Other names people type for the provider (any case); the one name stays the stored one.
    aliases: tuple[str, ...] = ()


# One name per provider, used everywhere: module or package, registry key, config section,
# fixtures folder and the `provider` column.
REGISTRY: dict[str, ProviderInfo] = {
    "aws": ProviderInfo(
        "collectors.aws:AwsCollector",
        options={
            "pricing_endpoint": str,
            "ec2_endpoint": str,
            "instance_types": list,
            # auto: the APIs when credentials are found, else the public files (no account).
            "source": ("auto", "api", "public"),
            "offers_endpoint": str,
            "spot_feed_url": str,
            "spot_advisor_url": str,
        },
        # Absent keys are fine: boto3's own chain (profiles, SSO, instance roles) still applies.
        optional_credential_env={
            "aws_access_key_id": "AWS_ACCESS_KEY_ID",
            "aws_secret_access_key": "AWS_SECRET_ACCESS_KEY",
            "aws_session_token": "AWS_SESSION_TOKEN",
        },
        # Spot prices move all the time; list prices rarely.
        default_interval="1h",
    ),
    "azure": ProviderInfo(
        "collectors.azure:AzureCollector",
        default_interval="6h",
    ),
    "gcp": ProviderInfo(
        "collectors.gcp:GcpCollector",
        # Without a key, Application Default Credentials (the collector checks for them).
        optional_credential_env={"api_key": "GOOGLE_API_KEY"},
        # List prices and commitments; spot prices move, but the catalog is per region.
        default_interval="6h",
    ),
    "tencent": ProviderInfo(
        "collectors.tencent:TencentCollector",
        # The answer carries no currency: it is the account's site (CNY China, USD intl).
        options={"currency": ("CNY", "USD")},
        credential_env={
            "secret_id": "TENCENTCLOUD_SECRET_ID",
            "secret_key": "TENCENTCLOUD_SECRET_KEY",
        },
        # Spot prices move; one call per region answers for every zone and charge type.
        default_interval="1h",
    ),
    "alibaba": ProviderInfo(
        "collectors.alibaba:AlibabaCollector",
        credential_env={
            "access_key_id": "ALIBABA_CLOUD_ACCESS_KEY_ID",
            "access_key_secret": "ALIBABA_CLOUD_ACCESS_KEY_SECRET",
        },
        # Spot history is hourly points; subscription and pay-as-you-go prices rarely move.
        default_interval="1h",
    ),
    "lambdalabs": ProviderInfo(
        "collectors.lambdalabs:LambdaCollector",
        credential_env={"api_key": "LAMBDA_API_KEY"},
        aliases=("lambda",),
        # Prices rarely move, but capacity (which regions can launch a type) does.
        default_interval="30m",
    ),
    "paperspace": ProviderInfo(
        "collectors.paperspace:PaperspaceCollector",
        credential_env={"token": "DIGITALOCEAN_TOKEN"},
        # Paperspace GPU machines are sold as DigitalOcean GPU Droplets.
        aliases=("digitalocean",),
        default_interval="6h",
    ),
    "oci": ProviderInfo(
        "collectors.oci:OciCollector",
        # The Cost Estimator's shapes (which part a shape is billed by) live on another host.
        options={"shapes_endpoint": str},
        aliases=("oracle",),
        # A public list price; it moves a few times a year.
        default_interval="6h",
    ),
    "vultr": ProviderInfo(
        "collectors.vultr:VultrCollector",
        # Plans are public; which locations can deploy a plan changes with capacity.
        default_interval="1h",
    ),
    "vastai": ProviderInfo(
        "collectors.vastai:VastaiCollector",
        # The search needs no account; a key is sent when set (the CLI's Bearer header).
        optional_credential_env={"api_key": "VAST_API_KEY"},
        aliases=("vast", "vast.ai"),
        # A marketplace: the cheapest offers move minute by minute.
        default_interval="30m",
    ),
    "runpod": ProviderInfo(
        "collectors.runpod:RunpodCollector",
        credential_env={"api_key": "RUNPOD_API_KEY"},
        # List prices per GPU; stock (whether a cloud can start a pod) moves.
        default_interval="30m",
    ),
    "jarvislabs": ProviderInfo(
        "collectors.jarvislabs:JarvislabsCollector",
        credential_env={"api_key": "JL_API_KEY"},
        # List prices per GPU; which regions have free GPUs moves.
        default_interval="30m",
    ),
    "cloudrift": ProviderInfo(
        "collectors.cloudrift:CloudriftCollector",
        # The instance-type list is public; which datacenters have free nodes moves.
        default_interval="30m",
    ),
    "verda": ProviderInfo(
        "collectors.verda:VerdaCollector",
        # OAuth2 client credentials: a token is asked for each collection.
        credential_env={"client_id": "VERDA_CLIENT_ID", "client_secret": "VERDA_CLIENT_SECRET"},
        aliases=("datacrunch",),
        # List prices rarely move; which locations can start a type does.
        default_interval="30m",
    ),
    "hyperstack": ProviderInfo(
        "collectors.hyperstack:HyperstackCollector",
        credential_env={"api_key": "HYPERSTACK_API_KEY"},
        aliases=("nexgencloud",),
        # List prices per GPU; which flavors have stock moves.
        default_interval="30m",
    ),
    "fluidstack": ProviderInfo(
        "collectors.fluidstack:FluidstackCollector",
        credential_env={"api_key": "FLUIDSTACK_API_KEY"},
        # List prices per GPU; which configurations can be deployed where moves.
        default_interval="30m",
    ),
    "seeweb": ProviderInfo(
        "collectors.seeweb:SeewebCollector",
        credential_env={"api_token": "SEEWEB_API_TOKEN"},
        # A list price in euros; the regions a plan can be created in move now and then.
        default_interval="6h",
    ),
    "scaleway": ProviderInfo(
        "collectors.scaleway:ScalewayCollector",
        # The public product catalog: no account; list prices per zone move rarely.
        default_interval="6h",
    ),
    "nebius": ProviderInfo(
        "collectors.nebius:NebiusCollector",
        # A service account's credentials file (the SDK signs and exchanges it for a token), or
        # an IAM token; the collector asks for one of the two.
        optional_credential_env={
            "credentials_file": "NEBIUS_SERVICE_ACCOUNT_CREDENTIALS",
            "iam_token": "NEBIUS_IAM_TOKEN",
        },
        # Calculator list prices; they move a few times a year.
        default_interval="6h",
    ),
    "huawei": ProviderInfo(
        "collectors.huawei:HuaweiCollector",
        # The answer's currency is the account's site: CNY China, USD International.
        options={"currency": ("CNY", "USD")},
        credential_env={
            "access_key_id": "HUAWEICLOUD_SDK_AK",
            "secret_access_key": "HUAWEICLOUD_SDK_SK",
        },
        # List prices; one inquiry per flavor and region, so not every few minutes.
        default_interval="6h",
    ),
    "volcengine": ProviderInfo(
        "collectors.volcengine:VolcengineCollector",
        # The answer carries no currency: it is the account's site (CNY China, USD intl).
        options={"currency": ("CNY", "USD")},
        credential_env={
            "access_key_id": "VOLCENGINE_ACCESS_KEY",
            "secret_access_key": "VOLCENGINE_SECRET_KEY",
        },
        aliases=("volcano", "volcano engine"),
        # Spot prices move; each GPU type's history since the last collection is asked.
        default_interval="1h",
    ),
}


def provider_name(typed: str) -> str | None:
    """The one name of the provider a person typed (any case, or an alias); None if unknown."""
    wanted = typed.strip().lower()
    for name, info in REGISTRY.items():
        if wanted == name or wanted in info.aliases:
            return name
    return None


def provider_names() -> str:
    """Every accepted provider name, aliases in brackets: for messages refusing one."""
    return ", ".join(
        name + (f" ({', '.join(info.aliases)})" if info.aliases else "")
        for name, info in sorted(REGISTRY.items())
    )


def collector_class(name: str) -> type[Collector]:
    """The collector class registered for `name` (imports its module on first use)."""
    try:
        target = REGISTRY[name].target
    except KeyError:
        raise KeyError(f"unknown provider {name!r}; known: {', '.join(sorted(REGISTRY))}") from None
    module_name, _, class_name = target.partition(":")
    cls: type[Collector] = getattr(importlib.import_module(module_name), class_name)
    return cls
