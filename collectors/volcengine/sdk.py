"""Volcano Engine's official SDK (`volcenginesdkcore`): one region's ECS calls and their errors.

Requests are signed with the AK/SK (HMAC-SHA256, the credential scope naming the region and
the `ecs` service) and sent as `GET /?Action=...&Version=2020-04-01` to
`open.volcengineapi.com`, or the configured endpoint. The SDK's universal call answers the
`Result` object of each answer as the API sent it (JSON, the API's own field names), which is
what is kept and parsed. The SDK's own retry is off: the collector retries, with its backoff.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

import urllib3
import volcenginesdkcore
from volcenginesdkcore.rest import ApiException
from volcenginesdkcore.universal import UniversalApi, UniversalInfo

from collectors import retrying
from collectors.base import ProviderSettings
from collectors.common import ConfigError

DEFAULT_HOST = "open.volcengineapi.com"
SERVICE, VERSION = "ecs", "2020-04-01"
THROTTLED = ("AccountFlowLimitExceeded", "FlowLimitExceeded", "RequestLimitExceeded")


class ApiError(retrying.ApiError):
    """An error answer, a failed connection or an answer the SDK could not read."""

    @property
    def retryable(self) -> bool:
        return self.code == "ConnectionError" or self.code.startswith(THROTTLED) or self.overloaded

    @property
    def refused_auth(self) -> bool:
        return self.status in (401, 403) or self.code.startswith(
            ("InvalidAccessKey", "SignatureDoesNotMatch", "InvalidSecretToken", "AccessDenied")
        )


def client(settings: ProviderSettings, region: str) -> UniversalApi:
    """A universal client of `region`, at the configured endpoint (scheme://host[:port])."""
    config = volcenginesdkcore.Configuration()
    config.ak = settings.credentials.get("access_key_id")
    config.sk = settings.credentials.get("secret_access_key")
    config.region = region
    config.scheme, config.host = endpoint(settings.endpoint)
    config.connect_timeout = config.read_timeout = settings.timeout
    config.auto_retry = False
    config.num_max_retries = 0
    return UniversalApi(volcenginesdkcore.ApiClient(config))


def endpoint(endpoint: str | None) -> tuple[str, str]:
    if not endpoint:
        return "https", DEFAULT_HOST
    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.path not in ("", "/"):
        raise ConfigError(
            f"providers.volcengine.endpoint: {endpoint!r}: the API is served at the root of "
            "its host; give scheme://host[:port] only"
        )
    return parts.scheme, parts.netloc


def call(api: UniversalApi, action: str, params: dict[str, Any]) -> Any:
    """The `Result` of `action` with `params`, every way the SDK fails an ApiError."""
    info = UniversalInfo(
        method="GET", service=SERVICE, version=VERSION, action=action, content_type="text/plain"
    )
    try:
        return api.do_call(info, params)
    except ApiException as exc:
        raise _answered(exc) from exc
    except RecursionError as exc:
        raise ApiError("InvalidAnswer", "the answer is JSON nested too deeply") from exc
    except (urllib3.exceptions.HTTPError, OSError) as exc:  # refused, reset, timed out
        raise ApiError("ConnectionError", _text(exc)) from exc
    # The SDK reads the answer's envelope and may trip on any odd value: an answer not
    # understood, named rather than a traceback.
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise ApiError("InvalidAnswer", f"the answer is not understood: {_text(exc)}") from exc


def _answered(exc: ApiException) -> ApiError:
    """An error answer: `ResponseMetadata.Error` where the body has one, else its status."""
    status = exc.status if isinstance(exc.status, int) else None
    try:
        body = json.loads(exc.body) if exc.body else None
    except (ValueError, TypeError, RecursionError):
        body = None
    meta = body.get("ResponseMetadata") if isinstance(body, dict) else None
    error = meta.get("Error") if isinstance(meta, dict) else None
    if isinstance(error, dict):
        request_id = meta.get("RequestId") if isinstance(meta, dict) else None
        code, message = str(error.get("Code"))[:80], _text(error.get("Message"))
        return ApiError(code, message, status, str(request_id)[:80] if request_id else None)
    if status is None:  # the SDK's own name for a failed connection
        return ApiError("ConnectionError", _text(exc.reason))
    return ApiError(f"HTTP {status}", _text(exc.reason), status)


def _text(value: Any) -> str:
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    return " ".join(text.split())[:300]
