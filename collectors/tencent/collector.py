"""Tencent Cloud CVM: GPU instance prices from DescribeZoneInstanceConfigInfos (official SDK).

One signed call per region (TC3-HMAC-SHA256, so through `tencentcloud-sdk-python`) answers
for every zone, instance type and charge type at once, filtered at the server to the GPU
families and to pay-as-you-go, spot and prepaid. `fetch` returns each answer as the API sent
it; the pure parsing lives in `collectors.tencent.parse`.

Errors arrive with HTTP 200 inside `Response.Error`. Throttling (`RequestLimitExceeded`) and
network failures are retried here with exponential backoff: the SDK's own StandardRetryer
keeps the first error and re-raises it even after a retry succeeded.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar
from urllib.parse import urlsplit

from tencentcloud.common import credential
from tencentcloud.common.exception.tencent_cloud_sdk_exception import TencentCloudSDKException
from tencentcloud.common.profile.client_profile import ClientProfile
from tencentcloud.common.profile.http_profile import HttpProfile
from tencentcloud.cvm.v20170312 import cvm_client

from collectors.base import ParseResult, Payloads, Progress, ProviderSettings
from collectors.common import ConfigError, PayloadShapeError
from collectors.retrying import ApiError, SdkCollector
from collectors.tencent import parse

DEFAULT_ENDPOINT = "https://cvm.tencentcloudapi.com"
ACTION = parse.ACTION
# The API's Region list (intl doc 213/33254) crossed with where Tencent sells GPU instances
# (GPU instance docs): a default list, override it with `regions` in config.toml.
GPU_REGIONS = (
    "ap-guangzhou", "ap-shanghai", "ap-beijing", "ap-nanjing", "ap-chengdu", "ap-chongqing",
    "ap-hongkong", "ap-singapore", "na-siliconvalley", "na-ashburn", "eu-frankfurt",
)  # fmt: skip
# The families of collectors.gpus plus the HCC ones whose sizes are not verified yet: asking
# for them too makes any type they sell show up as an unknown instance type, not vanish.
FAMILIES = (
    "GN7", "GN7vw", "GN7vi", "GI3X", "GN10X", "GN10Xp", "GT4", "PNV4", "HCCPNV4h", "HCCPNV5",
)  # fmt: skip
CHARGE_TYPES = tuple(parse.CHARGE_KINDS)
CREDENTIAL_VARS = "TENCENTCLOUD_SECRET_ID and TENCENTCLOUD_SECRET_KEY"


class TencentCollector(SdkCollector):
    """DescribeZoneInstanceConfigInfos in every configured region (the GPU regions by default)."""

    name = "tencent"
    default_endpoint: ClassVar[str] = DEFAULT_ENDPOINT
    credential_keys = ("secret_id", "secret_key")
    credential_vars = CREDENTIAL_VARS

    def __init__(
        self, settings: ProviderSettings, progress: Progress | None = None, **retry: Any
    ) -> None:
        super().__init__(settings, progress, **retry)
        self._client_profile = self._profile()  # a bad endpoint fails here, before any call

    def default_regions(self) -> tuple[str, ...]:
        return GPU_REGIONS

    def request(self) -> dict[str, Any]:
        """The request body: the GPU families, in the three charge types we store."""
        return {
            "Filters": [
                {"Name": "instance-family", "Values": list(FAMILIES)},
                {"Name": "instance-charge-type", "Values": list(CHARGE_TYPES)},
            ]
        }

    def fetch(self) -> Payloads:
        self.check_credentials()
        creds = credential.Credential(
            self.settings.credentials["secret_id"], self.settings.credentials["secret_key"]
        )
        payloads: Payloads = {}
        items = 0
        # Any region that fails fails the run: a partial answer would close the history of
        # every offer in the regions that are missing.
        for number, region in enumerate(self.regions, 1):
            client = cvm_client.CvmClient(creds, region, self._client_profile)
            answer = self._ask(client, region)
            payloads[f"{ACTION}/{region}"] = answer
            items += len(answer["Response"]["InstanceTypeQuotaSet"])
            self.progress(number, items)
        self.log.info("tencent: fetched %d regions, %d items", len(payloads), items)
        return payloads

    def parse(self, payloads: Payloads, *, observed_at: datetime) -> ParseResult:
        return parse.parse(
            payloads, currency=self.currency, regions=frozenset(self.regions), log=self.log
        )

    # -- fetch helpers ---------------------------------------------------------------------

    def _profile(self) -> ClientProfile:
        http = HttpProfile(reqTimeout=self.settings.timeout)
        endpoint = self.settings.endpoint
        if endpoint:
            parts = urlsplit(endpoint)
            # The SDK takes host[:port] and a scheme apart, and always posts to "/".
            if parts.path not in ("", "/") or parts.query:
                raise ConfigError(
                    f"providers.tencent.endpoint: {endpoint!r}: the API is served at the root "
                    "of its host; give scheme://host[:port] only"
                )
            http = HttpProfile(
                endpoint=parts.netloc, protocol=parts.scheme, reqTimeout=self.settings.timeout
            )
        # English error messages; and no region breaker, which would switch to a backup host
        # (not the configured endpoint) after failures.
        return ClientProfile(httpProfile=http, language="en-US", disable_region_breaker=True)

    def _ask(self, client: Any, region: str) -> dict[str, Any]:
        """One region's answer, retrying throttling and network errors with backoff."""
        where = f"{ACTION} {region}"
        return self.retried(
            where, lambda: _checked(_call(client, self.request()), where), _ApiError,
            _ApiError.describe,
        )  # fmt: skip


