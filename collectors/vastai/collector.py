"""Vast.ai: a marketplace of hosts, stored per comparable group, never per offer.

`fetch` makes one search, `POST {endpoint}/api/v0/bundles/` with the CLI's own default filter
(verified, rentable, not rented, not external), no credentials needed (`VAST_API_KEY` is sent
as a Bearer token when set). Every offer is one host's listing: prices move with the market and
offers come and go minute by minute, so `parse` (in `collectors.vastai.parse`) keeps what a user
can compare over time: per GPU, GPU count and the host's country, the lowest `dph_base`
(on-demand) and the lowest `min_bid` (interruptible: spot) among verified, rentable, not
rented offers, and how many such offers there were (the run summary).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from collectors.base import Collector, ParseResult, Payloads
from collectors.http import make_session, post_json
from collectors.vastai import parse

DEFAULT_ENDPOINT = "https://console.vast.ai"
PATH = "/api/v0/bundles/"
AUTH_HINT = "check the key in VAST_API_KEY, or unset it: the search needs none"
# The vast CLI's default filter. The server is asked for it, and the parser checks every
# offer again: the CLI itself drops rented offers after the answer (the server returns some).
QUERY: dict[str, Any] = {
    "verified": {"eq": True},
    "external": {"eq": False},
    "rentable": {"eq": True},
    "rented": {"eq": False},
    "type": "on-demand",
    "order": [["dph_base", "asc"]],
    # The answer is not paged; the default size is not documented, so ask for more offers than
    # the market holds (an answer of exactly this many is said to be cut in the summary).
    "limit": parse.LIMIT,
}


class VastaiCollector(Collector):
    """Vast.ai's marketplace: the cheapest verified offers per GPU, count and country."""

    name = "vastai"
    default_endpoint: ClassVar[str] = DEFAULT_ENDPOINT

    def fetch(self) -> Payloads:
        url = (self.settings.endpoint or DEFAULT_ENDPOINT).rstrip("/") + PATH
        with make_session(max_retries=self.settings.max_retries) as session:
            key = self.settings.credentials.get("api_key")
            if key:
                session.headers["Authorization"] = f"Bearer {key}"
            body = post_json(
                session,
                self.name,
                url,
                body=QUERY,
                timeout=self.settings.timeout,
                what="offer search",
                auth_hint=AUTH_HINT,
            )
        payloads: Payloads = {parse.PAYLOAD_KEY: body}
        self.progress(1, len(parse.offers(payloads)))  # a changed shape fails here
        return payloads

    def parse(self, payloads: Payloads, *, observed_at: datetime) -> ParseResult:
        """One on-demand and one spot record per group of comparable offers."""
        return parse.parse(payloads, self.regions, self.log)
