"""CloudRift: GPU virtual machines from the public instance-type list, no account needed.

`fetch` makes one call, `POST {endpoint}/api/v1/instance-types/list` with the API's envelope
(`{"version": ..., "data": {"selector": {"ByServiceAndLocation": {"services": ["vm"]}}}}`);
the answer is `{"version": ..., "data": {"instance_types": [...]}}`. `parse` (in
`collectors.cloudrift.parse`) makes one on-demand record per GPU variant and datacenter.
"""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar

from collectors.base import Collector, ParseResult, Payloads
from collectors.cloudrift import parse
from collectors.http import make_session, post_json

DEFAULT_ENDPOINT = "https://api.cloudrift.ai"
PATH = "/api/v1/instance-types/list"
# The API version the request is written for (its clients pin a date); the public listing
# answers with its own version whatever is sent.
API_VERSION = "2025-03-21"
REQUEST = {
    "version": API_VERSION,
    "data": {"selector": {"ByServiceAndLocation": {"services": ["vm"]}}},
}


class CloudriftCollector(Collector):
    """CloudRift's GPU variants: every datacenter they list, or the configured ones."""

    name = "cloudrift"
    default_endpoint: ClassVar[str] = DEFAULT_ENDPOINT

    def fetch(self) -> Payloads:
        url = (self.settings.endpoint or DEFAULT_ENDPOINT).rstrip("/") + PATH
        with make_session(max_retries=self.settings.max_retries) as session:
            body = post_json(
                session,
                self.name,
                url,
                body=REQUEST,
                timeout=self.settings.timeout,
                what="instance types",
            )
        payloads: Payloads = {parse.PAYLOAD_KEY: body}
        self.progress(1, len(parse.instance_types(body)))  # a changed shape fails here
        return payloads

    def parse(self, payloads: Payloads, *, observed_at: datetime) -> ParseResult:
        """Per GPU variant: on-demand in each asked datacenter it lists."""
        return parse.parse(payloads, self.regions, self.log)
