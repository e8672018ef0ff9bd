"""Nebius AI Cloud: GPU VM prices from the billing calculator, through the official SDK.

Nebius publishes no price list an API serves; its billing calculator prices any instance spec.
`fetch` asks, with a service account's credentials (or an IAM token): the tenants
(`TenantService.List`), each tenant's projects (`ProjectService.List`: one project per region
stands for the region), each project's compute platforms and their presets
(`PlatformService.List`), then `CalculatorService.Estimate` once per GPU preset for an
on-demand instance and, where the platform allows preemptible VMs, once more with a
`preemptible` spec (spot). Every answer is kept as ProtoJSON under its request's key;
`collectors.nebius.parse` reads them. Lists are followed through `next_page_token`.

The endpoint is the API's domain (`api.nebius.cloud:443`: each service is `<service>.<domain>`);
an `http://host:port` endpoint is one plain gRPC address for every service (a loopback replay,
a proxy).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any, ClassVar
from urllib.parse import urlsplit

from nebius.aio.request import RequestError as SentError
from nebius.aio.service_error import RequestError
from nebius.api.nebius.billing.v1alpha1 import (
    CalculatorServiceClient,
    EstimateRequest,
    ResourceSpec,
)
from nebius.api.nebius.common.v1 import ResourceMetadata
from nebius.api.nebius.compute.v1 import (
    CreateInstanceRequest,
    InstanceSpec,
    ListPlatformsRequest,
    PlatformServiceClient,
    PreemptibleSpec,
    ResourcesSpec,
)
from nebius.api.nebius.iam.v2 import (
    ListProjectsRequest,
    ListTenantsRequest,
    ProjectServiceClient,
    TenantServiceClient,
)
from nebius.base.error import SDKError
from nebius.base.options import INSECURE
from nebius.base.protos.json_format import message_to_dict
from nebius.base.resolver import Constant
from nebius.sdk import SDK

from collectors.base import Collector, ParseResult, Payloads
from collectors.common import FetchError, MissingCredentials, PayloadShapeError, flat
from collectors.nebius import parse
from collectors.pages import Cap, Cursor

DEFAULT_DOMAIN = "api.nebius.cloud:443"
CREDENTIALS_FILE = "NEBIUS_SERVICE_ACCOUNT_CREDENTIALS"
IAM_TOKEN = "NEBIUS_IAM_TOKEN"
AUTH_HINT = f"check the service account's credentials file in {CREDENTIALS_FILE} (or {IAM_TOKEN})"
PAGE_SIZE = 999
MOST_PAGES = 50  # a page token that never ends must not hang the daemon
AUTH_CODES = ("UNAUTHENTICATED", "PERMISSION_DENIED")


class NebiusCollector(Collector):
    """Nebius' GPU presets in every region one of the account's projects is in."""

    name = "nebius"
    default_endpoint: ClassVar[str] = DEFAULT_DOMAIN

    def check_credentials(self) -> None:
        if not (self.settings.credentials.get("credentials_file") or self._token()):
            raise MissingCredentials(self.name, f"{CREDENTIALS_FILE} (or {IAM_TOKEN})")

    def fetch(self) -> Payloads:
        self.check_credentials()
        payloads: Payloads = {}
        with self._sdk() as sdk:
            tenants = self._list(payloads, "tenants", _tenant_list(sdk), _tenants)
            projects: dict[str, str] = {}  # region -> the project standing for it
            for tenant in tenants:
                ask = _with_parent(ListProjectsRequest, tenant, ProjectServiceClient(sdk).list)
                for project, region in self._list(payloads, f"projects/{tenant}", ask, _projects):
                    projects.setdefault(region, project)
            if not projects:
                raise PayloadShapeError(self.name, "no project in any region: nothing to price")
            asked = set(self.regions)
            for region, project in sorted(projects.items()):
                if asked and region not in asked:
                    continue
                ask = _with_parent(ListPlatformsRequest, project, PlatformServiceClient(sdk).list)
                platforms = self._list(payloads, f"platforms/{project}", ask, parse.gpu_presets)
                estimate = CalculatorServiceClient(sdk).estimate
                for platform, preset, spot in platforms:
                    for kind in ("on_demand", "spot") if spot else ("on_demand",):
                        key = f"estimate/{project}/{platform}/{preset}/{kind}"
                        request = _estimate(project, platform, preset, spot=kind == "spot")
                        payloads[key] = self._call(key, _asking(estimate, request))
                        self.progress(len(payloads), len(payloads))
        return payloads

    def parse(self, payloads: Payloads, *, observed_at: datetime) -> ParseResult:
        return parse.parse(payloads, self.regions, self.log)

    def _token(self) -> str | None:
        return self.settings.credentials.get("iam_token") or None

    @contextmanager
    def _sdk(self) -> Iterator[SDK]:
        endpoint = self.settings.endpoint or DEFAULT_DOMAIN
        where: dict[str, Any]
        if endpoint.startswith("http://"):  # plain gRPC, one address for every service
            where = {"resolver": Constant(urlsplit(endpoint).netloc), "options": [(INSECURE, True)]}
        else:
            parts = urlsplit(endpoint if "//" in endpoint else f"//{endpoint}")
            where = {"domain": f"{parts.hostname}:{parts.port or 443}"}
        token = self._token()
        credentials: dict[str, Any] = (
            {"credentials": token}
            if token
            else {"credentials_file_name": self.settings.credentials["credentials_file"]}
        )
        try:
            sdk = SDK(user_agent_prefix="gpu-price-tracker", **where, **credentials)
        except (SDKError, OSError, ValueError) as exc:
            raise FetchError(self.name, f"SDK setup: {flat(str(exc))[:300]}") from exc
        try:
            yield sdk
        finally:
            # A shutdown that outlasts the timeout (a request still held by the server) must
            # neither hide the fetch's own error nor fail a fetch that has its answers.
            try:
                sdk.sync_close(timeout=self.settings.timeout)
            except TimeoutError:
                self.log.warning(
                    "nebius: the SDK's channel did not close within %g s", self.settings.timeout
                )

    def _list(
        self,
        payloads: Payloads,
        what: str,
        ask: Callable[..., Any],
        rows: Callable[[Any], list[Any]],
    ) -> list[Any]:
        """Every page of one list (kept as `<what>/page-N`), and the rows `rows` reads in them."""
        found: list[Any] = []
        cap: Cap[str] = Cap(
            Cursor(lambda page, number: page.get("nextPageToken") or None),
            MOST_PAGES,
            lambda most: FetchError(self.name, f"{what}: more than {most} pages"),
        )
        for number, page in cap.walk(
            lambda number, token: self._call(
                f"{what}/page-{number}", lambda kw: ask(PAGE_SIZE, token or "", kw)
            )
        ):
            payloads[f"{what}/page-{number}"] = page
            found.extend(rows(page))  # a changed shape fails here
        return found

    def _call(self, what: str, call: Callable[[dict[str, Any]], Any]) -> dict[str, Any]:
        """One SDK request's answer as ProtoJSON; any failure a FetchError naming `what`.
        `call` makes the request with the SDK's timeout and retry keywords."""
        tries = self.settings.max_retries + 1  # the SDK counts the first try among its retries
        each = self.settings.timeout
        kwargs = {"per_retry_timeout": each, "retries": tries, "timeout": each * tries + 5}
        try:
            answer = call(kwargs).wait()
        except RequestError as exc:
            code = str(getattr(getattr(exc.status, "code", None), "name", "error"))
            hint = f" ({AUTH_HINT})" if code in AUTH_CODES else ""
            message = getattr(exc.status, "message", "") or str(exc)
            raise FetchError(self.name, f"{what}: {code}{hint}: {flat(message)[:300]}") from exc
        except (SentError, SDKError, TimeoutError, OSError) as exc:
            text = flat(str(exc))[:300]
            raise FetchError(self.name, f"{what}: {type(exc).__name__}: {text}") from exc
        document: dict[str, Any] = message_to_dict(answer)
        return document


