"""AWS Savings Plans offer files in their JSON form: the recordings of the tests and the demo,
and a full-size synthetic us-east-1 file for the benchmark.

The real layout (AWS Billing User Guide, "Reading the service price list file for a Savings
Plan"): `version`, `publicationDate`, `regionCode`, `products` (per plan: `sku`,
`productFamily`, `serviceCode`, `usageType`, `operation`, `attributes` with `purchaseOption`,
`purchaseTerm`, ...) and `terms.savingsPlan` (per plan: `sku`, `description`, `effectiveDate`,
`leaseContractLength` {`duration`, `unit`}, `rates` [{`discountedSku`, `discountedUsageType`,
`discountedOperation`, `discountedServiceCode`, `rateCode`, `unit`, `discountedRate` {`price`,
`currency`}, `discountedRegionCode`, `discountedInstanceType`}]), written as AWS writes it
(two-space indent, `" : "`).

    python bench/aws_plans.py recordings   # rewrites the tests' and the demo's files
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any, TextIO

ROOT = Path(__file__).parents[1]
VERSION = "20261125190000"
INDEX_PATH = "/savingsPlan/v1.0/aws/AWSComputeSavingsPlan/current/region_index.json"
OPTIONS = {"N": "No Upfront", "P": "Partial Upfront", "A": "All Upfront"}
LOCATIONS = {
    "us-east-1": "US East (N. Virginia)",
    "us-west-2": "US West (Oregon)",
    "eu-west-1": "EU (Ireland)",
}


def dumps(value: Any) -> str:
    return json.dumps(value, indent=2, separators=(",", " : "))


def version_url(region: str, version: str = VERSION) -> str:
    return f"/savingsPlan/v1.0/aws/AWSComputeSavingsPlan/{version}/{region}/index.json"


def region_index(regions: list[str], version: str = VERSION) -> dict[str, Any]:
    return {
        "disclaimer": "This pricing list is for informational purposes only. All prices are "
        "subject to the additional terms included in the pricing pages on "
        "http://aws.amazon.com.",
        "publicationDate": f"{version[:4]}-{version[4:6]}-{version[6:8]}T19:00:00Z",
        "regions": [{"regionCode": r, "versionUrl": version_url(r, version)} for r in regions],
    }


def plan(sku: str, family: str | None, option: str, years: int, region: str) -> dict[str, Any]:
    """A plan's product: a Compute plan (family None, any region) or an EC2 Instance plan."""
    term = f"{years}yr{OPTIONS[option].replace(' ', '')}"
    if family is None:
        usage, kind, where = f"ComputeSP:{term}", "ComputeSavingsPlans", "Any"
        extra: dict[str, str] = {}
    else:
        usage, kind, where = f"EC2SP:{family}.{term}", "EC2InstanceSavingsPlans", LOCATIONS[region]
        extra = {"instanceType": family, "regionCode": region}
    attributes = {
        "purchaseOption": OPTIONS[option],
        "productFamily": kind,
        "serviceCode": kind,
        "granularity": "hourly",
        **extra,
        "locationType": "AWS Region",
        "purchaseTerm": f"{years}yr",
        "location": where,
        "usageType": usage,
    }
    return {
        "sku": sku,
        "productFamily": kind,
        "serviceCode": kind,
        "usageType": usage,
        "operation": "",
        "attributes": attributes,
    }


def term(product: dict[str, Any], rates: list[dict[str, Any]]) -> dict[str, Any]:
    attrs = product["attributes"]
    years = int(attrs["purchaseTerm"].removesuffix("yr"))
    kind = "Compute" if product["productFamily"] == "ComputeSavingsPlans" else "EC2 Instance"
    return {
        "sku": product["sku"],
        "description": f"{years} year {attrs['purchaseOption']} {kind} Savings Plan",
        "effectiveDate": "2026-11-01T00:00:00Z",
        "leaseContractLength": {"duration": years, "unit": "year"},
        "rates": rates,
    }


