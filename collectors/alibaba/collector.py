"""Alibaba Cloud ECS: GPU prices through the official SDK (alibabacloud-ecs20140526).

One collection is:

- `DescribeInstanceTypes` once (the catalogue is global), for the GPU families: its GPU model,
  count and per-GPU memory are the facts of every type it lists with GPUs (the GPU table is the
  cross-check, and the fallback where the answer is silent).
- per region (each on its own regional endpoint unless `endpoint` is set) and per GPU type:
  `DescribePrice` pay-as-you-go (Hour 1) and subscription (Month 1, 3, 6, Year 1, 3), then
  `DescribeSpotPriceHistory` (every zone, every page) from one history window ago. A type the
  region does not sell one way (pay-as-you-go) is still asked for the others.

Throttling, 5xx and network errors are retried by the SDK's own retry policy
(`collectors.alibaba.sdk`); what still fails fails the whole run with a FetchError naming the
call, the region and the code. Parsing is
in `collectors.alibaba.parse`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

from alibabacloud_ecs20140526 import models
from alibabacloud_ecs20140526.client import Client
from alibabacloud_tea_openapi.exceptions import AlibabaCloudException
from darabonba.runtime import RuntimeOptions
from Tea.exceptions import TeaException, ValidateException

from collectors.alibaba import catalogue, parse, sdk
from collectors.base import Collector, ParseResult, Payloads
from collectors.common import FetchError, PayloadShapeError
from collectors.pages import Cap, Cursor, Offset

# A default list: the regions where Alibaba sells GPU instances to most accounts. Set
# `regions` to collect others (DescribeRegions lists them all).
GPU_REGIONS = (
    "cn-hangzhou", "cn-shanghai", "cn-beijing", "cn-zhangjiakou", "cn-shenzhen",
    "cn-hongkong", "ap-southeast-1", "us-west-1", "eu-central-1",
)  # fmt: skip
GPU_FAMILIES = (
    "ecs.gn6i", "ecs.gn6v", "ecs.gn6e", "ecs.gn7", "ecs.gn7i", "ecs.gn7e", "ecs.gn8is", "ecs.gn8v",
)  # fmt: skip
# Pay-as-you-go, then the subscription terms users compare (a quote is the term's total).
PRICE_QUERIES = (("Hour", 1), ("Month", 1), ("Month", 3), ("Month", 6), ("Year", 1), ("Year", 3))
# Every GPU family here takes ESSDs and some take nothing else; DescribePrice's default system
# disk (cloud_efficiency) would be refused for them. The disk is priced apart and not stored,
# so when a type refuses one category the quote is asked again with the next: the instance
# module's price does not depend on it.
SYSTEM_DISKS = ("cloud_essd", "cloud_ssd", "cloud_efficiency")
DISK_REFUSED_CODES = frozenset(
    {"InvalidSystemDiskCategory.ValueNotSupported", "InvalidInstanceType.NotSupportDiskCategory"}
)
TYPES_PAGE_SIZE = 100  # the documented maximum since 2023-11-15 (the SDK still says 1600)
# Spot history comes as hourly points; the API's own default window is 3 h, so asking at
# least that far back gives every zone its price in force. It refuses more than 30 days.
SPOT_MIN_WINDOW = timedelta(hours=3)
SPOT_MAX_WINDOW = timedelta(days=30)
MAX_PAGES = 1000
SPOT_PATH = ("SpotPrices", "SpotPriceType")


def _next_token(page: Any, number: int) -> str | None:
    return page.get("NextToken") or None


TYPE_PAGES = Cap(
    Cursor(
        _next_token,
        # The same page again: the type list would be cut short.
        stuck=lambda number: PayloadShapeError(
            "alibaba", f"DescribeInstanceTypes page {number}: NextToken did not move"
        ),
    ),
    MAX_PAGES,
    lambda most: PayloadShapeError("alibaba", f"DescribeInstanceTypes: more than {most} pages"),
)


class AlibabaCollector(Collector):
    """Pay-as-you-go, subscription and spot prices of Alibaba's GPU instance types."""

    name = "alibaba"
    # Backoff of the SDK's retry policy, in milliseconds: attempt n waits base * 2^n / 2 to
    # base * 2^n, at most `backoff_cap_ms` (or what x-acs-retry-after asks, within the cap).
    backoff_ms: ClassVar[int] = 1000
    backoff_cap_ms: ClassVar[int] = 20_000
    _items = 0  # items fetched so far, for progress

    def default_regions(self) -> tuple[str, ...]:
        return GPU_REGIONS

    def fetch(self) -> Payloads:
        payloads: Payloads = {}
        self._items = 0
        now = datetime.now(UTC).replace(microsecond=0)
        self._walk_types(self._client(self.regions[0]), payloads)
        known, _ = catalogue.known_types(payloads, report=False)
        for region in self.regions:
            client = self._client(region)
            for itype in sorted(known):
                self._prices(client, region, itype, payloads)
                self._walk_spot(client, region, itype, now, payloads)
        self.log.info("%s: %d answers for %d types", self.name, len(payloads), len(known))
        return payloads

    def parse(self, payloads: Payloads, *, observed_at: datetime) -> ParseResult:
        result = parse.parse_payloads(payloads, frozenset(self.regions))
        self.log.info(
            "%s: %d records, %d rows skipped, %d unknown types",
            self.name,
            len(result.records),
            result.skipped_rows,
            len(result.unknown_instance_types),
        )
        return result

    # -- the calls -------------------------------------------------------------------------

    def _walk_types(self, client: Client, payloads: Payloads) -> None:
        call = client.describe_instance_types_with_options
        for number, page in TYPE_PAGES.walk(
            lambda number, token: self._call(
                f"DescribeInstanceTypes page {number}",
                call,
                models.DescribeInstanceTypesRequest(
                    instance_type_families=list(GPU_FAMILIES),
                    max_results=TYPES_PAGE_SIZE,
                    next_token=token,
                ),
            )
        ):
            self._keep(payloads, f"types/page-{number}", page, ("InstanceTypes", "InstanceType"))

    def _prices(self, client: Client, region: str, itype: str, payloads: Payloads) -> None:
        """Every price term of one type in one region. Each is asked whatever the others
        answered: a type not sold pay-as-you-go in a region may be sold there by subscription."""
        for unit, period in PRICE_QUERIES:
            what = f"DescribePrice {region} {itype} {unit}-{period}"
            body = self._quote(client, what, region, itype, unit, period)
            self._keep(payloads, f"{region}/price/{itype}/{unit}-{period}", body, ())

    def _quote(
        self, client: Client, what: str, region: str, itype: str, unit: str, period: int
    ) -> dict[str, Any]:
        """One DescribePrice answer, with the first system disk category the type accepts."""
        accepted = parse.NOT_OFFERED_CODES | DISK_REFUSED_CODES
        for disk in SYSTEM_DISKS:
            request = models.DescribePriceRequest(
                region_id=region,
                resource_type="instance",
                instance_type=itype,
                price_unit=unit,
                period=period,
                system_disk=models.DescribePriceRequestSystemDisk(category=disk),
            )
            body = self._call(what, client.describe_price_with_options, request, accept=accepted)
            if body.get("Code") not in DISK_REFUSED_CODES:
                return body
            self.log.info("%s: %s refuses a %s system disk; asking again", self.name, what, disk)
        raise FetchError(
            self.name, f"{what}: no system disk category accepted ({', '.join(SYSTEM_DISKS)})"
        )

    def _walk_spot(
        self, client: Client, region: str, itype: str, now: datetime, payloads: Payloads
    ) -> None:
        window = timedelta(seconds=self.settings.history_window_s or 0)
        start = now - min(max(window, SPOT_MIN_WINDOW), SPOT_MAX_WINDOW)
        cap = Cap(
            # The last page's NextOffset is not documented: stop on an empty page or an
            # offset that does not move forward.
            Offset(lambda page, number: _offset(page.get("NextOffset")), _spot_count),
            MAX_PAGES,
            lambda most: PayloadShapeError(
                self.name, f"DescribeSpotPriceHistory {region} {itype}: too many pages"
            ),
        )
        call = client.describe_spot_price_history_with_options
        for number, page in cap.walk(
            lambda number, offset: self._call(
                f"DescribeSpotPriceHistory {region} {itype} page {number}",
                call,
                models.DescribeSpotPriceHistoryRequest(
                    region_id=region,
                    instance_type=itype,
                    network_type="vpc",
                    ostype="linux",
                    start_time=_iso(start),
                    end_time=_iso(now),
                    offset=offset,
                ),
            )
        ):
            self._keep(payloads, f"{region}/spot/{itype}/page-{number}", page, SPOT_PATH)

    # -- plumbing --------------------------------------------------------------------------

    def _keep(
        self, payloads: Payloads, key: str, body: dict[str, Any], path: tuple[str, ...]
    ) -> int:
        payloads[key] = body
        items = _count(body, path)
        self._items += items
        self.progress(len(payloads), self._items)
        return items

    def _client(self, region: str) -> Client:
        return sdk.client(self.settings, region, self.backoff_ms, self.backoff_cap_ms)

    def _call(
        self,
        what: str,
        method: Callable[[Any, RuntimeOptions], Any],
        request: Any,
        *,
        accept: frozenset[str] = frozenset(),
    ) -> dict[str, Any]:
        """One SDK call (the SDK retries) -> the answer as the API spelled it."""
        try:
            answer = method(request, RuntimeOptions()).body
            body: Any = answer.to_map() if answer is not None else None
        except AlibabaCloudException as exc:
            data = {k: v for k, v in (exc.data or {}).items() if k != "statusCode"}
            if exc.code in accept:  # an answer the caller reads, not a failure
                return data
            raise sdk.api_error(self.name, what, exc, data, self.settings.max_retries) from exc
        except (TeaException, ValidateException) as exc:
            raise FetchError(self.name, f"{what}: {type(exc).__name__}: {exc}") from exc
        if not isinstance(body, dict):
            raise PayloadShapeError(self.name, f"{what}: the answer is not an object")
        return body


def _spot_count(page: Any) -> int:
    return _count(page, SPOT_PATH)


def _count(body: Any, path: tuple[str, ...]) -> int:
    """How many items an answer carries under `path` (for progress), 0 when none."""
    for name in path:
        body = body.get(name) if isinstance(body, dict) else None
    return len(body) if isinstance(body, list) else 0


def _offset(value: Any) -> int | None:
    """NextOffset as a number: the SDK passes the JSON through, so "100" would stay a string
    (and, unread, end the paging after one page)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
