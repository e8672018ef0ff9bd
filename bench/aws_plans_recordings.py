"""The Savings Plans recordings of the tests (tests/fixtures/aws/public/) and the demo
(tracker/demo_data/aws/), written by `python bench/aws_plans.py recordings`.

Rates are made up in the real format (no stored source quotes a GPU type's Savings Plans rate);
the SKUs they discount are the offer files' own. The tests' us-east-1 file carries the traps
(tests/fixtures/aws/README.md); the demo's files are the same plans without them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aws_plans import VERSION, dumps, plan, rate, region_file, region_index, term, version_url

# Plan SKUs (made up in the real 16-character form).
CSP = {(y, o): f"CSP{y}YR{o}UPFRONT000"[:16] for y in (1, 3) for o in "NPA"}
EC2 = {
    ("p4d", 1, "N"): "EC2P4D1YRNOUPFRT",
    ("p4d", 3, "A"): "EC2P4D3YRALLUPFR",
    ("g4dn", 1, "N"): "EC2G4DN1YRNOUPFR",
}
# (sku, usageType, operation) of the offer files' plain Linux boxes.
P4D = {
    "us-east-1": ("H7NGEAC6UEHNTKSJ", "BoxUsage:p4d.24xlarge", "RunInstances"),
    "us-west-2": ("Z3YUXMVC7RJ9PMSQ", "USW2-BoxUsage:p4d.24xlarge", "RunInstances"),
    "eu-west-1": ("B6K8A9S3QEKRCN52", "EU-BoxUsage:p4d.24xlarge", "RunInstances"),
}
G4DN = ("7TVXMFHQR6U7W5CV", "BoxUsage:g4dn.xlarge", "RunInstances")
P5 = ("F3V9SX2TG8RBRHWZ", "BoxUsage:p5.48xlarge", "RunInstances")
# Rates per plan, USD per hour (p4d on-demand 21.957642, g4dn 0.526, p5 55.04).
P4D_CSP = {(1, "N"): "15.3703", (1, "P"): "14.6385", (1, "A"): "14.3458",
           (3, "N"): "10.6794", (3, "P"): "9.8878", (3, "A"): "9.4488"}  # fmt: skip
G4DN_CSP = {(1, "N"): "0.368", (1, "P"): "0.3504", (1, "A"): "0.3434",
            (3, "N"): "0.2556", (3, "P"): "0.2367", (3, "A"): "0.2262"}  # fmt: skip
P5_CSP = {(1, "N"): "41.28", (3, "N"): "27.52"}
OTHER_REGIONS = {"us-west-2": {(1, "N"): "15.3703", (3, "N"): "10.6794"},
                 "eu-west-1": {(1, "N"): "16.601"}}  # fmt: skip


def _box(plan_sku: str, box: tuple[str, str, str], price: str, region: str) -> dict[str, Any]:
    return rate(plan_sku, box[0], box[1], box[2], price, region)


def us_east_1(traps: bool) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    region, products, terms = "us-east-1", [], []
    for (years, option), sku in CSP.items():
        product = plan(sku, None, option, years, region)
        rates = [_box(sku, P4D[region], P4D_CSP[(years, option)], region),
                 _box(sku, G4DN, G4DN_CSP[(years, option)], region)]  # fmt: skip
        if (years, option) in P5_CSP:
            rates.append(_box(sku, P5, P5_CSP[(years, option)], region))
        if traps and (years, option) == (1, "N"):
            rates += _traps(sku)
        products.append(product)
        terms.append(term(product, rates))
    ec2 = {("p4d", 1, "N"): "13.9211", ("p4d", 3, "A"): "8.1591", ("g4dn", 1, "N"): "0.331"}
    for (family, years, option), sku in EC2.items():
        product = plan(sku, family, option, years, region)
        box = P4D[region] if family == "p4d" else G4DN
        products.append(product)
        terms.append(term(product, [_box(sku, box, ec2[(family, years, option)], region)]))
    if traps:
        # The same plan listed twice (one record), and a term whose plan no product names.
        terms.append(terms[0])
        orphan = {**term(products[0], [_box("ORPHANPLAN000001", G4DN, "0.1", region)])}
        terms.append({**orphan, "sku": "ORPHANPLAN000001"})
    return products, terms


def _traps(sku: str) -> list[dict[str, Any]]:
    """Rates the collector must not store: Windows and SQL Web p4d/g4dn (same usage type, other
    operation), a Dedicated g4dn, a CPU type, Fargate, Lambda and a Local Zone's g4dn."""
    r = "us-east-1"
    return [
        rate(sku, "WXSKTXT8EZ4N4GPD", "BoxUsage:p4d.24xlarge", "RunInstances:0002", "19.1", r),
        rate(sku, "SQLWEBG4DNXLARGE", "BoxUsage:g4dn.xlarge", "RunInstances:0200", "0.4", r),
        rate(sku, "DDDDG4DNDEDICATE", "DedicatedUsage:g4dn.xlarge", "RunInstances", "0.41", r),
        rate(sku, "CPUM5LARGE000001", "BoxUsage:m5.large", "RunInstances", "0.07", r),
        rate(
            sku,
            "FARGATEVCPU00001",
            "Fargate-vCPU-Hours:perCPU",
            "",
            "0.0323",
            r,
            service="AmazonECS",
        ),
        rate(
            sku,
            "LAMBDAGBSECOND01",
            "Lambda-GB-Second",
            "Invoke",
            "0.0000141",
            r,
            service="AWSLambda",
            unit="Lambda-GB-Second",
        ),
        rate(
            sku,
            "MIA1G4DNXLARGE01",
            "USE1-MIA1-BoxUsage:g4dn.xlarge",
            "RunInstances",
            "0.44",
            "us-east-1-mia-1",
        ),
    ]


def other(region: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    products, terms = [], []
    for (years, option), price in OTHER_REGIONS[region].items():
        sku = CSP[(years, option)]
        product = plan(sku, None, option, years, region)
        products.append(product)
        terms.append(term(product, [_box(sku, P4D[region], price, region)]))
    return products, terms


def write_all(root: Path) -> None:
    fixtures = root / "tests" / "fixtures" / "aws" / "public"
    demo = root / "tracker" / "demo_data" / "aws"
    regions = ["us-east-1", "us-west-2", "eu-west-1"]
    (fixtures / "savings-plans-region_index.json").write_text(
        dumps(region_index([*regions, "ap-east-1"])) + "\n"
    )
    (demo / "plans-region-index.json").write_text(dumps(region_index(regions)) + "\n")
    for region in regions:
        for folder, traps, name in ((fixtures, True, "savings-plans-"), (demo, False, "plans-")):
            products, terms = us_east_1(traps) if region == "us-east-1" else other(region)
            # us-west-2's file lists its terms before its products: JSON keeps no key order.
            text = region_file(region, products, terms, terms_first=region == "us-west-2")
            (folder / f"{name}{region}.json").write_text(text)
    assert version_url("us-east-1").endswith(f"/{VERSION}/us-east-1/index.json")
