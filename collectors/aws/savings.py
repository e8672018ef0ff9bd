"""AWS Savings Plans without an account: the public Savings Plans offer files, streamed.

The Savings Plans region index (`offers_endpoint` + `INDEX`: `{"regions": [{"regionCode",
"versionUrl"}]}`) names each region's current file, JSON: `products` (one per plan: its
`productFamily`, `ComputeSavingsPlans` or `EC2InstanceSavingsPlans`, and its `purchaseOption`
and `purchaseTerm`) and `terms.savingsPlan` (per plan, `leaseContractLength` and `rates`: one
hourly rate per discounted usage, EC2 instances of every OS and tenancy, Fargate and Lambda). A
region's file is hundreds of megabytes: it is walked as it arrives (`jsonstream`) and only the
rates of the region's GPU instance usages are kept, the ones its EC2 offer file lists (the
same `usageType` and `operation`); `plans` turns them into records.

Like the EC2 files, a region whose file did not change is not read again: what was kept (the
plans, the kept rates, the URL, ETag and Last-Modified, and the usages they were kept for) is
saved per region in the collector's state folder. Savings Plans are priced only from these
files; the Price List API answers for EC2 alone (docs/providers.md).
"""

from __future__ import annotations

import codecs
import hashlib
import json
from collections.abc import Callable
from typing import Any
from urllib.parse import urljoin

import requests
import urllib3

from collectors import kit
from collectors.aws.jsonstream import JsonShapeError, JsonStream
from collectors.aws.kept import KeptFiles
from collectors.aws.plans import SKU_KEY
from collectors.common import CollectorError, FetchError, PayloadShapeError

INDEX = "/savingsPlan/v1.0/aws/AWSComputeSavingsPlan/current/region_index.json"
STATE_FOLDER = "aws-savings-plans"
EC2 = "AmazonEC2"
# What of a plan's term is kept beside its rates (the rest, a description, is not read).
TERM_KEYS = ("sku", "leaseContractLength", "effectiveDate")


def usages(kept: dict[str, Any]) -> list[list[str]]:
    """What a rate of the region's Savings Plans file is kept by: the SKUs of the GPU rows kept
    of the region's EC2 offer file (as `[SKU_KEY, sku]`, the product a rate's `discountedSku`
    names) and their (usageType, operation) pairs, for a file that names the product otherwise."""
    columns = kept.get("columns") or []
    if not isinstance(columns, list):
        return []
    names = ("SKU", "usageType", "operation")
    at = {name: columns.index(name) for name in names if name in columns}
    found: set[tuple[str, str]] = set()
    for row in kept.get("rows") or []:
        if not isinstance(row, list) or len(row) != len(columns):
            continue
        if "SKU" in at:
            found.add((SKU_KEY, row[at["SKU"]]))
        if "usageType" in at and "operation" in at:
            found.add((row[at["usageType"]], row[at["operation"]]))
    return [list(pair) for pair in sorted(found)]


class SavingsPlanFiles:
    """Fetches the Savings Plans files of the regions asked, through the EC2 files' session."""

    def __init__(self, files: Any) -> None:
        self.files = files  # collectors.aws.public.PublicFiles: its session, _get, state folder
        state = files.state
        self.state = state.parent / STATE_FOLDER if state is not None else None
        self.kept = KeptFiles(self.state, files.log, "the Savings Plans file")

    def fetch(self, wanted: dict[str, list[list[str]]]) -> dict[str, Any]:
        """Payloads `public/plans/<region>` for the regions of `wanted` (region -> the usages
        to keep). An index AWS does not serve (404) is `public/plans` saying so; a region whose
        file cannot be read is its payload saying why, and the run goes on."""
        url = urljoin(self.files.offers_endpoint, INDEX)
        try:
            index = self.files._json(url, "Savings Plans region index")
        except CollectorError as exc:
            # A server with no such index (a mirror of the EC2 files alone) has no plans to
            # sell; any other failure leaves the stored plans as they were (parse_public).
            missing = isinstance(exc, FetchError) and str(exc).endswith("HTTP 404")
            self.files.log.warning("aws: no Savings Plans prices this run: %s", exc)
            return {"public/plans": {"failed": str(exc), "missing": missing}}
        payloads: dict[str, Any] = {}
        for region, keep in wanted.items():
            version = _version_url(index, region)
            if version is None:
                self.files.log.warning("aws: the Savings Plans index names no file for %s", region)
                continue
            try:
                found = self._region(region, urljoin(self.files.offers_endpoint, version), keep)
            except CollectorError as exc:
                self.files.log.warning("aws: %s Savings Plans left unconfirmed: %s", region, exc)
                found = {"failed": str(exc)}
            payloads[f"public/plans/{region}"] = found
        return payloads

    def _region(self, region: str, url: str, keep: list[list[str]]) -> dict[str, Any]:
        seen = self._seen(region)
        digest = _digest(keep)
        if seen and seen.get("url") == url and seen.get("usages") == digest:
            self.files.log.info("aws: %s Savings Plans file unchanged, not read again", region)
            return {**seen, "reused": True}
        headers = {}
        if seen and seen.get("usages") == digest:
            if seen.get("etag"):
                headers["If-None-Match"] = seen["etag"]
            if seen.get("last_modified"):
                headers["If-Modified-Since"] = seen["last_modified"]
        what = f"{region} Savings Plans file"
        response = self.files._get(url, what, headers=headers, stream=True)
        with response:
            if response.status_code == 304 and seen:
                same = {**seen, "url": url}
                self.kept.write(region, same)
                return {**same, "reused": True}
            by_usage: dict[str, set[str]] = {}
            for usage, operation in keep:
                by_usage.setdefault(usage, set()).add(operation)
            plans, terms = _walk(what, _text(response), by_usage)
        kept = {
            "url": url,
            "etag": response.headers.get("ETag"),
            "last_modified": response.headers.get("Last-Modified"),
            "usages": digest,
            "products": list({s: plans[s] for s in _skus(terms) if s in plans}.values()),
            "terms": terms,
        }
        self.kept.write(region, kept)
        return {**kept, "reused": False}

    def _seen(self, region: str) -> dict[str, Any] | None:
        seen = self.kept.read(region)
        return seen if seen is not None and isinstance(seen.get("terms"), list) else None


