"""Oracle Cloud (OCI): GPU shapes priced from the public price list, no account needed.

OCI has no "price of a shape" endpoint. `fetch` reads two public documents: the Price List
API (`GET {endpoint}/pls/apex/cetools/api/v1/products/?currencyCode=USD`, price per part
number) and the Cost Estimator's `shapes.json` (`GET {shapes_endpoint}/a/ocom/docs/
cloudestimator2/data/shapes.json`, which part numbers a shape is billed by, its GPU count).
`parse` (in `collectors.oci.parse`) prices each GPU shape as its GPU part's per-GPU hourly
price x the shape's GPU count, and makes one on-demand record per configured region (list
prices are the same in every commercial region; the documents name none), plus a spot record
at half of it for shapes that allow preemptible capacity (Oracle's documented rule).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar
from urllib.parse import urlsplit

import requests

from collectors.base import Collector, ParseResult, Payloads
from collectors.common import PayloadShapeError
from collectors.http import get_json, make_session
from collectors.oci import parse
from collectors.pages import Cap, NextLink, linked_json

DEFAULT_ENDPOINT = "https://apexapps.oracle.com"
PRICES_PATH = "/pls/apex/cetools/api/v1/products/"
DEFAULT_SHAPES_ENDPOINT = "https://www.oracle.com"
SHAPES_PATH = "/a/ocom/docs/cloudestimator2/data/shapes.json"
# Every commercial region prices alike, so these only say where a user can rent: the GPU
# regions most people use. `regions = [...]` in [providers.oci] lists others.
GPU_REGIONS = (
    "us-ashburn-1",
    "us-phoenix-1",
    "us-chicago-1",
    "eu-frankfurt-1",
    "uk-london-1",
    "ap-tokyo-1",
)
MAX_PAGES = 50  # the list is one answer today; a next link that never ends must not hang us


class OciCollector(Collector):
    """Oracle Cloud's GPU shapes at list price, in every configured region."""

    name = "oci"
    default_endpoint: ClassVar[str] = DEFAULT_ENDPOINT

    def default_regions(self) -> tuple[str, ...]:
        return GPU_REGIONS

    def fetch(self) -> Payloads:
        payloads: Payloads = {}
        with make_session(max_retries=self.settings.max_retries) as session:
            payloads.update(self._prices(session))
            shapes_base = self.settings.options.get("shapes_endpoint") or DEFAULT_SHAPES_ENDPOINT
            shapes = get_json(
                session,
                self.name,
                str(shapes_base).rstrip("/") + SHAPES_PATH,
                timeout=self.settings.timeout,
                what="shapes",
            )
        payloads[parse.SHAPES] = shapes
        # A changed shape fails here, before anything is parsed.
        self.progress(len(payloads), len(parse.items(payloads, parse.SHAPES)))
        return payloads

    def parse(self, payloads: Payloads, *, observed_at: datetime) -> ParseResult:
        """Per GPU shape on sale: on-demand (and spot where preemptible) in each region."""
        return parse.parse(payloads, self.regions, self.log)

    def _prices(self, session: requests.Session) -> Payloads:
        """Every page of the price list in US dollars (ORDS-style `links` followed if present)."""
        base = (self.settings.endpoint or DEFAULT_ENDPOINT).rstrip("/")
        cap = Cap(
            NextLink(lambda page, number: _next_url(page, base, f"{parse.PRICES}/page-{number}")),
            MAX_PAGES,
            lambda most: PayloadShapeError(self.name, f"more than {most} price pages; giving up"),
        )
        pages: Payloads = {}
        for number, page in cap.walk(
            linked_json(
                session,
                self.name,
                base + PRICES_PATH,
                {"currencyCode": parse.CURRENCY},
                timeout=self.settings.timeout,
                what=lambda number: f"price list page {number}",
            )
        ):
            key = f"{parse.PRICES}/page-{number}"
            pages[key] = page
            self.progress(number, len(parse.items(pages, key)))
        return pages


def _next_url(page: Any, base: str, where: str) -> str | None:
    """The next page's link where the answer has one (`hasMore` and a `links` entry with rel
    "next"), rebuilt on our endpoint's host: a mirror or the demo must not be left."""
    if not isinstance(page, dict) or page.get("hasMore") is not True:
        return None
    links = page.get("links")
    nexts = [
        link.get("href")
        for link in (links if isinstance(links, list) else [])
        if isinstance(link, dict) and link.get("rel") == "next"
    ]
    if len(nexts) != 1 or not isinstance(nexts[0], str) or not nexts[0]:
        raise PayloadShapeError(OciCollector.name, f"{where}: hasMore without one next link")
    ours, theirs = urlsplit(base), urlsplit(nexts[0])
    if (theirs.scheme, theirs.netloc) == (ours.scheme, ours.netloc):
        return nexts[0]
    # Oracle writes its own host into the link: its path and query go on our endpoint (which
    # may be a mirror under a path of its own), and the run never leaves it.
    return base + theirs.path + (f"?{theirs.query}" if theirs.query else "")
