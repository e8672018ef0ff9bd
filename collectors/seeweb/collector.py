"""Seeweb: Cloud Server GPU plans and the regions each can be created in.

`fetch` makes one call, `GET {endpoint}/ecs/v2/plans` with the token in `SEEWEB_API_TOKEN` as
the `X-APITOKEN` header. `parse` (in `collectors.seeweb.parse`) makes a record per GPU plan and
region.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from collectors.base import ParseResult, Payloads
from collectors.http import OneAnswer
from collectors.seeweb import parse

DEFAULT_ENDPOINT = "https://api.seeweb.it"
PATH = "/ecs/v2/plans"
CREDENTIAL = "SEEWEB_API_TOKEN"
AUTH_HINT = (
    f"check the API token in {CREDENTIAL}, or in the variable providers.seeweb.api_token_env names"
)


class SeewebCollector(OneAnswer):
    """Seeweb's GPU plans: every region they list, or the configured ones."""

    name = "seeweb"
    default_endpoint: ClassVar[str] = DEFAULT_ENDPOINT
    path = PATH
    payload_key = parse.PAYLOAD_KEY
    credential_name = "api_token"
    credential_variable = CREDENTIAL
    what = "plans"
    auth_hint = AUTH_HINT

    def headers(self, key: str) -> dict[str, str]:
        return {"X-APITOKEN": key}

    def rows(self, payloads: Payloads) -> list[Any]:
        return parse.plans(payloads[parse.PAYLOAD_KEY])

    def parse(self, payloads: Payloads, *, observed_at: datetime) -> ParseResult:
        """Per GPU plan: on-demand in each asked region it lists."""
        return parse.parse(payloads, self.regions, self.log)
