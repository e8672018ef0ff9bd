"""Huawei Cloud ECS: GPU flavor prices from the BSS price inquiries (official SDK).

Per region, ECS ListFlavors names the flavors and their GPUs; then, per GPU flavor still
sold, the BSS "query pay-per-use product prices" (one hour) and "query yearly/monthly product
prices" (1 month, 1 and 3 years) price its Linux resource (`<flavor>.linux`). The China site
(bss.myhuaweicloud.com) answers in CNY, the international one (bss-intl) in USD: the
`currency` option says which site the account is on. `fetch` returns each answer as the API
sent it; the pure parsing lives in `collectors.huawei.parse`.

Throttling, 5xx and network failures are retried here with exponential backoff (the SDK's
own retry is off). An inquiry the BSS refuses for one flavor (400: not sold that way) is kept
as its error object and prices nothing; any other failure fails the run, since a partial
answer would close the history of every offer that is missing.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from functools import partial
from typing import Any, ClassVar

from collectors.base import ParseResult, Payloads, Progress, ProviderSettings
from collectors.huawei import parse, sdk
from collectors.retrying import SdkCollector

# Regions where Huawei Cloud sells GPU-accelerated ECS (the ECS flavor pages): a default list,
# override it with `regions` in config.toml.
GPU_REGIONS = (
    "cn-north-4", "cn-east-3", "cn-south-1", "cn-southwest-2", "ap-southeast-1",
    "ap-southeast-3",
)  # fmt: skip
CREDENTIAL_VARS = "HUAWEICLOUD_SDK_AK and HUAWEICLOUD_SDK_SK"


class HuaweiCollector(SdkCollector):
    """ECS GPU flavors priced by BSS in every configured region (the GPU regions by default)."""

    name = "huawei"
    default_endpoint: ClassVar[str] = sdk.BSS_ENDPOINTS["CNY"]
    credential_vars = CREDENTIAL_VARS

    def __init__(
        self, settings: ProviderSettings, progress: Progress | None = None, **retry: Any
    ) -> None:
        super().__init__(settings, progress, **retry)
        self._bss: Any = None  # built once, on the first region with a GPU flavor

    def default_regions(self) -> tuple[str, ...]:
        return GPU_REGIONS

    def fetch(self) -> Payloads:
        self.check_credentials()
        payloads: Payloads = {}
        for number, region in enumerate(self.regions, 1):
            self._region(region, payloads)
            self.progress(number, len(payloads))
        self.log.info("huawei: fetched %d regions, %d answers", len(self.regions), len(payloads))
        return payloads

    def _region(self, region: str, payloads: Payloads) -> None:
        """One region's flavors, then the two inquiries of each GPU flavor still sold."""
        ecs, creds = self._ask(
            f"ECS client {region}", partial(sdk.ecs_client, self.settings, region)
        )
        key = f"flavors/{region}"
        payloads[key] = self._ask(f"ListFlavors {region}", partial(sdk.list_flavors, ecs))
        flavors = parse.gpu_flavor_ids(payloads[key], key)
        if flavors and self._bss is None:
            self._bss = self._ask(
                "BSS client", partial(sdk.bss_client, self.settings, self.currency)
            )
        project = str(creds.project_id)
        for flavor in flavors:
            for kind, inquiry in (("on_demand", sdk.on_demand), ("period", sdk.period)):
                payloads[f"{kind}/{region}/{flavor}"] = self._price(
                    f"{kind} price of {flavor} in {region}",
                    partial(inquiry, self._bss, project, region, flavor),
                )

    def parse(self, payloads: Payloads, *, observed_at: datetime) -> ParseResult:
        return parse.parse(
            payloads, currency=self.currency, regions=frozenset(self.regions), log=self.log
        )

    # -- fetch helpers ---------------------------------------------------------------------

    def _price(self, where: str, do: Callable[[], Any]) -> Any:
        """A price inquiry's answer, or the error object of one the BSS refused."""
        try:
            return self._ask(where, do, refusable=True)
        except sdk.ApiError as refused:
            self.log.info("huawei: %s: refused: %s", where, refused)
            return {"error_code": refused.code, "error_msg": refused.message}

    def _ask(self, where: str, do: Callable[[], Any], *, refusable: bool = False) -> Any:
        """`do()`, retrying throttling and network errors with backoff; with `refusable`, an
        inquiry refused for its product is raised as it is, for `_price`."""
        return self.retried(
            where,
            do,
            sdk.ApiError,
            _describe,
            passes=lambda error: refusable and error.refused_product,
        )


def _describe(error: sdk.ApiError, where: str, attempts: int) -> str:
    text = f"{where}: {error.code}: {error.message}"
    if error.request_id:
        text += f" (request id {error.request_id})"
    if error.retryable:
        text += f"; gave up after {attempts} attempts"
    if error.refused_auth:
        text += (
            f"; check the key pair in {CREDENTIAL_VARS} (or the variables named by "
            "providers.huawei.access_key_id_env / secret_access_key_env), and that it may "
            "call ecs:cloudServerFlavors:get and bss:discount:view"
        )
    return text
