"""Azure: GPU VM prices from the public Retail Prices API (no credentials).

`fetch` asks once with an OData `$filter` for the GPU series (NC, ND, NG, NV) and the SKUs a
user's `[gpus.instance_types]` entries name outside them, and follows `NextPageLink` until it
is null. `parse` (`collectors.azure.parse`, pure) turns each row into at most one price (and
an on-demand row's savings plans), with GPU facts from `collectors.gpus`: the API names no GPU.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from collectors.azure import bandwidth, parse
from collectors.base import Collector, ParseResult, Payloads
from collectors.common import CollectorError, PayloadShapeError
from collectors.http import make_session
from collectors.pages import Cap, NextLink, linked_json

DEFAULT_ENDPOINT = "https://prices.azure.com/api/retail/prices"
# 2023-01-01-preview adds `savingsPlan` and makes filter values case-sensitive ('Standard_NC'
# matches, 'standard_nc' does not).
API_VERSION = "2023-01-01-preview"
# Every GPU VM size is named N<family>: NC, ND, NV (NVIDIA; AMD's MI300X in ND, MI25 and V710
# in NV) and NG (AMD Radeon PRO V620). The NP sizes are FPGAs.
GPU_SERIES = ("Standard_NC", "Standard_ND", "Standard_NG", "Standard_NV")
# A NextPageLink that never ends (or loops) must not hang the daemon.
MAX_PAGES = 2000


class AzureCollector(Collector):
    """Azure Retail Prices for the GPU series, every region or the configured ones."""

    name = "azure"
    default_endpoint: ClassVar[str] = DEFAULT_ENDPOINT

    def fetch(self) -> Payloads:
        payloads: Payloads = {}
        items = 0
        first = self.settings.endpoint or DEFAULT_ENDPOINT
        params = {"api-version": API_VERSION, "$filter": self.odata_filter()}
        with make_session(max_retries=self.settings.max_retries) as session:
            # The link already carries api-version, $filter and $skip (with ":443" in the
            # host): follow it as given rather than rebuilding it.
            for number, page in PAGES.walk(
                linked_json(
                    session,
                    self.name,
                    first,
                    params,
                    timeout=self.settings.timeout,
                    what=lambda number: f"page {number}",
                )
            ):
                items += len(parse.page_items(page, f"page {number}"))
                payloads[f"page-{number}"] = page
                self.progress(number, items)
            if self.settings.transfer_prices:
                payloads.update(self._bandwidth(session, first))
        self.log.debug("%s: fetched %d pages, %d items", self.name, len(payloads), items)
        return payloads

    def odata_filter(self) -> str:
        """The `$filter` sent: Virtual Machines of the GPU series, in the asked regions only."""
        series = " or ".join(
            [f"contains(armSkuName, {_quote(s)})" for s in GPU_SERIES]
            + [f"armSkuName eq {_quote(sku)}" for sku in self.asked_skus()]
        )
        # Windows rows are half of every GPU series' rows: leave them at the server (the syntax
        # gpuhunt uses). The parser still drops any that come back.
        clause = (
            f"serviceName eq 'Virtual Machines' and ({series})"
            " and contains(productName, 'Windows') eq false"
        )
        if self.regions:
            regions = " or ".join(f"armRegionName eq {_quote(r)}" for r in self.regions)
            clause += f" and ({regions})"
        return clause

    def asked_skus(self) -> tuple[str, ...]:
        """The SKUs outside the GPU series a user's `[gpus.instance_types]` entry prices: those
        of `provider = "azure"`, and those of no provider named as Azure names sizes
        ("Standard_..."). Asked by name, so the entry takes effect."""
        entries = self.settings.gpus.instance_types if self.settings.gpus else {}
        return tuple(
            sorted(
                sku
                for sku, entry in entries.items()
                if (entry.provider == self.name or (entry.provider is None and _azure_name(sku)))
                and not any(series in sku for series in GPU_SERIES)
            )
        )

    def parse(self, payloads: Payloads, *, observed_at: datetime) -> ParseResult:
        """Rows to records (`parse`); every row not stored is counted in `skipped_rows`."""
        prices, moves = bandwidth.split(payloads)  # the transfer prices: collectors.azure.bandwidth
        result = parse.parse(prices, self.regions, self.log)
        result.transfer = bandwidth.rates(moves, self.regions)
        return result

    def _bandwidth(self, session: Any, first: str) -> Payloads:
        """The Bandwidth rows' pages; none when they cannot be had (the stored transfer prices
        stay as they are: never worth the run's VM prices)."""

        def walk(params: dict[str, str]) -> Any:
            what = lambda number: f"Bandwidth page {number}"  # noqa: E731
            ask = linked_json(session, self.name, first, params, timeout=self.settings.timeout,
                              what=what)  # fmt: skip
            return PAGES.walk(ask)

        try:
            return bandwidth.fetch(walk, API_VERSION)
        except CollectorError as exc:
            self.log.warning("%s: transfer prices left as they were: %s", self.name, exc)
            return {}


def _next_link(page: dict[str, Any], number: int) -> str | None:
    link = page.get("NextPageLink")
    if link is not None and not (isinstance(link, str) and link):
        raise PayloadShapeError(AzureCollector.name, f"page {number}: NextPageLink is {link!r}")
    return link


PAGES = Cap(
    NextLink(_next_link),
    MAX_PAGES,
    lambda most: PayloadShapeError(AzureCollector.name, f"more than {most} pages; giving up"),
)


def _azure_name(sku: str) -> bool:
    return sku.startswith("Standard_")


def _quote(value: str) -> str:
    """An OData string literal (a quote inside is doubled)."""
    return "'" + value.replace("'", "''") + "'"
