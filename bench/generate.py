"""Synthetic full-size collections in the providers' wire formats, for the benchmarks.

Azure: Retail Prices pages (1,000 items each) over 40 regions, every GPU SKU of the GPU table
with its Linux, Spot, Windows, Low Priority, DevTest and 1/3-year Reservation rows, plus unknown
GPU SKUs, as the real filter returns them. AWS: Price List products (on-demand + 12 reserved
terms each) for every GPU type in 25 regions, and spot history per availability zone, in the
shape boto3 hands to the collector. Prices are seeded-random around real list prices.
"""

from __future__ import annotations

import json
import random
import uuid
from pathlib import Path
from typing import Any

from collectors.aws.terms import PRODUCT_FILTERS
from collectors.gpus import instance_types

AZURE_REGIONS = [
    "eastus",
    "eastus2",
    "westus",
    "westus2",
    "westus3",
    "centralus",
    "northcentralus",
    "southcentralus",
    "westcentralus",
    "canadacentral",
    "canadaeast",
    "brazilsouth",
    "northeurope",
    "westeurope",
    "uksouth",
    "ukwest",
    "francecentral",
    "germanywestcentral",
    "norwayeast",
    "swedencentral",
    "switzerlandnorth",
    "italynorth",
    "polandcentral",
    "spaincentral",
    "uaenorth",
    "qatarcentral",
    "israelcentral",
    "southafricanorth",
    "centralindia",
    "southindia",
    "westindia",
    "japaneast",
    "japanwest",
    "koreacentral",
    "koreasouth",
    "southeastasia",
    "eastasia",
    "australiaeast",
    "australiasoutheast",
    "newzealandnorth",
]
AZURE_BASE = "https://prices.azure.com:443/api/retail/prices"
AZURE_FILTER = "serviceName eq 'Virtual Machines'"
# Real NC/ND/NV/NG SKUs the GPU table does not map (yet): the series filter returns them too.
UNKNOWN_AZURE = [
    "Standard_NC6",
    "Standard_NC12",
    "Standard_NC24",
    "Standard_NC24r",
    "Standard_NC6s_v2",
    "Standard_NC12s_v2",
    "Standard_NC24s_v2",
    "Standard_NC24rs_v2",
    "Standard_ND6s",
    "Standard_ND12s",
    "Standard_ND24s",
    "Standard_ND24rs",
    "Standard_NV6",
    "Standard_NV12",
    "Standard_NV24",
    "Standard_NC8ads_A10_v4",
    "Standard_NC16ads_A10_v4",
    "Standard_NC32ads_A10_v4",
]


def _azure_item(
    rng: random.Random, sku: str, region: str, kind: str, price: float
) -> dict[str, Any]:
    meter = sku.removeprefix("Standard_").replace("_", " ")
    sku_name, product, item_type, term = meter, "Virtual Machines Series", "Consumption", None
    if kind == "spot":
        sku_name, meter = sku_name + " Spot", meter + " Spot"
    elif kind == "low":
        sku_name, meter = sku_name + " Low Priority", meter + " Low Priority"
    elif kind == "windows":
        product += " Windows"
    elif kind == "devtest":
        item_type = "DevTestConsumption"
    elif kind.startswith("reserved"):
        item_type, term = "Reservation", "1 Year" if kind.endswith("1") else "3 Years"
        price = round(price * (8760 * 0.62 if term == "1 Year" else 26280 * 0.41), 2)
    item = {
        "currencyCode": "USD",
        "tierMinimumUnits": 0.0,
        "retailPrice": price,
        "unitPrice": price,
        "armRegionName": region,
        "location": region,
        "effectiveStartDate": "2025-06-01T00:00:00Z",
        "meterId": str(uuid.UUID(int=rng.getrandbits(128))),
        "meterName": meter,
        "productId": "DZH318Z0BQPS",
        "skuId": "DZH318Z0BQPS/00TG",
        "productName": product,
        "skuName": sku_name,
        "serviceName": "Virtual Machines",
        "serviceId": "DZH313Z7MMC8",
        "serviceFamily": "Compute",
        "unitOfMeasure": "1 Hour",
        "type": item_type,
        "isPrimaryMeterRegion": True,
        "armSkuName": sku,
    }
    if term:
        item["reservationTerm"] = term
    return item


