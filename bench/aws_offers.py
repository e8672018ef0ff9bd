"""AWS offer files in their CSV form: Price List products written out as a region's `index.csv`
(five metadata lines, the quoted header, one row per price dimension), and a full-size
synthetic us-east-1 file for the benchmark.

The recorded fixtures under tests/fixtures/aws/public/ were written by `write_products` from the
very products of the API recording, so the two sources can be compared record for record.
"""

from __future__ import annotations

import csv
import json
import random
from collections.abc import Iterable, Iterator
from typing import Any, TextIO

# The real file's column order (EC2 region file, 2026).
HEADER = [
    "SKU", "OfferTermCode", "RateCode", "TermType", "PriceDescription", "EffectiveDate",
    "StartingRange", "EndingRange", "Unit", "PricePerUnit", "Currency", "LeaseContractLength",
    "PurchaseOption", "OfferingClass", "Product Family", "serviceCode", "Location",
    "Location Type", "Instance Type", "Current Generation", "Instance Family", "vCPU",
    "Physical Processor", "Clock Speed", "Memory", "Storage", "Network Performance",
    "Processor Architecture", "Storage Media", "Volume Type", "Max Volume Size",
    "Max IOPS/volume", "Max IOPS Burst Performance", "Max throughput/volume", "Provisioned",
    "Tenancy", "EBS Optimized", "Operating System", "License Model", "Group",
    "Group Description", "Transfer Type", "From Location", "From Location Type", "To Location",
    "To Location Type", "usageType", "operation", "AvailabilityZone", "CapacityStatus",
    "Classic Networking", "Dedicated EBS Throughput", "ECU", "Elastic Graphics Type",
    "Enhanced Networking Supported", "From Region Code", "GPU", "GPU Memory", "Instance",
    "instanceSKU", "Intel AVX2 Available", "Intel AVX Available", "Intel Turbo Available",
    "MarketOption", "Normalization Size Factor", "Physical Cores", "Pre Installed S/W",
    "Processor Features", "Product Type", "Region Code", "Resource Type", "serviceName",
    "To Region Code", "Volume API Name", "VPCNetworkingSupport",
]  # fmt: skip
# API attribute -> CSV column, for the attributes the recordings carry.
COLUMN_OF = {
    "instanceType": "Instance Type", "regionCode": "Region Code", "location": "Location",
    "locationType": "Location Type", "instanceFamily": "Instance Family", "vcpu": "vCPU",
    "memory": "Memory", "gpu": "GPU", "gpuMemory": "GPU Memory", "storage": "Storage",
    "operatingSystem": "Operating System", "tenancy": "Tenancy", "licenseModel": "License Model",
    "preInstalledSw": "Pre Installed S/W", "capacitystatus": "CapacityStatus",
    "marketoption": "MarketOption", "operation": "operation", "usagetype": "usageType",
    "currentGeneration": "Current Generation", "physicalProcessor": "Physical Processor",
    "networkPerformance": "Network Performance", "servicecode": "serviceCode",
    "servicename": "serviceName", "availabilityzone": "AvailabilityZone",
    "normalizationSizeFactor": "Normalization Size Factor", "ecu": "ECU",
}  # fmt: skip
TERM_TYPES = {"OnDemand": "OnDemand", "Reserved": "Reserved"}


def metadata(version: str, published: str) -> list[list[str]]:
    """The five lines before the header."""
    return [
        ["FormatVersion", "v1.0"],
        [
            "Disclaimer",
            "This pricing list is for informational purposes only. All prices are subject to "
            "the additional terms included in the pricing pages on http://aws.amazon.com. All "
            "Free Tier prices are also subject to the terms included at "
            "https://aws.amazon.com/free/",
        ],
        ["Publication Date", published],
        ["Version", version],
        ["OfferCode", "AmazonEC2"],
    ]