class _ApiError(ApiError):
    """An error answer, however the SDK let it through (raised, or left in the body)."""

    @property
    def retryable(self) -> bool:
        # RequestLimitExceeded and its .UinLimitExceeded / .GlobalRegionUinLimitExceeded kinds;
        # the SDK's names for a failed connection and for a non-200 HTTP status.
        return self.code.startswith("RequestLimitExceeded") or self.code in (
            "ClientNetworkError",
            "ServerNetworkError",
        )

    def describe(self, where: str, attempts: int) -> str:
        text = f"{where}: {self.code}: {self.message}"
        if self.request_id:
            text += f" (RequestId {self.request_id})"
        if self.retryable:
            text += f"; gave up after {attempts} attempts"
        if self.code.startswith("AuthFailure"):
            text += (
                f"; check the key pair in {CREDENTIAL_VARS} (or the variables named by "
                "providers.tencent.secret_id_env / secret_key_env)"
            )
        elif self.code.startswith("UnauthorizedOperation"):
            text += "; the key needs cvm:DescribeZoneInstanceConfigInfos"
        return text


def _call(client: Any, params: dict[str, Any]) -> Any:
    try:
        answer = client.call_json(ACTION, params)
    except TencentCloudSDKException as exc:
        raise _ApiError(str(exc.code), _text(exc.message), request_id=exc.requestId) from exc
    except ValueError as exc:  # the body is not JSON (a proxy's error page)
        raise _ApiError("InvalidAnswer", f"the answer is not JSON: {exc}") from exc
    except RecursionError as exc:  # arrays in arrays ...: no answer of this API
        raise _ApiError("InvalidAnswer", "the answer is JSON nested too deeply") from exc
    except (KeyError, TypeError) as exc:  # the SDK's own error check found no Response
        raise _ApiError("InvalidAnswer", "the answer has no Response object") from exc
    # The SDK sees `Response.Error` only when Content-Type is exactly "application/json"; with
    # "; charset=utf-8" it hands the error over as if it were an answer.
    response = answer.get("Response") if isinstance(answer, dict) else None
    if isinstance(response, dict) and isinstance(response.get("Error"), dict):
        error = response["Error"]
        code, message = str(error.get("Code")), _text(error.get("Message"))
        raise _ApiError(code, message, request_id=response.get("RequestId"))
    return answer


def _checked(answer: Any, where: str) -> dict[str, Any]:
    response = answer.get("Response") if isinstance(answer, dict) else None
    if not isinstance(response, dict) or not isinstance(response.get("InstanceTypeQuotaSet"), list):
        raise PayloadShapeError(
            TencentCollector.name, f"{where}: the answer has no Response.InstanceTypeQuotaSet list"
        )
    return dict(answer)


def _text(value: Any) -> str:
    # ServerNetworkError carries the HTTP body as bytes.
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    return text.strip()[:300]
