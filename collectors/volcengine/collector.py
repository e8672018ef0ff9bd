"""Volcano Engine ECS: GPU spot prices through the official SDK (volcenginesdkcore).

Per region: `DescribeInstanceTypes` (every page) names the instance types and their GPUs;
then, per GPU type, `DescribeSpotPriceHistory` (every page) from one history window ago gives
its spot price per zone. Pay-as-you-go and subscription prices are not collected: the only
API that quotes them (the billing center's QueryPriceForPayAsYouGo / QueryPriceForSubscription)
asks for product, configuration and charge-item codes that are not published and that ECS does
not give (docs/providers.md). The answers carry no currency: the `currency` option says which
site the account is on (CNY China, USD International).

Throttling, 5xx and network failures are retried here with exponential backoff; any other
failure fails the run, since a partial answer would close the history of every offer missing.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any, ClassVar

from collectors.base import ParseResult, Payloads, Progress, ProviderSettings
from collectors.common import PayloadShapeError
from collectors.pages import Cap, Cursor
from collectors.retrying import SdkCollector
from collectors.volcengine import parse, sdk

# Regions of Volcano Engine's ECS with GPU instances (its region list): a default list,
# override it with `regions` in config.toml.
GPU_REGIONS = ("cn-beijing", "cn-shanghai", "cn-guangzhou", "ap-southeast-1")
CREDENTIAL_VARS = "VOLCENGINE_ACCESS_KEY and VOLCENGINE_SECRET_KEY"
PAGE_SIZE = 100
MAX_PAGES = 1000
# Spot history comes as points in time; asking at least this far back gives every zone its
# price in force.
SPOT_MIN_WINDOW = timedelta(hours=3)
SPOT_MAX_WINDOW = timedelta(days=30)


def _pages(what: str) -> Cap[str]:
    return Cap(
        Cursor(
            lambda page, number: _token(page),
            stuck=lambda number: PayloadShapeError(
                "volcengine", f"{what} page {number}: NextToken did not move"
            ),
        ),
        MAX_PAGES,
        lambda most: PayloadShapeError("volcengine", f"{what}: more than {most} pages"),
    )


def _token(page: Any) -> str | None:
    token = page.get("NextToken") if isinstance(page, dict) else None
    return token if isinstance(token, str) and token else None


class VolcengineCollector(SdkCollector):
    """ECS GPU types' spot prices in every configured region (the GPU regions by default)."""

    name = "volcengine"
    default_endpoint: ClassVar[str] = f"https://{sdk.DEFAULT_HOST}"
    credential_vars = CREDENTIAL_VARS

    def __init__(
        self,
        settings: ProviderSettings,
        progress: Progress | None = None,
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        **retry: Any,
    ) -> None:
        super().__init__(settings, progress, **retry)
        self._clock = clock
        sdk.endpoint(settings.endpoint)  # a bad endpoint fails here, before any call

    def default_regions(self) -> tuple[str, ...]:
        return GPU_REGIONS

    def fetch(self) -> Payloads:
        self.check_credentials()
        payloads: Payloads = {}
        now = self._clock()
        window = timedelta(seconds=self.settings.history_window_s or 0)
        start = now - min(max(window, SPOT_MIN_WINDOW), SPOT_MAX_WINDOW)
        for number, region in enumerate(self.regions, 1):
            api = sdk.client(self.settings, region)
            types = self._walk(api, f"{region}/types", "DescribeInstanceTypes", {}, payloads)
            for itype in parse.gpu_types(types, f"{region}/types"):
                params = {
                    "InstanceTypeId": itype,
                    "TimestampStart": int(start.timestamp()),
                    "TimestampEnd": int(now.timestamp()),
                }
                key = f"{region}/spot/{itype}"
                self._walk(api, key, "DescribeSpotPriceHistory", params, payloads)
            self.progress(number, len(payloads))
        self.log.info("volcengine: fetched %d regions, %d pages", len(self.regions), len(payloads))
        return payloads

    def parse(self, payloads: Payloads, *, observed_at: datetime) -> ParseResult:
        return parse.parse(
            payloads, currency=self.currency, regions=frozenset(self.regions), log=self.log
        )

    # -- fetch helpers ---------------------------------------------------------------------

    def _walk(
        self, api: Any, key: str, action: str, params: dict[str, Any], payloads: Payloads
    ) -> list[Any]:
        """Every page of `action`, each kept under `<key>/page-<n>`."""
        pages = []

        def ask(number: int, token: str | None) -> Any:
            asked = {**params, "MaxResults": PAGE_SIZE} | ({"NextToken": token} if token else {})
            return self._ask(f"{action} {key} page {number}", partial(sdk.call, api, action, asked))

        for number, page in _pages(f"{action} {key}").walk(ask):
            payloads[f"{key}/page-{number}"] = page
            pages.append(page)
        return pages

    def _ask(self, where: str, do: Callable[[], Any]) -> Any:
        """`do()`, retrying throttling and network errors with backoff; its answer an object."""
        answer = self.retried(where, do, sdk.ApiError, _describe)
        if not isinstance(answer, dict):
            raise PayloadShapeError(self.name, f"{where}: the answer is not an object")
        return answer


def _describe(error: sdk.ApiError, where: str, attempts: int) -> str:
    text = f"{where}: {error.code}: {error.message}"
    if error.request_id:
        text += f" (RequestId {error.request_id})"
    if error.retryable:
        text += f"; gave up after {attempts} attempts"
    if error.refused_auth:
        text += (
            f"; check the key pair in {CREDENTIAL_VARS} (or the variables named by "
            "providers.volcengine.access_key_id_env / secret_access_key_env), and that it "
            "may call ecs:DescribeInstanceTypes and ecs:DescribeSpotPriceHistory"
        )
    return text
