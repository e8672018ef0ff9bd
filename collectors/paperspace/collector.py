"""Paperspace: GPU machines as DigitalOcean sells them now, GPU Droplets, from the sizes API.

Paperspace's own API has no price endpoint; its GPUs are DigitalOcean GPU Droplets. `fetch`
walks `GET {endpoint}/v2/sizes?per_page=200` (Bearer token) through `links.pages.next` until
there is none, and checks the count against `meta.total`. `parse` (in
`collectors.paperspace.parse`) keeps the sizes with `gpu_info`: one on-demand record per size
per region it lists, or one in no region (sold out) for a size listed nowhere.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar
from urllib.parse import urlsplit, urlunsplit

from collectors.base import Collector, ParseResult, Payloads
from collectors.common import FetchError, PayloadShapeError
from collectors.http import make_session
from collectors.pages import Cap, NextLink, linked_json
from collectors.paperspace import parse

DEFAULT_ENDPOINT = "https://api.digitalocean.com"
PATH = "/v2/sizes"
PER_PAGE = 200  # the documented maximum; DigitalOcean sells about 150 sizes in all
MAX_PAGES = 100  # a next link that never ends must not hang the daemon
CREDENTIAL = "DIGITALOCEAN_TOKEN"
AUTH_HINT = (
    f"check the token in {CREDENTIAL}, or in the variable providers.paperspace.token_env names"
)


class PaperspaceCollector(Collector):
    """DigitalOcean GPU Droplet sizes: every region they list, or the configured ones."""

    name = "paperspace"
    default_endpoint: ClassVar[str] = DEFAULT_ENDPOINT

    def check_credentials(self) -> None:
        self.credential("token", CREDENTIAL)

    def fetch(self) -> Payloads:
        first = (self.settings.endpoint or DEFAULT_ENDPOINT).rstrip("/") + PATH
        payloads: Payloads = {}
        sizes = 0
        pages = Cap(
            NextLink(lambda page, number: _next_url(page, first, f"sizes page {number}")),
            MAX_PAGES,
            lambda most: PayloadShapeError(self.name, f"more than {most} pages; giving up"),
        )
        with make_session(max_retries=self.settings.max_retries) as session:
            session.headers["Authorization"] = f"Bearer {self.credential('token', CREDENTIAL)}"
            for number, page in pages.walk(
                linked_json(
                    session,
                    self.name,
                    first,
                    {"per_page": PER_PAGE},
                    timeout=self.settings.timeout,
                    what=lambda number: f"sizes page {number}",
                    auth_hint=AUTH_HINT,
                )
            ):
                sizes += len(parse.page_sizes(page, f"sizes page {number}"))
                payloads[f"page-{number}"] = page
                self.progress(number, sizes)
        _check_total(payloads, sizes)
        return payloads

    def parse(self, payloads: Payloads, *, observed_at: datetime) -> ParseResult:
        """One record per GPU size per asked region it lists (or one in no region for a size
        listed nowhere); CPU sizes are ignored."""
        return parse.parse(payloads, self.regions, self.log)


def _next_url(page: dict[str, Any], first: str, where: str) -> str | None:
    """The next page's URL: the link as given when it is on our endpoint's host, else rebuilt
    there. DigitalOcean writes its own host into the link, even for a mirror or the offline
    demo; following it would leave the configured endpoint and take the token along."""
    links = page.get("links") or {}  # absent or {} on a one-page answer
    pages = (links.get("pages") or {}) if isinstance(links, dict) else links
    if not isinstance(pages, dict):
        raise PayloadShapeError(PaperspaceCollector.name, f"{where}: links.pages is {pages!r}")
    link = pages.get("next")
    if link is None:
        return None
    if not isinstance(link, str) or not link:
        raise PayloadShapeError(PaperspaceCollector.name, f"{where}: links.pages.next is {link!r}")
    ours, theirs = urlsplit(first), urlsplit(link)
    if (theirs.scheme, theirs.netloc) == (ours.scheme, ours.netloc):
        return link
    return urlunsplit(ours._replace(query=theirs.query))


def _check_total(payloads: Payloads, sizes: int) -> None:
    """Fewer sizes than `meta.total` means a page came back short: fail, keep nothing."""
    meta = payloads[f"page-{len(payloads)}"].get("meta")
    total = meta.get("total") if isinstance(meta, dict) else None
    if isinstance(total, int) and not isinstance(total, bool) and sizes < total:
        raise FetchError(
            PaperspaceCollector.name,
            f"the {len(payloads)} pages hold {sizes} sizes but meta.total is {total}: cut short",
        )
