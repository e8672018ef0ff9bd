"""The ECS SDK's client for one region, its retry policy, and its errors as FetchErrors.

Throttling (`Throttling*`, `ServiceUnavailable`, a `x-acs-retry-after` answer), 5xx and network
errors are retried by the SDK's own policy with exponential backoff; what still fails is named
by the call, the code and the HTTP status.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from alibabacloud_ecs20140526.client import Client
from alibabacloud_tea_openapi import models as open_api_models
from alibabacloud_tea_openapi.exceptions import AlibabaCloudException
from darabonba.policy.retry import RetryCondition, RetryOptions

from collectors.base import ProviderSettings
from collectors.common import FetchError

THROTTLING_CODES = (
    "Throttling", "Throttling.User", "Throttling.Api", "Throttling.Resource",
    "ServiceUnavailable",
)  # fmt: skip
AUTH_CODES = frozenset(
    {
        "InvalidAccessKeyId.NotFound",
        "InvalidAccessKeyId.Inactive",
        "InvalidAccessKeySecret",
        "SignatureDoesNotMatch",
        "IncompleteSignature",
    }
)
CREDENTIAL_HINT = (
    "check ALIBABA_CLOUD_ACCESS_KEY_ID and ALIBABA_CLOUD_ACCESS_KEY_SECRET "
    "(or the variables named by access_key_id_env / access_key_secret_env)"
)


def client(settings: ProviderSettings, region: str, backoff_ms: int, backoff_cap_ms: int) -> Client:
    """A client of `region`'s endpoint (or the configured one), retrying as `retry_options`."""
    creds = settings.credentials
    protocol, endpoint = _endpoint(settings.endpoint)
    timeout_ms = int(settings.timeout * 1000)
    config = open_api_models.Config(
        access_key_id=creds.get("access_key_id"),
        access_key_secret=creds.get("access_key_secret"),
        region_id=region,
        endpoint=endpoint,
        protocol=protocol,
        read_timeout=timeout_ms,
        connect_timeout=timeout_ms,
        retry_options=retry_options(settings.max_retries, backoff_ms, backoff_cap_ms),
    )
    return Client(config)


def retry_options(max_retries: int, backoff_ms: int, backoff_cap_ms: int) -> RetryOptions:
    """The SDK's retry policy: throttling, 5xx and network errors, with backoff."""
    condition = RetryCondition(
        max_attempts=max_retries + 1,
        backoff={
            "policy": "ExponentialWithEqualJitter",
            "period": backoff_ms,
            "cap": backoff_cap_ms,
        },
        exception=["ThrottlingException", "ServerException", "RetryError"],
        error_code=list(THROTTLING_CODES),
        max_delay=backoff_cap_ms,
    )
    return RetryOptions(retryable=True, retry_condition=[condition])


def api_error(
    provider: str, what: str, exc: AlibabaCloudException, data: dict[str, Any], max_retries: int
) -> FetchError:
    """The FetchError of a call the SDK gave up on (its retries spent)."""
    status, code = exc.status_code, exc.code
    message = data.get("Message") or exc.message
    if code in AUTH_CODES:
        return FetchError(
            provider, f"{what}: {code}: the access key was refused; {CREDENTIAL_HINT}"
        )
    if code in THROTTLING_CODES or exc.name == "ThrottlingException":
        attempts = max_retries + 1
        return FetchError(
            provider,
            f"{what}: still throttled after {attempts} attempts ({code}, HTTP {status}): {message}",
        )
    return FetchError(provider, f"{what}: {code} (HTTP {status}): {message}")


def _endpoint(url: str | None) -> tuple[str | None, str | None]:
    """(protocol, host[:port]) for the SDK, which takes no path; (None, None) = the real API."""
    if not url:
        return None, None
    parts = urlsplit(url)
    if parts.path.strip("/"):
        raise FetchError("alibaba", f"endpoint {url!r}: the ECS API lives at the root of its host")
    return parts.scheme, parts.netloc
