"""AWS: on-demand and reserved prices from the Price List Query API, spot prices from EC2; or,
without an account, from the public files (`collectors.aws.public`, `[providers.aws] source`).

Both APIs need SigV4 signing, so both go through boto3:

- Price List `GetProducts`: one paginated walk over every GPU instance type, found by its
  attributes (`instanceFamily = "GPU instance"`), or one per type where `instance_types`
  restricts them; no region filter (one query answers for every region). Each product carries
  its on-demand price and every reserved term (1yr/3yr, standard/convertible, No/Partial/All
  Upfront).
- EC2 `DescribeInstanceTypes`: the GPUs of the types priced (`collectors.aws.facts`), asked in
  one region; a principal not allowed to ask it gets the GPU table's facts instead.
- EC2 `DescribeSpotPriceHistory`: one paginated walk per region (a region's spot prices come
  only from that region's endpoint), asking for the price in force now in every zone.

Retries (ThrottlingException, RequestLimitExceeded, 5xx, timeouts) are botocore's standard
retry mode; what still fails becomes a FetchError naming the call, the subject and the page.
"""

from __future__ import annotations

from contextlib import closing
from datetime import UTC, datetime, timedelta
from typing import Any, TypeGuard

import boto3
import botocore.loaders
import botocore.session
from botocore.config import Config

from collectors import gpus, kit
from collectors.aws import facts, source, terms, transfer
from collectors.aws.pages import Pages, pages_of
from collectors.aws.terms import PRODUCT_FILTERS
from collectors.base import Collector, ParseResult, Payloads, PriceRecord
from collectors.common import MissingCredentials
from collectors.kit import Host

# The Price List Query API has endpoints only in us-east-1, eu-central-1 and ap-south-1, and
# each answers for every region. boto3 happily builds a pricing host for any other region,
# and that host does not exist.
PRICING_REGION = "us-east-1"

# Regions enabled by default in every account that sell GPU instances. Opt-in regions
# (ap-east-1, eu-south-2, me-central-1, ...) answer OptInRequired/AuthFailure to accounts that
# have not enabled them, which would fail every run: list them in `regions` to collect them.
GPU_REGIONS = (
    "us-east-1", "us-east-2", "us-west-1", "us-west-2", "ca-central-1", "sa-east-1",
    "eu-west-1", "eu-west-2", "eu-west-3", "eu-central-1", "eu-north-1",
    "ap-northeast-1", "ap-northeast-2", "ap-northeast-3", "ap-south-1",
    "ap-southeast-1", "ap-southeast-2",
)  # fmt: skip
SPOT_PRODUCT = "Linux/UNIX"

# One botocore loader for the process: it caches the API models it has read.
_LOADER = botocore.loaders.create_loader()


