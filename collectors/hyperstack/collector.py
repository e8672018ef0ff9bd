"""Hyperstack (NexGen Cloud): GPU flavors per region and the price of each GPU per hour.

`fetch` makes two calls with the key in `HYPERSTACK_API_KEY` as the `api_key` header:
`GET {endpoint}/v1/core/flavors` (per GPU model and region, the flavors: GPU count, host size,
whether stock is available) and `GET {endpoint}/v1/pricebook` (the hourly price per resource,
GPUs by the flavors' GPU names). `parse` (in `collectors.hyperstack.parse`) multiplies.
"""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar

from collectors.base import Collector, ParseResult, Payloads
from collectors.http import get_json, make_session
from collectors.hyperstack import parse

DEFAULT_ENDPOINT = "https://infrahub-api.nexgencloud.com"
PATHS = ((parse.FLAVORS, "/v1/core/flavors"), (parse.PRICEBOOK, "/v1/pricebook"))
CREDENTIAL = "HYPERSTACK_API_KEY"
AUTH_HINT = (
    f"check the API key in {CREDENTIAL}, or in the variable providers.hyperstack.api_key_env names"
)


class HyperstackCollector(Collector):
    """Hyperstack's GPU flavors: every region they are listed in, or the configured ones."""

    name = "hyperstack"
    default_endpoint: ClassVar[str] = DEFAULT_ENDPOINT

    def check_credentials(self) -> None:
        self.credential("api_key", CREDENTIAL)

    def fetch(self) -> Payloads:
        base = (self.settings.endpoint or DEFAULT_ENDPOINT).rstrip("/")
        payloads: Payloads = {}
        with make_session(max_retries=self.settings.max_retries) as session:
            session.headers["api_key"] = self.credential("api_key", CREDENTIAL)
            session.headers["Accept"] = "application/json"
            for key, path in PATHS:
                payloads[key] = get_json(
                    session,
                    self.name,
                    base + path,
                    timeout=self.settings.timeout,
                    what=key,
                    auth_hint=AUTH_HINT,
                )
        self.progress(len(PATHS), len(parse.groups(payloads)))  # a changed shape fails here
        return payloads

    def parse(self, payloads: Payloads, *, observed_at: datetime) -> ParseResult:
        """Per GPU flavor: on-demand in each asked region it is listed in."""
        return parse.parse(payloads, self.regions, self.log)