def _asking(method: Callable[..., Any], request: Any) -> Callable[[dict[str, Any]], Any]:
    return lambda kw: method(request, **kw)


def _with_parent(request: Callable[..., Any], parent: str, list_: Callable[..., Any]) -> Any:
    """The `ask` of a list whose request names its parent (a tenant, a project)."""
    return lambda size, token, kw: list_(
        request(parent_id=parent, page_size=size, page_token=token), **kw
    )


def _tenant_list(sdk: SDK) -> Any:
    client = TenantServiceClient(sdk)
    return lambda size, token, kw: client.list(
        ListTenantsRequest(page_size=size, page_token=token), **kw
    )


def _tenants(page: Any) -> list[str]:
    return parse.ids(page, "tenants")


def _projects(page: Any) -> list[tuple[str, str]]:
    return parse.project_regions(page)


def _estimate(project: str, platform: str, preset: str, *, spot: bool) -> EstimateRequest:
    spec = CreateInstanceRequest(
        metadata=ResourceMetadata(parent_id=project),
        spec=InstanceSpec(
            resources=ResourcesSpec(platform=platform, preset=preset),
            preemptible=PreemptibleSpec() if spot else None,
        ),
    )
    return EstimateRequest(resource_spec=ResourceSpec(compute_instance_spec=spec))
