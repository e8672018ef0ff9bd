"""Google Cloud: GPU machine prices from the Cloud Billing Catalog API (Compute Engine SKUs).

`fetch` lists every SKU of the Compute Engine service (services/6F81-5844-456A) through
google-cloud-billing's CloudCatalogClient over REST, every page, with an API key (sent as
x-goog-api-key) or else Application Default Credentials. The catalog prices parts, not
machines: `parse` reads the parts (collectors.gcp.skus) and sums them into machine prices
(collectors.gcp.machines), per region and offer: on-demand, spot, 1- and 3-year commitments.

api_core does not retry this API by default; here 429 and 5xx (and dropped connections) are
retried with exponential backoff, at most `max_retries` times per page within a deadline.
"""

from __future__ import annotations

import itertools
import logging
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any, ClassVar

import google.auth
import requests
from google.api_core import exceptions as api_errors
from google.api_core.client_options import ClientOptions
from google.api_core.retry import Retry
from google.api_core.timeout import ConstantTimeout
from google.auth.exceptions import DefaultCredentialsError, GoogleAuthError
from google.cloud.billing_v1 import CloudCatalogClient, ListSkusRequest, ListSkusResponse
from google.protobuf.json_format import ParseError  # type: ignore[import-untyped]

from collectors.base import Collector, ParseResult, Payloads
from collectors.common import FetchError, MissingCredentials, PayloadShapeError
from collectors.gcp.egress import Egress
from collectors.gcp.machines import RateBook, price_machines
from collectors.gcp.skus import SkuRate, read_sku

log = logging.getLogger("collectors.gcp")

DEFAULT_ENDPOINT = "https://cloudbilling.googleapis.com"
COMPUTE_ENGINE = "services/6F81-5844-456A"
CURRENCY = "USD"
PAGE_SIZE = 5000  # the API's maximum: the whole service is a handful of pages
MAX_PAGES = 200  # a page token that never ends must not hang the daemon
API_KEY_HINT = "GOOGLE_API_KEY"
ADC_HINT = "Application Default Credentials"

# Regions that sell at least one of the GPU machines priced here (Google's "GPU regions and
# zones" table). The catalog answers for every region at once: more regions cost records, not
# requests.
GPU_REGIONS = (
    "us-central1", "us-east1", "us-east4", "us-east5", "us-south1", "us-west1", "us-west2",
    "us-west3", "us-west4", "northamerica-northeast1", "southamerica-east1",
    "europe-west1", "europe-west2", "europe-west3", "europe-west4", "europe-west6",
    "europe-west9", "europe-north1", "me-west1", "asia-east1", "asia-northeast1",
    "asia-northeast3", "asia-south1", "asia-southeast1", "australia-southeast1",
)  # fmt: skip

# Worth another try: throttling (RESOURCE_EXHAUSTED), server errors, dropped connections.
TRANSIENT = (
    api_errors.TooManyRequests,
    api_errors.InternalServerError,
    api_errors.BadGateway,
    api_errors.ServiceUnavailable,
    api_errors.GatewayTimeout,
    requests.ConnectionError,
    requests.Timeout,
)


