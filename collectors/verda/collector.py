"""Verda (formerly DataCrunch): instance types with their prices, and where each can start now.

`fetch` first asks `POST {endpoint}/v1/oauth2/token` for an access token (OAuth2 client
credentials: `VERDA_CLIENT_ID`, `VERDA_CLIENT_SECRET`), then, with it as a Bearer token,
`GET /v1/instance-types?currency=usd` and `GET /v1/instance-availability?is_spot=false` and
`?is_spot=true` (per location, the instance types that can start now). The token's answer is
read apart from the others, so it is never kept with the raw answers (docs/trust.md): it is a
credential. `parse` (in `collectors.verda.parse`) makes the records.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, ClassVar

import requests

from collectors.base import Collector, ParseResult, Payloads
from collectors.common import FetchError, PayloadShapeError, flat
from collectors.http import AUTH_STATUSES, get_json, make_session
from collectors.verda import parse

DEFAULT_ENDPOINT = "https://api.verda.com"
TOKEN_PATH = "/v1/oauth2/token"
TYPES_PATH = "/v1/instance-types"
AVAILABILITY_PATH = "/v1/instance-availability"
CLIENT_ID, CLIENT_SECRET = "VERDA_CLIENT_ID", "VERDA_CLIENT_SECRET"
AUTH_HINT = (
    f"check {CLIENT_ID} and {CLIENT_SECRET}, or the variables providers.verda.client_id_env "
    "and client_secret_env name"
)


class VerdaCollector(Collector):
    """Verda's GPU instance types: every location that can start them, or the configured ones."""

    name = "verda"
    default_endpoint: ClassVar[str] = DEFAULT_ENDPOINT

    def check_credentials(self) -> None:
        self.credential("client_id", CLIENT_ID)
        self.credential("client_secret", CLIENT_SECRET)

    def fetch(self) -> Payloads:
        base = (self.settings.endpoint or DEFAULT_ENDPOINT).rstrip("/")
        ask: dict[str, Any] = {"timeout": self.settings.timeout, "auth_hint": AUTH_HINT}
        with make_session(max_retries=self.settings.max_retries) as session:
            token = self._token(session, base + TOKEN_PATH)
            session.headers["Authorization"] = f"Bearer {token}"
            payloads: Payloads = {
                parse.TYPES: get_json(
                    session,
                    self.name,
                    base + TYPES_PATH,
                    what="instance types",
                    params={"currency": "usd"},
                    **ask,
                )
            }
            for key, spot in ((parse.ON_DEMAND, "false"), (parse.SPOT, "true")):
                payloads[key] = get_json(
                    session,
                    self.name,
                    base + AVAILABILITY_PATH,
                    what=key,
                    params={"is_spot": spot},
                    **ask,
                )
        self.progress(3, len(parse.instance_types(payloads)))  # a changed shape fails here
        return payloads

    def parse(self, payloads: Payloads, *, observed_at: datetime) -> ParseResult:
        """Per GPU instance type: on-demand and spot in each asked location that can start it."""
        return parse.parse(payloads, self.regions, self.log)

    def _token(self, session: requests.Session, url: str) -> str:
        """An access token for the client credentials; its answer is not kept (a secret)."""
        body = {
            "grant_type": "client_credentials",
            "client_id": self.credential("client_id", CLIENT_ID),
            "client_secret": self.credential("client_secret", CLIENT_SECRET),
        }
        try:
            response = session.post(url, json=body, timeout=self.settings.timeout)
        except requests.RequestException as exc:
            raise FetchError(self.name, f"token: {type(exc).__name__}: {exc}") from exc
        if response.status_code != 200:
            hint = f" ({AUTH_HINT})" if response.status_code in AUTH_STATUSES else ""
            said = flat(response.text[:300])
            raise FetchError(self.name, f"token: HTTP {response.status_code}{hint}: {said}")
        try:
            token = json.loads(response.content).get("access_token")
        except (ValueError, RecursionError, AttributeError) as exc:
            raise PayloadShapeError(self.name, "token: the answer is no token object") from exc
        if not isinstance(token, str) or not token or not token.isprintable():
            raise PayloadShapeError(self.name, "token: the answer has no access_token")
        return token
