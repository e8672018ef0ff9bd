"""Scaleway: GPU Instance list prices per zone from the public product catalog, no account.

`fetch` walks `GET {endpoint}/product-catalog/v2alpha1/public-catalog/products` with
`product_types=instance`, `page_size=100` and `page=1, 2, ...` until the pages hold
`total_count` products (or a page is empty); each page is kept as `page-N`.
`collectors.scaleway.parse` picks the GPU Instances out of them and prices each per zone.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from collectors.base import Collector, ParseResult, Payloads
from collectors.common import FetchError
from collectors.http import get_json, make_session
from collectors.pages import Cap, Offset
from collectors.scaleway import parse

DEFAULT_ENDPOINT = "https://api.scaleway.com"
PATH = "/product-catalog/v2alpha1/public-catalog/products"
MOST_PAGES = 100  # the whole catalog is about 5,500 products; instances alone far fewer


class ScalewayCollector(Collector):
    """Scaleway's GPU Instances: every zone the catalog lists, or the configured ones."""

    name = "scaleway"
    default_endpoint: ClassVar[str] = DEFAULT_ENDPOINT

    def fetch(self) -> Payloads:
        url = (self.settings.endpoint or DEFAULT_ENDPOINT).rstrip("/") + PATH
        cap: Cap[int] = Cap(
            Offset(parse.next_page, lambda page: len(parse.products(page, "page"))),
            MOST_PAGES,
            lambda most: FetchError(self.name, f"product catalog: more than {most} pages"),
        )
        payloads: Payloads = {}
        with make_session(max_retries=self.settings.max_retries) as session:

            def ask(number: int, page: int | None) -> Any:
                query = {"product_types": "instance", "page_size": parse.PAGE_SIZE, "page": number}
                return get_json(
                    session,
                    self.name,
                    url,
                    timeout=self.settings.timeout,
                    what=f"product catalog page {number}",
                    params=query,
                )

            for number, page in cap.walk(ask):
                payloads[f"page-{number}"] = page
                # a changed shape fails here, before the next page is asked
                self.progress(number, len(parse.all_products(payloads)))
        return payloads

    def parse(self, payloads: Payloads, *, observed_at: datetime) -> ParseResult:
        return parse.parse(payloads, self.regions, self.log)
