"""Seeweb: Cloud Server GPU plans and the regions each can be created in.

`fetch` makes one call, `GET {endpoint}/ecs/v2/plans` with the token in `SEEWEB_API_TOKEN` as
the `X-APITOKEN` header. `parse` (in `collectors.seeweb.parse`) makes a record per GPU plan and
region.
"""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar

from collectors.base import Collector, ParseResult, Payloads
from collectors.http import keyed_json
from collectors.seeweb import parse

DEFAULT_ENDPOINT = "https://api.seeweb.it"
PATH = "/ecs/v2/plans"
CREDENTIAL = "SEEWEB_API_TOKEN"
AUTH_HINT = (
    f"check the API token in {CREDENTIAL}, or in the variable providers.seeweb.api_token_env names"
)


class SeewebCollector(Collector):
    """Seeweb's GPU plans: every region they list, or the configured ones."""

    name = "seeweb"
    default_endpoint: ClassVar[str] = DEFAULT_ENDPOINT

    def check_credentials(self) -> None:
        self.credential("api_token", CREDENTIAL)

    def fetch(self) -> Payloads:
        url = (self.settings.endpoint or DEFAULT_ENDPOINT).rstrip("/") + PATH
        body = keyed_json(
            self.name,
            url,
            {"X-APITOKEN": self.credential("api_token", CREDENTIAL)},
            max_retries=self.settings.max_retries,
            timeout=self.settings.timeout,
            what="plans",
            auth_hint=AUTH_HINT,
        )
        payloads: Payloads = {parse.PAYLOAD_KEY: body}
        self.progress(1, len(parse.plans(body)))  # a changed shape fails here
        return payloads

    def parse(self, payloads: Payloads, *, observed_at: datetime) -> ParseResult:
        """Per GPU plan: on-demand in each asked region it lists."""
        return parse.parse(payloads, self.regions, self.log)