class AwsCollector(Collector):
    """On-demand, reserved and spot prices of every GPU instance type AWS lists."""

    name = "aws"
    # No credential_env: absent explicit keys, boto3's own chain (environment, profiles, SSO,
    # instance roles) finds the credentials, as every AWS tool does.

    def default_regions(self) -> tuple[str, ...]:
        return GPU_REGIONS

    @property
    def instance_types(self) -> tuple[str, ...]:
        """The types `[providers.aws] instance_types` restricts the collection to; () for
        every GPU instance type."""
        configured = self.settings.options.get("instance_types")
        if isinstance(configured, str):
            return (configured,)
        return tuple(configured) if configured else ()

    def wanted(self, attrs: dict[str, Any]) -> bool:
        """A product of a GPU instance type this collection is for."""
        if attrs.get("instanceFamily") != facts.GPU_FAMILY:
            return False
        return not self.instance_types or attrs.get("instanceType") in self.instance_types

    @property
    def source(self) -> tuple[str, str]:
        """("api" | "public", why), decided once per collection."""
        if not hasattr(self, "_source"):
            self._source = source.resolve(self)
        return self._source

    def check_credentials(self) -> None:
        if self.source[0] == "public":
            return
        creds = self.settings.credentials
        if "aws_access_key_id" in creds and "aws_secret_access_key" in creds:
            return
        if not source.chain_has_credentials(self.name):
            raise MissingCredentials(
                self.name, "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE)"
            )

    def fetch(self) -> Payloads:
        # The public files, or the APIs (and the Advisor where it applies): collectors.aws.source
        return source.fetch(self, self._fetch_api)

    def _fetch_api(self) -> Payloads:
        session = self._session()
        pages = Pages(self.progress)
        with closing(self._client(session, "pricing", PRICING_REGION)) as pricing:
            for instance_type in self.instance_types or ("gpu",):
                query = _products_query(instance_type if self.instance_types else None)
                pages.walk(pricing, "get_products", f"pricing/{instance_type}", query)
        types = self.instance_types or self._priced_types(pages.payloads)
        if not types:  # spot history asked for no type would be every type's
            self.log.warning("aws: the Price List lists no GPU instance type in %s", self.regions)
            return pages.payloads
        with closing(self._client(session, "ec2", self.regions[0])) as ec2:
            facts.describe(ec2, pages, types)
        # AWS answers with every change in [StartTime, EndTime] plus the price in force at
        # StartTime, in every zone: with the history window, nothing between collections is lost.
        now = datetime.now(UTC).replace(microsecond=0)
        for region in self.regions:
            with closing(self._client(session, "ec2", region)) as ec2:
                query = self._spot_query(now, types)
                pages.walk(ec2, "describe_spot_price_history", f"spot/{region}", query)
        self.log.info("aws: fetched %d pages, %d items", len(pages.payloads), pages.items)
        return pages.payloads

    def parse(self, payloads: Payloads, *, observed_at: datetime) -> ParseResult:
        result = ParseResult()
        regions = frozenset(self.regions)
        self._facts = facts.Facts(facts.read(payloads, result))
        # The public files' records, the Advisor's bands, the source's note (none of it when
        # the payloads are the APIs' alone).
        hosts = source.parse_extras(self, payloads, observed_at, result)
        for key, page in pages_of(payloads, "pricing"):
            for product in terms.price_list(key, page):
                if product is None:
                    result.skipped_rows += 1
                    continue
                result.records.extend(self._product_records(product, regions, hosts, result))
        for key, page in pages_of(payloads, "spot"):
            region = key.split("/")[1]
            if region in regions:
                for item in terms.require(page, "SpotPriceHistory", key):
                    result.records.extend(self._spot_records(region, item, hosts, result))
        # Spot pages are not de-duplicated by AWS: the same item can come back on two pages.
        result.records = list(dict.fromkeys(result.records))
        priced = {r.instance_type for r in result.records}
        result.interruption = source.bands(self, payloads, observed_at, priced)
        result.transfer = transfer.rates(payloads, regions)
        self._log_summary(result)
        return result

    # -- fetch helpers ---------------------------------------------------------------------

    def _session(self) -> Any:
        creds = self.settings.credentials
        core = botocore.session.get_session()
        # Every session would otherwise read and keep its own copy of the EC2 and Pricing API
        # models (tens of MB of JSON): a daemon collecting every hour would parse them each time.
        core.register_component("data_loader", _LOADER)
        return boto3.session.Session(
            aws_access_key_id=creds.get("aws_access_key_id"),
            aws_secret_access_key=creds.get("aws_secret_access_key"),
            aws_session_token=creds.get("aws_session_token"),
            botocore_session=core,
        )

    def _client(self, session: Any, service: str, region: str) -> Any:
        endpoint = self.settings.options.get(f"{service}_endpoint") or self.settings.endpoint
        config = Config(
            retries={"mode": "standard", "max_attempts": self.settings.max_retries},
            connect_timeout=self.settings.timeout,
            read_timeout=self.settings.timeout,
        )
        return session.client(service, region_name=region, endpoint_url=endpoint, config=config)

    def _priced_types(self, payloads: Payloads) -> tuple[str, ...]:
        """The GPU instance types the Price List pages price in the regions asked."""
        regions, found = frozenset(self.regions), set()
        for key, page in pages_of(payloads, "pricing"):
            for product in terms.price_list(key, page):
                attrs = kit.obj(kit.obj(kit.obj(product).get("product")).get("attributes"))
                if self.wanted(attrs) and attrs.get("regionCode") in regions:
                    found.add(str(attrs["instanceType"]))
        return tuple(sorted(found))

    def _spot_query(self, now: datetime, types: tuple[str, ...]) -> dict[str, Any]:
        window = timedelta(seconds=self.settings.history_window_s or 0)
        return {
            "InstanceTypes": list(types),
            "ProductDescriptions": [SPOT_PRODUCT],
            "StartTime": now - window,
            "EndTime": now,
        }

    # -- parse helpers ---------------------------------------------------------------------

    def _product_records(
        self,
        product: dict[str, Any],
        regions: frozenset[str],
        hosts: dict[str, Host],
        result: ParseResult,
    ) -> list[PriceRecord]:
        attrs = kit.obj(kit.obj(product.get("product")).get("attributes"))
        if not terms.is_plain_linux_box(attrs) or not self.wanted(attrs):
            return []
        self._facts.saw(attrs)
        if str(attrs.get("regionCode")) not in regions:
            return []
        instance_type, host = attrs["instanceType"], terms.host_size(attrs)
        hosts[instance_type] = host
        place = self._place(instance_type, attrs["regionCode"], None, host, result)
        if place is None:
            return []
        by_kind = kit.obj(product.get("terms"))
        offers = [terms.on_demand_offer(t) for t in kit.obj(by_kind.get("OnDemand")).values()]
        offers += [terms.reserved_offer(t) for t in kit.obj(by_kind.get("Reserved")).values()]
        return [terms.record(place, o) for o in offers if self._usable(o, place, result)]

    def _spot_records(
        self,
        region: str,
        item: Any,
        hosts: dict[str, Host],
        result: ParseResult,
    ) -> list[PriceRecord]:
        if not isinstance(item, dict) or item.get("ProductDescription") != SPOT_PRODUCT:
            return []
        # AZ names (us-east-1a) are shuffled per account; AZ IDs (use1-az1) are stable.
        zone = item.get("AvailabilityZoneId") or item.get("AvailabilityZone")
        zone = zone if isinstance(zone, str) else None
        instance_type = str(item.get("InstanceType", ""))
        host = hosts.get(instance_type, (None, None))
        place = self._place(instance_type, region, zone, host, result)
        if place is None:
            return []
        offer = terms.spot_offer(region, item) if zone else None
        return [terms.record(place, offer)] if self._usable(offer, place, result) else []

    def _place(
        self,
        instance_type: str,
        region: str,
        zone: str | None,
        host: Host,
        result: ParseResult,
    ) -> terms.Place | None:
        found = self._facts.of(instance_type)
        if found is None:
            result.unknown_instance_types.add(instance_type)
            return None
        result.facts[instance_type] = found.source
        return terms.Place(region, zone, instance_type, found.gpu, *host)

    def _usable(
        self, offer: kit.Offer | None, place: terms.Place, result: ParseResult
    ) -> TypeGuard[kit.Offer]:
        """Offers that are not understood, or that cost nothing, are logged and skipped."""
        if offer is not None and offer.price_per_hour > 0:
            return True
        result.skipped_rows += 1
        result.unreadable.add(place.instance_type)  # its missing offers: unconfirmed, not gone
        self.log.warning(
            "aws: skipped a %s row for %s in %s: %s",
            offer.price_kind if offer else "price",
            place.instance_type,
            place.zone or place.region,
            "zero price" if offer else "not understood",
        )
        return False

    def _log_summary(self, result: ParseResult) -> None:
        self.log.info("aws: %d records, %d rows skipped", len(result.records), result.skipped_rows)
        unnamed = sorted({r.instance_type for r in result.records if not gpus.known(r.gpu_model)})
        if unnamed:
            self.log.warning(
                "aws: GPU not in the GPU table, stored under the API's name: %s",
                ", ".join(unnamed),
            )
        if result.unknown_instance_types:
            unknown = ", ".join(sorted(result.unknown_instance_types))
            self.log.warning("aws: instance types with no GPU count: %s", unknown)


def _products_query(instance_type: str | None) -> dict[str, Any]:
    # No region filter: one query returns the instance types in every region. By attributes,
    # not by name: a GPU type AWS launches is collected the day it is listed.
    which = {"instanceType": instance_type} if instance_type else {}
    filters = {**(which or {"instanceFamily": facts.GPU_FAMILY}), **PRODUCT_FILTERS}
    return {
        "ServiceCode": "AmazonEC2",
        "FormatVersion": "aws_v1",
        "Filters": [{"Type": "TERM_MATCH", "Field": k, "Value": v} for k, v in filters.items()],
        "PaginationConfig": {"PageSize": 100},
    }