def azure_items(n_items: int, seed: int = 7) -> list[dict[str, Any]]:
    """`n_items` Retail Prices items: every SKU x region x row kind once, then the API's
    exact duplicate rows (it returns some; the collector drops them) up to the page count."""
    rng = random.Random(seed)
    # No Windows rows: the collector's $filter leaves them at the server.
    kinds = ["linux", "spot", "low", "devtest", "reserved1", "reserved3"]
    items: list[dict[str, Any]] = []
    for region in AZURE_REGIONS:
        # The table learns sizes over time: one it has come to know is generated once.
        for sku in dict.fromkeys([*instance_types("azure"), *UNKNOWN_AZURE]):
            base = round(rng.uniform(0.5, 100.0), 4)
            for kind in kinds:
                price = round(base * (0.1 if kind in ("spot", "low") else 1.0), 6)
                items.append(_azure_item(rng, sku, region, kind, price))
    unique = len(items)
    while len(items) < n_items:
        items.append(dict(items[rng.randrange(unique)]))
    rng.shuffle(items)
    return items[:n_items]


def write_azure_recording(folder: Path, pages: int = 60, per_page: int = 1000) -> int:
    """Write `pages` Retail Prices pages and an exchanges.json for the replay server."""
    folder.mkdir(parents=True, exist_ok=True)
    items = azure_items(pages * per_page)
    exchanges = []
    for n in range(pages):
        skip = n * per_page
        nxt = (
            None
            if n == pages - 1
            else (
                f"{AZURE_BASE}?api-version=2023-01-01-preview&$filter={AZURE_FILTER}"
                f"&$skip={skip + per_page}"
            )
        )
        page = {
            "BillingCurrency": "USD",
            "CustomerEntityId": "Default",
            "CustomerEntityType": "Retail",
            "Items": items[skip : skip + per_page],
            "NextPageLink": nxt,
            "Count": per_page,
        }
        (folder / f"page{n + 1}.json").write_text(json.dumps(page))
        query: dict[str, Any] = {"$skip": str(skip) if n else None}
        exchanges.append(
            {"match": {"method": "GET", "query": query}, "body_file": f"page{n + 1}.json"}
        )
    spec = {"rewrite": ["https://prices.azure.com:443"], "exchanges": exchanges}
    (folder / "exchanges.json").write_text(json.dumps(spec, indent=1))
    return len(items)


AWS_REGIONS = [
    "us-east-1", "us-east-2", "us-west-1", "us-west-2", "ca-central-1", "sa-east-1",
    "eu-west-1", "eu-west-2", "eu-west-3", "eu-central-1", "eu-central-2", "eu-north-1",
    "eu-south-1", "eu-south-2", "ap-northeast-1", "ap-northeast-2", "ap-northeast-3",
    "ap-south-1", "ap-south-2", "ap-southeast-1", "ap-southeast-2", "ap-southeast-3",
    "ap-southeast-4", "me-central-1", "il-central-1",
]  # fmt: skip
_TERMS = [
    (lease, cls, option)
    for lease in ("1yr", "3yr")
    for cls in ("standard", "convertible")
    for option in ("No Upfront", "Partial Upfront", "All Upfront")
]


def _dimension(sku: str, code: str, rate: str, unit: str, price: str) -> dict[str, Any]:
    return {
        "unit": unit,
        "endRange": "Inf",
        "description": "generated",
        "appliesTo": [],
        "rateCode": f"{sku}.{code}.{rate}",
        "beginRange": "0",
        "pricePerUnit": {"USD": price},
    }


