"""Huawei Cloud's official SDK: the ECS and BSS clients, the calls, and their errors.

Requests are signed with the AK/SK (SDK-HMAC-SHA256). The SDK finds the project of each
region and the account's domain through IAM when a client is built, so one configured
`endpoint` (tests, the demo) stands in for IAM, ECS and BSS alike. Each call's answer is
returned as the JSON the API sent (`raw_content`), never the SDK's models, so that what is
parsed is what was received.
"""

from __future__ import annotations

import json
from typing import Any

from huaweicloudsdkbss.v2 import (
    BssClient,
    DemandProductInfo,
    ListOnDemandResourceRatingsRequest,
    ListRateOnPeriodDetailRequest,
    PeriodProductInfo,
    RateOnDemandReq,
    RateOnPeriodReq,
)
from huaweicloudsdkcore.auth.credentials import BasicCredentials, GlobalCredentials
from huaweicloudsdkcore.exceptions import exceptions as sdk_errors
from huaweicloudsdkcore.http.http_config import HttpConfig
from huaweicloudsdkcore.region.region import Region
from huaweicloudsdkecs.v2 import EcsClient, ListFlavorsRequest

from collectors import retrying
from collectors.base import ProviderSettings
from collectors.huawei.parse import TERMS

BSS_ENDPOINTS = {  # the China site's BSS, and the international site's
    "CNY": "https://bss.myhuaweicloud.com",
    "USD": "https://bss-intl.myhuaweicloud.com",
}
ECS_ENDPOINT = "https://ecs.{region}.myhuaweicloud.com"
SERVICE_TYPE = "hws.service.type.ec2"
RESOURCE_TYPE = "hws.resource.type.vm"
HOUR = 4  # usage_measure_id of an hour
PERIOD_TYPES = {1: (2, 1), 12: (3, 1), 36: (3, 3)}  # months -> (period_type, period_num)
THROTTLED = ("APIGW.0308", "CBC.0101")  # the gateway's and BSS's "too many requests"


class ApiError(retrying.ApiError):
    """An error answer, a failed connection or an answer the SDK could not read."""

    @property
    def retryable(self) -> bool:
        return (
            self.code in ("ConnectionError", "Timeout") or self.code in THROTTLED or self.overloaded
        )

    @property
    def refused_auth(self) -> bool:
        return self.status in (401, 403)

    @property
    def refused_product(self) -> bool:
        """A 400 to a price inquiry: the product is not sold that way (term, region)."""
        return self.status == 400


def http_config(settings: ProviderSettings) -> HttpConfig:
    config = HttpConfig.get_default_config()
    config.timeout = (settings.timeout, settings.timeout)
    config.retry_times = 0  # retried by the collector, with its own backoff and limit
    return config


def ecs_client(settings: ProviderSettings, region: str) -> tuple[Any, BasicCredentials]:
    """A region's ECS client (IAM finds the region's project as it is built)."""
    creds = _basic(settings)
    endpoint = settings.endpoint or ECS_ENDPOINT.format(region=region)
    client = call(
        lambda: (
            EcsClient.new_builder()
            .with_credentials(creds)
            .with_http_config(http_config(settings))
            .with_region(Region(region, endpoint))
            .build()
        )
    )
    return client, creds


def bss_client(settings: ProviderSettings, currency: str) -> Any:
    """The BSS client of the account's site (IAM finds the account's domain as it is built)."""
    keys = settings.credentials
    creds = GlobalCredentials(keys.get("access_key_id"), keys.get("secret_access_key"))
    if settings.endpoint:
        creds.with_iam_endpoint(settings.endpoint)
    endpoint = settings.endpoint or BSS_ENDPOINTS[currency]
    return call(
        lambda: (
            BssClient.new_builder()
            .with_credentials(creds)
            .with_http_config(http_config(settings))
            .with_region(Region("globe", endpoint))
            .build()
        )
    )


def _basic(settings: ProviderSettings) -> BasicCredentials:
    keys = settings.credentials
    creds = BasicCredentials(keys.get("access_key_id"), keys.get("secret_access_key"))
    if settings.endpoint:
        creds.with_iam_endpoint(settings.endpoint)
    return creds


def list_flavors(client: Any) -> Any:
    return call(lambda: _body(client.list_flavors(ListFlavorsRequest())))


def on_demand(client: Any, project_id: str, region: str, flavor: str) -> Any:
    """One hour of the flavor's Linux resource, pay-per-use."""
    info = DemandProductInfo(
        id=flavor,
        cloud_service_type=SERVICE_TYPE,
        resource_type=RESOURCE_TYPE,
        resource_spec=f"{flavor}.linux",
        region=region,
        usage_factor="Duration",
        usage_value=1,
        usage_measure_id=HOUR,
        subscription_num=1,
    )
    body = RateOnDemandReq(project_id=project_id, product_infos=[info])
    request = ListOnDemandResourceRatingsRequest(body=body)
    return call(lambda: _body(client.list_on_demand_resource_ratings(request)))


def period(client: Any, project_id: str, region: str, flavor: str) -> Any:
    """The flavor's Linux resource for each term of TERMS, each a product whose id is its
    months."""
    infos = [
        PeriodProductInfo(
            id=str(months),
            cloud_service_type=SERVICE_TYPE,
            resource_type=RESOURCE_TYPE,
            resource_spec=f"{flavor}.linux",
            region=region,
            period_type=PERIOD_TYPES[months][0],
            period_num=PERIOD_TYPES[months][1],
            subscription_num=1,
        )
        for months in TERMS
    ]
    request = ListRateOnPeriodDetailRequest(
        body=RateOnPeriodReq(project_id=project_id, product_infos=infos)
    )
    return call(lambda: _body(client.list_rate_on_period_detail(request)))


def _body(response: Any) -> Any:
    raw = getattr(response, "raw_content", None)
    if not isinstance(raw, bytes | str):
        raise ApiError("InvalidAnswer", "the answer has no body")
    return json.loads(raw)


def call(do: Any) -> Any:
    """`do()`, every way the SDK fails turned into an ApiError."""
    try:
        return do()
    except sdk_errors.ServiceResponseException as exc:
        raise _service_error(exc) from exc
    except sdk_errors.RequestTimeoutException as exc:
        raise ApiError("Timeout", _text(exc.error_msg)) from exc
    except sdk_errors.ConnectionException as exc:
        raise ApiError("ConnectionError", _text(exc.error_msg)) from exc
    except sdk_errors.SdkException as exc:
        # The project or domain lookup wraps IAM's own error; its kind decides the retry.
        cause = exc.__context__
        if isinstance(cause, sdk_errors.ServiceResponseException):
            raise _service_error(cause) from exc
        raise ApiError("IamLookup", _text(exc.error_msg)) from exc
    except RecursionError as exc:
        raise ApiError("InvalidAnswer", "the answer is JSON nested too deeply") from exc
    except ApiError:
        raise
    # The SDK reads its answers into models and may trip on any odd value; none is a bug of
    # ours to hide, but each is an answer not understood, named rather than a traceback.
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise ApiError("InvalidAnswer", f"the answer is not understood: {_text(exc)}") from exc


def _service_error(exc: Any) -> ApiError:
    return ApiError(
        str(exc.error_code or exc.status_code),
        _text(exc.error_msg),
        exc.status_code if isinstance(exc.status_code, int) else None,
        exc.request_id,
    )


def _text(value: Any) -> str:
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    return " ".join(text.split())[:300]