def _walk(
    what: str, read: Callable[[int], str], keep: dict[str, set[str]]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The plans (sku -> product) and the terms with the rates of `keep`, read as they arrive."""
    stream = JsonStream(read)
    plans: dict[str, Any] = {}
    terms: list[dict[str, Any]] = []
    sections = set()
    try:
        for key in stream.members():
            if key == "products" and stream.kind() == "[":
                sections.add(key)
                for found in stream.values():
                    product = kit.obj(found)
                    if isinstance(product.get("sku"), str):
                        plans[product["sku"]] = product
            elif key == "terms" and stream.kind() == "{":
                for kind in stream.members():
                    if kind == "savingsPlan" and stream.kind() == "[":
                        sections.add(kind)
                        terms.extend(_term(stream, keep) for _ in stream.items())
                    else:
                        stream.skip()
            else:
                stream.skip()
    except (JsonShapeError, UnicodeDecodeError) as exc:
        raise PayloadShapeError("aws", f"{what}: {exc}") from exc
    except (requests.RequestException, urllib3.exceptions.HTTPError, OSError) as exc:
        raise FetchError("aws", f"{what}: the download broke off: {exc}") from exc
    if sections != {"products", "savingsPlan"}:
        raise PayloadShapeError("aws", f"{what}: no products list or terms.savingsPlan list")
    return plans, [term for term in terms if term["rates"]]


def _term(stream: JsonStream, keep: dict[str, set[str]]) -> dict[str, Any]:
    """One plan's term: its keys of TERM_KEYS and its rates for the usages of `keep`."""
    term: dict[str, Any] = {"rates": []}
    if stream.kind() != "{":
        stream.skip()
        return term
    for key in stream.members():
        if key == "rates" and stream.kind() == "[":
            term["rates"] = [r for r in stream.values() if _wanted(r, keep)]
        elif key in TERM_KEYS:
            term[key] = stream.value()
        else:
            stream.skip()
    return term


def _skus(terms: list[dict[str, Any]]) -> list[str]:
    """The plans the kept terms name (a term's sku may be anything in a hostile file)."""
    return [t["sku"] for t in terms if isinstance(t.get("sku"), str)]


def _wanted(rate: Any, keep: dict[str, set[str]]) -> bool:
    """A rate of EC2 for a product of `keep` (usage -> operations; SKU_KEY -> SKUs): by its
    `discountedSku`, else by its usage type and operation."""
    if not isinstance(rate, dict) or rate.get("discountedServiceCode", EC2) != EC2:
        return False
    sku, usage = rate.get("discountedSku"), rate.get("discountedUsageType")
    if isinstance(sku, str) and sku in keep.get(SKU_KEY, ()):
        return True
    operations = keep.get(usage) if isinstance(usage, str) else None
    return operations is not None and rate.get("discountedOperation") in operations


def _text(response: requests.Response) -> Callable[[int], str]:
    """A reader of the body as text: what has arrived, decoded (gzip, then UTF-8) on the way."""
    raw = response.raw
    decoder = codecs.getincrementaldecoder("utf-8-sig")()

    def read(size: int) -> str:
        while True:
            data = raw.read1(size, decode_content=True)  # what arrived, never waiting for more
            text = decoder.decode(data, final=not data)
            if text or not data:
                return text

    return read


def _version_url(index: Any, region: str) -> str | None:
    """The region's file in the index: a list of {regionCode, versionUrl} (the EC2 index's
    map by region code, and its `currentVersionUrl`, are read too)."""
    regions = kit.obj(index).get("regions")
    if isinstance(regions, dict):
        entries = [kit.obj(regions.get(region))]
    else:
        listed = regions if isinstance(regions, list) else []
        entries = [kit.obj(e) for e in listed if kit.obj(e).get("regionCode") == region]
    for entry in entries:
        url = entry.get("versionUrl") or entry.get("currentVersionUrl")
        if isinstance(url, str) and url:
            return url
    return None


def _digest(keep: list[list[str]]) -> str:
    return hashlib.sha256(json.dumps(keep).encode()).hexdigest()[:16]