class GcpCollector(Collector):
    """On-demand, spot and committed prices of the GPU machines in collectors.gcp.machines."""

    name = "gcp"
    default_endpoint: ClassVar[str] = DEFAULT_ENDPOINT

    def default_regions(self) -> tuple[str, ...]:
        return GPU_REGIONS

    def check_credentials(self) -> None:
        if self.settings.credentials.get("api_key"):
            return
        try:
            google.auth.default()
        except DefaultCredentialsError as exc:
            raise MissingCredentials(self.name, f"{API_KEY_HINT} (or set up {ADC_HINT})") from exc

    def fetch(self) -> Payloads:
        payloads: Payloads = {}
        skus = 0
        tokens: set[str] = set()
        with self._client() as client:
            for number, page in enumerate(self._pages(client), 1):
                skus += len(page.skus)
                payloads[f"page-{number}"] = _jsonable(page)
                self.progress(number, skus)
                token = page.next_page_token
                if token and (token in tokens or number >= MAX_PAGES):
                    raise PayloadShapeError(self.name, f"page {number}: the pages do not end")
                tokens.add(token)
        self.log.info("%s: fetched %d pages, %d SKUs", self.name, len(payloads), skus)
        return payloads

    def parse(self, payloads: Payloads, *, observed_at: datetime) -> ParseResult:
        result = ParseResult()
        book = RateBook(frozenset(self.regions), self.log)
        moves = Egress(frozenset(self.regions))  # network egress: collectors.gcp.egress
        skipped: Counter[str] = Counter()
        for where, sku in _skus(payloads):
            if sku is None:  # one SKU of another shape: skipped (logged), the others stand
                skipped["malformed SKU"] += 1
                continue
            found = read_sku(sku)
            if found is None:
                moves.add(sku)  # a SKU of no GPU machine (most of the catalog), or egress
                continue
            if isinstance(found, SkuRate):
                book.add(found)
                continue
            skipped[found.reason] += 1
            if found.unknown_gpu:
                result.unknown_instance_types.add(found.unknown_gpu)
            if found.oddity:
                self.log.warning(
                    "%s: %s (SKU %s %r) skipped: %s",
                    self.name, where, sku.get("skuId"), sku["description"], found.reason,
                )  # fmt: skip
        price_machines(book, self.regions, result)
        result.transfer = moves.rates()
        result.skipped_rows = sum(skipped.values())
        if result.unknown_instance_types:
            unknown = ", ".join(sorted(result.unknown_instance_types))
            self.log.warning("%s: GPUs not in the component table: %s", self.name, unknown)
        self.log.info(
            "%s: %d records, %d SKUs skipped (%s)",
            self.name, len(result.records), result.skipped_rows,
            ", ".join(f"{reason}: {n}" for reason, n in skipped.items()) or "none",
        )  # fmt: skip
        return result

    # -- fetch helpers ---------------------------------------------------------------------

    def _client(self) -> CloudCatalogClient:
        options = ClientOptions(
            api_endpoint=self.settings.endpoint or DEFAULT_ENDPOINT,
            api_key=self.settings.credentials.get("api_key") or None,
        )
        try:
            # An http:// endpoint works: the REST transport keeps the scheme it is given.
            return CloudCatalogClient(transport="rest", client_options=options)
        except DefaultCredentialsError as exc:
            raise MissingCredentials(self.name, f"{API_KEY_HINT} (or set up {ADC_HINT})") from exc

    def _pages(self, client: CloudCatalogClient) -> Iterator[ListSkusResponse]:
        """Every page of the SKU list; each page gets `max_retries` retries of its own."""
        budget = _RetryBudget(self.settings.max_retries)
        timeout = self.settings.timeout
        retry = Retry(
            predicate=budget,
            initial=min(1.0, timeout / 30),
            maximum=min(16.0, timeout),
            multiplier=2.0,
            timeout=timeout * (self.settings.max_retries + 1),
        )
        request = ListSkusRequest(
            parent=COMPUTE_ENGINE, currency_code=CURRENCY, page_size=PAGE_SIZE
        )
        # `timeout` is per request, as config.toml says (a float would be a deadline per page).
        per_request = ConstantTimeout(timeout)  # type: ignore[no-untyped-call]
        with self._errors(1, budget):
            pager = client.list_skus(request=request, retry=retry, timeout=per_request)
        pages = iter(pager.pages)  # the first page is already here; the rest follow pageToken
        for number in itertools.count(1):
            budget.reset()
            with self._errors(number, budget):
                page = next(pages, None)
            if page is None:
                return
            yield page

    @contextmanager
    def _errors(self, number: int, budget: _RetryBudget) -> Iterator[None]:
        """Whatever fails on a page becomes a FetchError naming the page and what to check."""
        what = f"ListSkus page {number}"
        try:
            yield
        except api_errors.RetryError as exc:  # the deadline passed before the retries ran out
            raise FetchError(self.name, f"{what}: gave up retrying: {exc.cause}") from exc
        except api_errors.GoogleAPICallError as exc:
            message = f"{what}: HTTP {exc.code}{budget.tried()}: {self._hint(exc)}"
            raise FetchError(self.name, message) from exc
        except (requests.RequestException, GoogleAuthError) as exc:
            message = f"{what}: {type(exc).__name__}{budget.tried()}: {exc}"
            raise FetchError(self.name, message) from exc
        except ParseError as exc:  # a truncated or garbled body
            raise FetchError(self.name, f"{what}: the answer is not a SKU list: {exc}") from exc

    def _hint(self, exc: api_errors.GoogleAPICallError) -> str:
        """The error text, and which credential to check when the API refused it."""
        refused = isinstance(exc, api_errors.Unauthorized | api_errors.Forbidden) or (
            isinstance(exc, api_errors.BadRequest) and "API key" in exc.message  # API_KEY_INVALID
        )
        if not refused:
            return str(exc.message)
        used = API_KEY_HINT if self.settings.credentials.get("api_key") else ADC_HINT
        return f"{exc.message} (check {used})"


