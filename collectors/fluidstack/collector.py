"""Fluidstack: the GPU configurations that can be deployed now, priced per GPU-hour.

`fetch` makes one call, `GET {endpoint}/list_available_configurations` with the key in
`FLUIDSTACK_API_KEY` as the `api-key` header. `parse` (in `collectors.fluidstack.parse`) makes a
record per GPU type, GPU count and region.
"""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar

from collectors.base import Collector, ParseResult, Payloads
from collectors.fluidstack import parse
from collectors.http import keyed_json

DEFAULT_ENDPOINT = "https://platform.fluidstack.io"
PATH = "/list_available_configurations"
CREDENTIAL = "FLUIDSTACK_API_KEY"
AUTH_HINT = (
    f"check the API key in {CREDENTIAL}, or in the variable providers.fluidstack.api_key_env names"
)


class FluidstackCollector(Collector):
    """Fluidstack's GPU configurations: every region they list, or the configured ones."""

    name = "fluidstack"
    default_endpoint: ClassVar[str] = DEFAULT_ENDPOINT

    def check_credentials(self) -> None:
        self.credential("api_key", CREDENTIAL)

    def fetch(self) -> Payloads:
        url = (self.settings.endpoint or DEFAULT_ENDPOINT).rstrip("/") + PATH
        body = keyed_json(
            self.name,
            url,
            {"api-key": self.credential("api_key", CREDENTIAL)},
            max_retries=self.settings.max_retries,
            timeout=self.settings.timeout,
            what="configurations",
            auth_hint=AUTH_HINT,
        )
        payloads: Payloads = {parse.PAYLOAD_KEY: body}
        self.progress(1, len(parse.configurations(body)))  # a changed shape fails here
        return payloads

    def parse(self, payloads: Payloads, *, observed_at: datetime) -> ParseResult:
        """Per GPU type and count: on-demand in each asked region it lists."""
        return parse.parse(payloads, self.regions, self.log)