def rate(
    plan_sku: str,
    sku: str,
    usage: str,
    operation: str,
    price: str,
    region: str,
    *,
    service: str = "AmazonEC2",
    unit: str = "Hrs",
) -> dict[str, Any]:
    instance = usage.split(":", 1)[1] if "BoxUsage:" in usage or "Usage:" in usage else ""
    return {
        "discountedSku": sku,
        "discountedUsageType": usage,
        "discountedOperation": operation,
        "discountedServiceCode": service,
        "rateCode": f"{plan_sku}.{sku}",
        "unit": unit,
        "discountedRate": {"price": price, "currency": "USD"},
        "discountedRegionCode": region,
        "discountedInstanceType": instance,
    }


def region_file(
    region: str, products: list[dict[str, Any]], terms: list[dict[str, Any]], *, terms_first: bool
) -> str:
    head = {"version": VERSION, "publicationDate": "2026-11-25T19:00:00Z", "regionCode": region}
    body = {"terms": {"savingsPlan": terms}, "products": products}
    if not terms_first:
        body = {"products": products, "terms": {"savingsPlan": terms}}
    return dumps({**head, **body}) + "\n"


def synthetic(out: TextIO, rates: int, gpu: list[tuple[str, str, str]], *, seed: int = 7) -> int:
    """A full-size us-east-1 file of about `rates` rates: six Compute plans and EC2 Instance
    plans per family, each pricing every OS and tenancy of its types (Fargate and Lambda rates
    too); `gpu` = (sku, usageType, operation) of the GPU boxes, priced in every plan. Written
    term by term, never held whole; the number of rates written."""
    rng = random.Random(seed)
    families = [f"x{n}" for n in range(150)]
    sizes = ["large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge"]
    ops = ["RunInstances", "RunInstances:0002", "RunInstances:0010", "RunInstances:0006",
           "RunInstances:0004", "RunInstances:0200", "RunInstances:000g", "RunInstances:0800",
           "RunInstances:0102", "RunInstances:0100"]  # fmt: skip
    products = [plan(f"CSP{y}{o}0000000000000"[:16], None, o, y, "us-east-1")
                for y in (1, 3) for o in OPTIONS]  # fmt: skip
    per_compute = rates // 2 // len(products)
    ec2_plans = max(1, (rates - per_compute * len(products)) // 160)
    products += [
        plan(f"E{n:05d}{y}{o}000000000"[:16], families[n % 150], o, y, "us-east-1")
        for n, (y, o) in enumerate(rng.choice([(1, "N"), (3, "A")]) for _ in range(ec2_plans))
    ]
    out.write('{\n  "version" : "' + VERSION + '",\n  "publicationDate" : ')
    out.write('"2026-11-25T19:00:00Z",\n  "regionCode" : "us-east-1",\n  "products" : ')
    out.write(dumps(products).replace("\n", "\n  ") + ',\n  "terms" : {\n    "savingsPlan" : [ ')
    written = 0
    for number, product in enumerate(products):
        compute = product["productFamily"] == "ComputeSavingsPlans"
        count = per_compute if compute else 160
        rows = [rate(product["sku"], sku, usage, op, f"{rng.uniform(1, 40):.4f}", "us-east-1")
                for sku, usage, op in (gpu if compute else [])]  # fmt: skip
        while len(rows) < count:
            kind = rng.choice(["BoxUsage", "DedicatedUsage"])
            usage = f"{kind}:{rng.choice(families)}.{rng.choice(sizes)}"
            sku = "".join(rng.choices("ABCDEFGHJKLMNPQRSTUVWXYZ23456789", k=16))
            price = f"{rng.uniform(0.01, 30):.4f}"
            rows.append(rate(product["sku"], sku, usage, rng.choice(ops), price, "us-east-1"))
        if compute:
            rows.append(rate(product["sku"], "FARGATE000000001", "Fargate-vCPU-Hours:perCPU", "",
                             "0.0323", "us-east-1", service="AmazonECS"))  # fmt: skip
        out.write(
            ("" if number == 0 else ", ") + dumps(term(product, rows)).replace("\n", "\n    ")
        )
        written += len(rows)
    out.write(" ]\n  }\n}\n")
    return written


if __name__ == "__main__" and sys.argv[1:] == ["recordings"]:
    sys.path.insert(0, str(Path(__file__).parent))
    from aws_plans_recordings import write_all

    write_all(ROOT)