class _RetryBudget:
    """The retry predicate: transient errors only, and at most `retries` of them per page.

    api_core's Retry bounds retries by a deadline alone; a count keeps a run short and the
    tests fast whatever the backoff draws."""

    def __init__(self, retries: int) -> None:
        self.retries = retries
        self.used = 0

    def reset(self) -> None:
        self.used = 0

    def tried(self) -> str:
        return f" (after {self.used} retries)" if self.used else ""

    def __call__(self, exc: Exception) -> bool:
        if not isinstance(exc, TRANSIENT) or self.used >= self.retries:
            return False
        self.used += 1
        return True


def _jsonable(page: ListSkusResponse) -> dict[str, Any]:
    """The page as the API sent it: camelCase JSON names, int64 units as strings."""
    out: dict[str, Any] = ListSkusResponse.to_dict(
        page, preserving_proto_field_name=False, use_integers_for_enums=False
    )
    return out


def _skus(payloads: Payloads) -> Iterator[tuple[str, dict[str, Any] | None]]:
    """Every SKU of every page, in page order, checked for what every SKU must carry: None for
    one that lacks it (logged). When none has it, the answer has changed shape: an error."""
    seen, malformed, first = 0, 0, ""
    for key in sorted(payloads, key=_page_number):
        page = payloads[key]
        skus = page.get("skus", []) if isinstance(page, dict) else None
        if not isinstance(skus, list) or not {"skus", "nextPageToken"} & set(page):
            raise PayloadShapeError(GcpCollector.name, f"{key}: the answer has no skus list")
        for index, sku in enumerate(skus):
            where = f"{key} sku {index}"
            problem = _sku_problem(sku, where)
            seen, malformed = seen + 1, malformed + bool(problem)
            if problem:
                log.warning("%s: %s; skipped", GcpCollector.name, problem)
                first = first or problem
            yield where, None if problem else sku
    if malformed and malformed == seen:
        raise PayloadShapeError(GcpCollector.name, f"{first} (and so is every other SKU)")


def _sku_problem(sku: Any, where: str) -> str:
    if not isinstance(sku, dict):
        return f"{where} is not an object"
    if not isinstance(sku.get("description"), str) or not isinstance(sku.get("category"), dict):
        return f"{where} lacks description or category"
    return ""


def _page_number(key: Any) -> int:
    number = str(key).removeprefix("page-")
    if not number.isdigit() or not str(key).startswith("page-"):
        raise PayloadShapeError(GcpCollector.name, f"unexpected payload key {key!r}")
    return int(number)
