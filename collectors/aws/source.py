"""Which AWS source a collection uses, and the records of the public one.

`[providers.aws] source`: "api" (the Price List and EC2 APIs, signed), "public" (the offer
files, the spot feed and the Spot Advisor, no account) or "auto" (the default): the APIs when
credentials are found (or an API endpoint is configured), else the public files. Credentials
are looked for as every AWS tool does, through boto3's own chain (explicit keys, the
environment, profiles, SSO, container and instance roles); off AWS, the last link (the
instance metadata service) costs a second or two at most, so a fixed `source` skips the look.

The public records are made by the API path's own helpers (`AwsCollector._product_records`,
`_place`, `_usable`): the offer file's rows are regrouped into Price List products first, so the
filters and the reserved-price formula are the API path's, record for record.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any, Protocol, TypeGuard

from collectors import gpus, kit
from collectors.aws import feeds, plans, terms
from collectors.aws.pages import pages_of
from collectors.aws.public import PublicFiles
from collectors.aws.savings import SavingsPlanFiles
from collectors.base import (
    InterruptionBand,
    ParseResult,
    Payloads,
    PriceRecord,
    Progress,
    ProviderSettings,
)
from collectors.common import CollectorError, PayloadShapeError
from collectors.kit import Host


class AwsCollector(Protocol):
    """What this module uses of the collector (collectors.aws.collector), by its shape: that
    module imports this one, so this one does not import it back."""

    settings: ProviderSettings
    log: logging.LoggerAdapter[logging.Logger]
    progress: Progress

    @property
    def name(self) -> str: ...
    @property
    def regions(self) -> tuple[str, ...]: ...
    @property
    def instance_types(self) -> tuple[str, ...]: ...
    @property
    def source(self) -> tuple[str, str]: ...
    def wanted(self, attrs: dict[str, Any]) -> bool: ...
    def _product_records(
        self,
        product: dict[str, Any],
        regions: frozenset[str],
        hosts: dict[str, Host],
        result: ParseResult,
    ) -> list[PriceRecord]: ...
    def _place(
        self, instance_type: str, region: str, zone: str | None, host: Host, result: ParseResult
    ) -> terms.Place | None: ...
    def _usable(
        self, offer: kit.Offer | None, place: terms.Place, result: ParseResult
    ) -> TypeGuard[kit.Offer]: ...


SOURCES = ("auto", "api", "public")


def resolve(collector: AwsCollector) -> tuple[str, str]:
    """("api" | "public", why) for this collection."""
    chosen = str(collector.settings.options.get("source") or "auto")
    if chosen != "auto":
        return chosen, f'source = "{chosen}"'
    settings = collector.settings
    if _mirrored(settings):
        return "api", "an API endpoint is configured"  # a mirror of the APIs: the APIs it is
    creds = settings.credentials
    if "aws_access_key_id" in creds and "aws_secret_access_key" in creds:
        return "api", "AWS credentials found"
    if chain_has_credentials(collector.name):
        return "api", "AWS credentials found"
    return "public", "no AWS credentials found"


def chain_has_credentials(provider: str) -> bool:
    """Whether boto3's chain (environment, profiles, SSO, container and instance roles) finds
    credentials. A chain that breaks (a profile named but not defined, a `credential_process`
    that fails) is the user's configuration to mend, not a bug: a CollectorError saying so."""
    import boto3
    from botocore.exceptions import BotoCoreError

    try:
        return boto3.session.Session().get_credentials() is not None
    except BotoCoreError as exc:
        raise CollectorError(
            provider,
            f'the AWS credentials configured cannot be read: {exc} (source = "public" reads'
            " the public price files without any)",
        ) from exc


def _mirrored(settings: ProviderSettings) -> bool:
    """An API endpoint is configured (`endpoint`, `pricing_endpoint` or `ec2_endpoint`)."""
    options = settings.options
    return bool(settings.endpoint or options.get("pricing_endpoint") or options.get("ec2_endpoint"))


def fetch(collector: AwsCollector, api: Callable[[], Payloads]) -> Payloads:
    """The public files, or what `api` fetches plus the Advisor: it needs no account and is
    asked wherever the collector talks to AWS itself (a mirror or a test server standing in
    for the APIs: only when its URL is given)."""
    source, why = collector.source
    public = PublicFiles(collector.settings, collector.log, collector.progress)
    if source == "public":
        return {"source": {"source": source, "why": why}, **public.fetch(collector.regions)}
    payloads = {"source": {"source": source, "why": why}, **api()}
    options = collector.settings.options
    if options.get("spot_advisor_url") or not _mirrored(collector.settings):
        with public.session:
            advice = public.advisor()
        if advice is not None:
            payloads["public/advisor"] = advice
    # Savings Plans: only the public files price them, for the boxes the API priced.
    if options.get("offers_endpoint") or not _mirrored(collector.settings):
        boxes = plans.api_boxes(collector, pages_of(payloads, "pricing"))
        usages: dict[str, list[list[str]]] = {region: [] for region in collector.regions}
        for region, (usage, operation) in sorted(boxes):
            if region in usages:  # the Price List answers for every region
                usages[region].append([usage, operation])
        with public.session:
            payloads.update(SavingsPlanFiles(public).fetch(usages))
    return payloads