def _term(sku: str, code: str, dims: list[dict[str, Any]], attrs: dict[str, str]) -> dict[str, Any]:
    return {
        "priceDimensions": {d["rateCode"]: d for d in dims},
        "sku": sku,
        "effectiveDate": "2025-11-01T00:00:00Z",
        "offerTermCode": code,
        "termAttributes": attrs,
    }


def _aws_product(rng: random.Random, itype: str, region: str) -> str:
    """One GetProducts PriceList entry (a JSON string): on-demand plus 12 reserved terms."""
    sku = "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ23456789") for _ in range(16))
    od = rng.uniform(0.5, 100.0)
    attrs = {
        "instanceType": itype,
        "regionCode": region,
        "location": region,
        "vcpu": "96",
        "memory": "1152 GiB",
        **PRODUCT_FILTERS,  # what the collector's query asks for, so every product is kept
        "operation": "RunInstances",
        "usagetype": f"BoxUsage:{itype}",
        "instanceFamily": "GPU instance",
    }
    terms: dict[str, Any] = {"OnDemand": {}, "Reserved": {}}
    hrs = _dimension(sku, "JRTCKXETXF", "6YS6EN2CT7", "Hrs", f"{od:.10f}")
    terms["OnDemand"][f"{sku}.JRTCKXETXF"] = _term(sku, "JRTCKXETXF", [hrs], {})
    for n, (lease, cls, option) in enumerate(_TERMS):
        code = f"T{n:09d}"
        hours = 8760 if lease == "1yr" else 26280
        effective = od * rng.uniform(0.35, 0.75)
        upfront = {"No Upfront": 0.0, "Partial Upfront": 0.5, "All Upfront": 1.0}[option]
        dims = [_dimension(sku, code, "6YS6EN2CT7", "Hrs", f"{effective * (1 - upfront):.10f}")]
        if upfront:
            fee = str(round(effective * upfront * hours))
            dims.append(_dimension(sku, code, "2TG2D8R56U", "Quantity", fee))
        attributes = {"LeaseContractLength": lease, "OfferingClass": cls, "PurchaseOption": option}
        terms["Reserved"][f"{sku}.{code}"] = _term(sku, code, dims, attributes)
    product = {"productFamily": "Compute Instance", "attributes": attrs, "sku": sku}
    return json.dumps({"product": product, "serviceCode": "AmazonEC2", "terms": terms})


def aws_payloads(spot_history: int = 8, zones: int = 4, seed: int = 11) -> dict[str, Any]:
    """What AwsCollector.fetch returns for every GPU type in 25 regions: pricing pages of 100
    products, and spot history (`spot_history` price changes per zone) in pages of 1,000."""
    rng = random.Random(seed)
    payloads: dict[str, Any] = {}
    for itype in instance_types("aws"):
        products = [_aws_product(rng, itype, region) for region in AWS_REGIONS]
        for page in range(0, len(products), 100):
            payloads[f"pricing/{itype}/page-{page // 100 + 1}"] = {
                "FormatVersion": "aws_v1",
                "PriceList": products[page : page + 100],
            }
    for region in AWS_REGIONS:
        items = [
            {
                "AvailabilityZone": f"{region}{'abcdef'[z]}",
                "AvailabilityZoneId": f"{region[:2]}{region.split('-')[1][:1]}{z + 1}-az{z + 1}",
                "InstanceType": itype,
                "ProductDescription": "Linux/UNIX",
                "SpotPrice": f"{rng.uniform(0.1, 40.0):.6f}",
                "Timestamp": f"2026-11-29T{23 - h:02d}:{rng.randrange(60):02d}:00+00:00",
            }
            for itype in instance_types("aws")
            for z in range(zones)
            for h in range(spot_history)
        ]
        for page in range(0, len(items), 1000):
            payloads[f"spot/{region}/page-{page // 1000 + 1}"] = {
                "SpotPriceHistory": items[page : page + 1000],
                "NextToken": "",
            }
    return payloads


