"""Vultr: Cloud GPU and bare-metal GPU plans from the public plans API, no account needed.

`fetch` walks `GET {endpoint}/v2/plans?type=vcg&per_page=500` (Cloud GPU) and
`GET {endpoint}/v2/plans-metal?per_page=500` through `meta.links.next` (a cursor passed back
as `cursor` until it is empty), and checks the count against `meta.total`. `parse` (in
`collectors.vultr.parse`) makes one on-demand record per plan per location it lists
(available: a listed location can deploy it), and a spot record from a bare-metal plan's
`hourly_cost_preemptible`. A plan that lists no location at all is stored once, region NULL and
available false; one listed only outside the configured regions makes no record (sold out).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

import requests

from collectors.base import Collector, ParseResult, Payloads
from collectors.common import FetchError, PayloadShapeError
from collectors.http import get_json, make_session
from collectors.pages import Cap, Cursor
from collectors.vultr import parse

DEFAULT_ENDPOINT = "https://api.vultr.com"
PER_PAGE = 500  # Vultr's documented maximum
MAX_PAGES = 100  # a cursor that never ends must not hang the daemon
# (payload prefix, path, query): Cloud GPU plans only (type=all mixes in every CPU plan), and
# every bare-metal plan (the API has no GPU filter there; the GPU table picks them out).
LISTS = (
    (parse.CLOUD, "/v2/plans", {"type": "vcg", "per_page": str(PER_PAGE)}),
    (parse.METAL, "/v2/plans-metal", {"per_page": str(PER_PAGE)}),
)


class VultrCollector(Collector):
    """Vultr's GPU plans: every location they list, or the configured ones."""

    name = "vultr"
    default_endpoint: ClassVar[str] = DEFAULT_ENDPOINT

    def fetch(self) -> Payloads:
        base = (self.settings.endpoint or DEFAULT_ENDPOINT).rstrip("/")
        payloads: Payloads = {}
        self._pages = self._plans = 0  # over both lists, for the progress report
        with make_session(max_retries=self.settings.max_retries) as session:
            for prefix, path, query in LISTS:
                payloads.update(self._walk(session, prefix, base + path, query))
        return payloads

    def parse(self, payloads: Payloads, *, observed_at: datetime) -> ParseResult:
        """Per GPU plan: on-demand (and bare-metal spot) in each asked location it lists."""
        return parse.parse(payloads, self.regions, self.log)

    def _walk(
        self, session: requests.Session, prefix: str, url: str, query: dict[str, str]
    ) -> Payloads:
        """Every page of one list, following the cursor; fewer plans than `meta.total` fails."""
        pages: Payloads = {}
        count = 0
        cap = Cap(
            Cursor(lambda page, number: _cursor(page, f"{prefix}/page-{number}")),
            MAX_PAGES,
            lambda most: PayloadShapeError(self.name, f"{prefix}: more than {most} pages"),
        )
        key = ""
        for number, page in cap.walk(
            lambda number, cursor: get_json(
                session,
                self.name,
                url,
                timeout=self.settings.timeout,
                what=f"{prefix}/page-{number}",
                params=query if cursor is None else {**query, "cursor": cursor},
            )
        ):
            key = f"{prefix}/page-{number}"
            pages[key] = page
            found = len(parse.plans(key, page))  # a changed shape fails here
            count += found
            self._pages, self._plans = self._pages + 1, self._plans + found
            self.progress(self._pages, self._plans)
        _check_total(pages, key, count)
        return pages


def _cursor(page: dict[str, Any], where: str) -> str | None:
    """The next page's cursor; None (or an empty string) on the last page."""
    links = parse.meta(page).get("links") or {}
    if not isinstance(links, dict):
        raise PayloadShapeError(VultrCollector.name, f"{where}: meta.links is {links!r:.60}")
    cursor = links.get("next")
    if cursor is None or cursor == "":
        return None
    if not isinstance(cursor, str):
        raise PayloadShapeError(VultrCollector.name, f"{where}: meta.links.next is {cursor!r:.60}")
    return cursor


def _check_total(pages: Payloads, last: str, count: int) -> None:
    total = parse.meta(pages[last]).get("total")
    if isinstance(total, int) and not isinstance(total, bool) and count < total:
        raise FetchError(
            VultrCollector.name,
            f"{last.partition('/')[0]}: the {len(pages)} pages hold {count} plans but "
            f"meta.total is {total}: cut short",
        )