def parse_extras(
    collector: AwsCollector, payloads: Payloads, observed_at: datetime, result: ParseResult
) -> dict[str, Host]:
    """Into `result`: the public files' records, the run summary's note on the source and the
    grain of the spot prices; the host sizes read (for spot records)."""
    hosts: dict[str, Host] = {}
    if any(key.startswith("public/") for key in payloads):
        hosts = parse_public(collector, payloads, observed_at, result)
    result.notes.insert(0, note(payloads))
    # Spot per zone (the API) or per region (the public feed): see ParseResult.spot_zoned.
    # The feed's presence decides, not the offer files': an index naming none of the regions
    # asked must not make the feed's prices count as per zone (the API's would be closed).
    result.spot_zoned = "public/spot" not in payloads
    return hosts


def note(payloads: Payloads) -> str:
    """The run summary's line on the source, from what `fetch` recorded of its choice."""
    chosen = payloads.get("source")
    chosen = chosen if isinstance(chosen, dict) else {}
    public = chosen.get("source") == "public" or "public/spot" in payloads
    what = "the public price files" if public else "the Price List and EC2 APIs"
    why = chosen.get("why")
    return f"prices from {what}" + (f" ({why})" if isinstance(why, str) else "")


def parse_public(
    collector: AwsCollector, payloads: Payloads, observed_at: datetime, result: ParseResult
) -> dict[str, Host]:
    """On-demand and reserved records of the offer files, spot records of the feed, into
    `result`; the host sizes read, for the spot records."""
    regions = frozenset(collector.regions)
    # Every GPU instance type of the files (or the configured ones), as the API path asks for
    # them: by attributes, so a type the GPU table does not know is priced all the same.
    gpu_types: set[str] = set()
    hosts: dict[str, Host] = {}
    boxes: dict[tuple[str, plans.Usage], dict[str, Any]] = {}  # what Savings Plans rates name
    unchanged = []
    for key, kept in payloads.items():
        if not key.startswith("public/offers/"):
            continue
        if not isinstance(kept, dict) or not isinstance(kept.get("rows"), list):
            raise PayloadShapeError("aws", f"{key}: not the kept rows of an offer file")
        if kept.get("reused"):
            unchanged.append(key.rsplit("/", 1)[1])
        columns = kept.get("columns") or []
        if not isinstance(columns, list) or not all(isinstance(c, str) for c in columns):
            raise PayloadShapeError("aws", f"{key}: the offer file's columns are not names")
        rows = _readable(collector, key, columns, kept["rows"], result)
        for product in feeds.products(columns, rows):
            attrs = product["product"]["attributes"]
            if not collector.wanted(attrs):
                continue
            gpu_types.add(str(attrs.get("instanceType")))
            records = collector._product_records(product, regions, hosts, result)
            result.records.extend(records)
            if records and terms.is_plain_linux_box(attrs):
                for join in plans.keys_of(product):
                    boxes[(str(attrs.get("regionCode")), join)] = attrs
    if unchanged:
        result.notes.append(f"offer files unchanged since the last run: {', '.join(unchanged)}")
    if not boxes:  # the API's products, where the plans join the API path (fetch above)
        boxes = plans.api_boxes(collector, pages_of(payloads, "pricing"))
    found = plans.records(payloads, collector.regions, boxes, collector, result)
    result.records.extend(found)
    if "public/spot" in payloads:
        # The feed lists every type, CPU ones too: the GPU types of the files, or configured,
        # and the table's (a region whose file the index does not name still has its feed).
        wanted = set(collector.instance_types) or gpu_types | set(gpus.instance_types("aws"))
        feed = payloads["public/spot"]
        result.records.extend(_spot_records(collector, feed, wanted, hosts, result))
    return hosts


def _readable(
    collector: AwsCollector, key: str, columns: list[str], rows: list[Any], result: ParseResult
) -> list[Any]:
    """The kept rows a parser can read (a row of the header's width, all text); the others,
    possible only in an archived answer edited by hand, are logged and counted as skipped."""
    width = len(columns)
    good = [
        row
        for row in rows
        if isinstance(row, list) and len(row) == width and all(isinstance(c, str) for c in row)
    ]
    if len(good) < len(rows):
        result.skipped_rows += len(rows) - len(good)
        collector.log.warning("aws: %s: %d rows not understood", key, len(rows) - len(good))
    return good


def _spot_records(
    collector: AwsCollector,
    feed: Any,
    wanted: set[str],
    hosts: dict[str, Host],
    result: ParseResult,
) -> list[PriceRecord]:
    regions = frozenset(collector.regions)
    records = []
    for region, instance_type, offer in feeds.spot_prices(feed):
        if region not in regions or instance_type not in wanted:
            continue
        host = hosts.get(instance_type, (None, None))
        # One price per region: zone NULL, dated by the collection (the feed has no time).
        place = collector._place(instance_type, region, None, host, result)
        if place is not None and collector._usable(offer, place, result):
            records.append(terms.record(place, offer))
    return records


def bands(
    collector: AwsCollector, payloads: Payloads, observed_at: datetime, priced: set[str]
) -> list[InterruptionBand] | None:
    """The Advisor's bands of the asked regions and the types `priced` (or configured); None
    when not asked."""
    answer = payloads.get("public/advisor")
    if answer is None:
        return None
    published = answer.get("last_modified") if isinstance(answer, dict) else None
    as_of = (kit.utc_timestamp(published) if isinstance(published, str) else None) or observed_at
    data = answer.get("data") if isinstance(answer, dict) else None
    wanted = set(collector.instance_types) | priced | set(gpus.instance_types("aws"))
    found = feeds.advisor_bands(data, frozenset(collector.regions), as_of)
    return [band for band in found if band.instance_type in wanted]