def _spot_xml(items: list[dict[str, Any]], token: str | None) -> str:
    """One DescribeSpotPriceHistory page as EC2's query API sends it (XML)."""
    rows = "".join(
        "<item>"
        f"<availabilityZone>{i['AvailabilityZone']}</availabilityZone>"
        f"<availabilityZoneId>{i['AvailabilityZoneId']}</availabilityZoneId>"
        f"<instanceType>{i['InstanceType']}</instanceType>"
        f"<productDescription>{i['ProductDescription']}</productDescription>"
        f"<spotPrice>{i['SpotPrice']}</spotPrice>"
        f"<timestamp>{i['Timestamp'].replace('+00:00', '.000Z')}</timestamp>"
        "</item>"
        for i in items
    )
    after = f"<nextToken>{token}</nextToken>" if token else ""
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<DescribeSpotPriceHistoryResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">'
        f"<requestId>{uuid.UUID(int=len(items))}</requestId>"
        f"<spotPriceHistorySet>{rows}</spotPriceHistorySet>{after}"
        "</DescribeSpotPriceHistoryResponse>"
    )


def write_aws_recording(folder: Path, per_page: int = 100) -> int:
    """The answers of `aws_payloads` on the wire, with an exchanges.json for the replay server:
    one GetProducts walk over every GPU product (JSON pages of `per_page`, chained by
    NextToken, as the collector asks when no instance type is configured), an empty
    DescribeInstanceTypes, and each region's DescribeSpotPriceHistory pages (XML). The number
    of price list products and spot items."""
    folder.mkdir(parents=True, exist_ok=True)
    payloads = aws_payloads()
    products = [p for k, v in payloads.items() if k.startswith("pricing/") for p in v["PriceList"]]
    json_type = "application/x-amz-json-1.1"
    target = {"X-Amz-Target": "AWSPriceListService.GetProducts"}
    exchanges: list[dict[str, Any]] = []
    pages = range(0, len(products), per_page)
    for n, start in enumerate(pages, 1):
        page: dict[str, Any] = {
            "FormatVersion": "aws_v1",
            "PriceList": products[start : start + per_page],
        }
        if n < len(pages):
            page["NextToken"] = f"pricing-{n + 1}"
        (folder / f"pricing-{n}.json").write_text(json.dumps(page))
        match = {"json": {"NextToken": f"pricing-{n}" if n > 1 else None}, "headers": target}
        exchanges.append({"match": {"method": "POST", "path": "/", **match},
                          "content_type": json_type, "body_file": f"pricing-{n}.json"})  # fmt: skip
    empty = '<DescribeInstanceTypesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">'
    (folder / "types.xml").write_text(empty + "<instanceTypeSet/></DescribeInstanceTypesResponse>")
    form = {"Action": "DescribeInstanceTypes"}
    exchanges.append({"match": {"method": "POST", "path": "/", "form": form},
                      "content_type": "text/xml", "body_file": "types.xml"})  # fmt: skip
    spot = 0
    for region in AWS_REGIONS:
        keys = [k for k in payloads if k.startswith(f"spot/{region}/")]
        for n, key in enumerate(keys, 1):
            items = payloads[key]["SpotPriceHistory"]
            spot += len(items)
            token = f"{region}-{n + 1}" if n < len(keys) else None
            name = f"spot-{region}-{n}.xml"
            (folder / name).write_text(_spot_xml(items, token))
            spot_form: dict[str, str | None] = {
                "Action": "DescribeSpotPriceHistory",
                "NextToken": f"{region}-{n}" if n > 1 else None,
            }
            exchanges.append({"match": {"method": "POST", "path": "/", "form": spot_form,
                                        "region": region},
                              "content_type": "text/xml", "body_file": name})  # fmt: skip
    (folder / "exchanges.json").write_text(json.dumps({"exchanges": exchanges}, indent=1))
    return len(products) + spot