def product_rows(product: dict[str, Any]) -> Iterator[list[str]]:
    """One CSV row per price dimension of a Price List product."""
    head = product["product"]
    base = dict.fromkeys(HEADER, "")
    base["SKU"], base["Product Family"] = head["sku"], head.get("productFamily", "")
    for name, value in head.get("attributes", {}).items():
        if name in COLUMN_OF:
            base[COLUMN_OF[name]] = value
    for kind, terms in product.get("terms", {}).items():
        for term in terms.values():
            attrs = term.get("termAttributes", {})
            for rate, dim in term["priceDimensions"].items():
                ((currency, price),) = dim["pricePerUnit"].items()
                row = dict(base)
                row.update(
                    {
                        "OfferTermCode": term["offerTermCode"],
                        "RateCode": rate,
                        "TermType": TERM_TYPES[kind],
                        "PriceDescription": dim.get("description", ""),
                        "EffectiveDate": term.get("effectiveDate", "")[:10],
                        "StartingRange": dim.get("beginRange", ""),
                        "EndingRange": dim.get("endRange", ""),
                        "Unit": dim["unit"],
                        "PricePerUnit": price,
                        "Currency": currency,
                        **{k: attrs.get(k, "") for k in ("LeaseContractLength", "PurchaseOption")},
                        "OfferingClass": attrs.get("OfferingClass", ""),
                    }
                )
                yield [row[c] for c in HEADER]


def write_products(out: TextIO, products: Iterable[dict[str, Any]], version: str) -> None:
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerows(metadata(version, f"{version[:4]}-{version[4:6]}-{version[6:8]}T00:00:00Z"))
    writer.writerow(HEADER)
    for product in products:
        writer.writerows(product_rows(product))


def api_products(page: dict[str, Any]) -> list[dict[str, Any]]:
    return [json.loads(item) for item in page["PriceList"]]


def synthetic(out: TextIO, rows: int, *, gpu_share: float = 0.01, seed: int = 5) -> int:
    """A full-size us-east-1 file: `rows` rows, about `gpu_share` of them GPU instance rows
    (on-demand and reserved, Linux and others), the rest storage, transfer and CPU rows."""
    rng = random.Random(seed)
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerows(metadata("20261125183542", "2026-11-25T18:35:42Z"))
    writer.writerow(HEADER)
    gpu_types = ["p4d.24xlarge", "p5.48xlarge", "g5.xlarge", "g6.xlarge", "g4dn.xlarge"]
    cpu_types = [f"{f}.{s}" for f in ("m5", "c6i", "r7g", "t3") for s in ("large", "xlarge")]
    written = 0
    while written < rows:
        gpu = rng.random() < gpu_share
        itype = rng.choice(gpu_types if gpu else cpu_types)
        row = dict.fromkeys(HEADER, "")
        sku = "".join(rng.choices("ABCDEFGHJKLMNPQRSTUVWXYZ23456789", k=16))
        row.update(
            {
                "SKU": sku, "OfferTermCode": "JRTCKXETXF",
                "RateCode": f"{sku}.JRTCKXETXF.6YS6EN2CT7",
                "TermType": "OnDemand", "PriceDescription": f"$1.00 per On Demand Linux {itype}",
                "EffectiveDate": "2026-11-01", "StartingRange": "0", "EndingRange": "Inf",
                "Unit": "Hrs", "PricePerUnit": f"{rng.uniform(0.1, 60):.10f}", "Currency": "USD",
                "Product Family": "Compute Instance", "serviceCode": "AmazonEC2",
                "Location": "US East (N. Virginia)", "Location Type": "AWS Region",
                "Instance Type": itype, "Current Generation": "Yes",
                "Instance Family": "GPU instance" if gpu else "General purpose",
                "vCPU": "8", "Memory": "32 GiB", "Tenancy": rng.choice(["Shared", "Dedicated"]),
                "Operating System": rng.choice(["Linux", "Windows", "RHEL"]),
                "License Model": "No License required", "usageType": f"BoxUsage:{itype}",
                "operation": "RunInstances", "CapacityStatus": "Used", "GPU": "8" if gpu else "",
                "MarketOption": "OnDemand", "Pre Installed S/W": "NA", "Region Code": "us-east-1",
                "serviceName": "Amazon Elastic Compute Cloud",
            }
        )  # fmt: skip
        writer.writerow([row[c] for c in HEADER])
        written += 1
    return written
