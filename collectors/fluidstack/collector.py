"""Fluidstack: the GPU configurations that can be deployed now, priced per GPU-hour.

`fetch` makes one call, `GET {endpoint}/list_available_configurations` with the key in
`FLUIDSTACK_API_KEY` as the `api-key` header. `parse` (in `collectors.fluidstack.parse`) makes a
record per GPU type, GPU count and region.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from collectors.base import ParseResult, Payloads
from collectors.fluidstack import parse
from collectors.http import OneAnswer

DEFAULT_ENDPOINT = "https://platform.fluidstack.io"
PATH = "/list_available_configurations"
CREDENTIAL = "FLUIDSTACK_API_KEY"
AUTH_HINT = (
    f"check the API key in {CREDENTIAL}, or in the variable providers.fluidstack.api_key_env names"
)


class FluidstackCollector(OneAnswer):
    """Fluidstack's GPU configurations: every region they list, or the configured ones."""

    name = "fluidstack"
    default_endpoint: ClassVar[str] = DEFAULT_ENDPOINT
    path = PATH
    payload_key = parse.PAYLOAD_KEY
    credential_variable = CREDENTIAL
    what = "configurations"
    auth_hint = AUTH_HINT

    def headers(self, key: str) -> dict[str, str]:
        return {"api-key": key}

    def rows(self, payloads: Payloads) -> list[Any]:
        return parse.configurations(payloads[parse.PAYLOAD_KEY])

    def parse(self, payloads: Payloads, *, observed_at: datetime) -> ParseResult:
        """Per GPU type and count: on-demand in each asked region it lists."""
        return parse.parse(payloads, self.regions, self.log)
