"""AWS's public Savings Plans file: the collector's streamed walk against a plain JSON pass.

A full-size synthetic us-east-1 Savings Plans file (the real JSON layout, as AWS indents it;
six Compute plans and EC2 Instance plans per family, every OS and tenancy, Fargate; by default
about 250,000 rates, a few of them the GPU boxes of the tests' us-east-1 offer file) is served
by a loopback server in its own process, with the tests' small EC2 offer file. Two fresh
processes, alternately, in the same run:

- plain: `requests` streams the file and `json.load` reads it whole, nothing else;
- collector: the `aws` collector in public mode (both region indexes, the EC2 file, the Savings
  Plans file walked as it arrives, the spot feed, the Advisor, then the parse to records), no
  state kept, so the file is read in full.

Each child reports its own wall time and peak RSS (`getrusage`). Targets: the collector within
2x of the plain pass, its peak RSS at most 300 MB.

    python bench/bench_aws_plans.py [--rates 250000] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from aws_plans import INDEX_PATH, region_index, synthetic, version_url
from bench_aws_public import SERVER, paired, verdict

HERE = Path(__file__).parent
FIXTURES = HERE.parent / "tests" / "fixtures" / "aws" / "public"
CSV_PATH = "/offers/v1.0/aws/AmazonEC2/20261125183542/us-east-1/index.csv"
PLANS_PATH = version_url("us-east-1")
# The plain Linux GPU boxes of the tests' us-east-1 offer file: (SKU, usageType, operation).
GPU = [
    ("H7NGEAC6UEHNTKSJ", "BoxUsage:p4d.24xlarge", "RunInstances"),
    ("7TVXMFHQR6U7W5CV", "BoxUsage:g4dn.xlarge", "RunInstances"),
    ("F3V9SX2TG8RBRHWZ", "BoxUsage:p5.48xlarge", "RunInstances"),
    ("X66XWR2BS2CFEUZC", "BoxUsage:g5.xlarge", "RunInstances"),
    ("TPKUC6XYSUQ3VFK2", "BoxUsage:g6.xlarge", "RunInstances"),
    ("5J649S23F4PX7VSG", "BoxUsage:g6e.xlarge", "RunInstances"),
    ("6TMC6UD2UCCDAMNP", "BoxUsage:p3.2xlarge", "RunInstances"),
    ("ZCQW6CXVMB8QRQEZ", "BoxUsage:p5en.48xlarge", "RunInstances"),
]

PLAIN = """
import json, resource, sys, time
import requests
started = time.perf_counter()
with requests.get(sys.argv[1], stream=True, timeout=60) as response:
    response.raw.decode_content = True
    document = json.load(response.raw)
rates = sum(len(t["rates"]) for t in document["terms"]["savingsPlan"])
print(json.dumps({"s": time.perf_counter() - started, "rates": rates,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

COLLECTOR = """
import json, resource, sys, time
from datetime import UTC, datetime
started = time.perf_counter()
from collectors.aws.collector import AwsCollector
from collectors.base import ProviderSettings
base = sys.argv[1]
settings = ProviderSettings(regions=("us-east-1",), timeout=60, options={
    "source": "public", "offers_endpoint": base, "spot_feed_url": base + "/spot.js",
    "spot_advisor_url": base + "/spot-advisor-data.json"})
collector = AwsCollector(settings)
payloads = collector.fetch()
result = collector.parse(payloads, observed_at=datetime.now(UTC))
kept = sum(len(t["rates"]) for t in payloads["public/plans/us-east-1"]["terms"])
plans = [r for r in result.records if r.offering_class and "savings" in r.offering_class]
print(json.dumps({"s": time.perf_counter() - started, "kept": kept, "records": len(plans),
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def _lay_out(root: Path, rates: int) -> int:
    ec2_index = {
        "formatVersion": "v1.0",
        "regions": {
            "us-east-1": {
                "regionCode": "us-east-1",
                "currentVersionUrl": CSV_PATH.removesuffix("csv") + "json",
            }
        },
    }
    current = root / "offers/v1.0/aws/AmazonEC2/current"
    current.mkdir(parents=True)
    (current / "region_index.json").write_text(json.dumps(ec2_index))
    target = root / CSV_PATH.lstrip("/")
    target.parent.mkdir(parents=True)
    target.write_bytes((FIXTURES / "us-east-1.csv").read_bytes())
    index = root / INDEX_PATH.lstrip("/")
    index.parent.mkdir(parents=True)
    index.write_text(json.dumps(region_index(["us-east-1"])))
    plans = root / PLANS_PATH.lstrip("/")
    plans.parent.mkdir(parents=True)
    with plans.open("w") as out:
        written = synthetic(out, rates, GPU)
    for name in ("spot.js", "spot-advisor-data.json"):
        (root / name).write_bytes((FIXTURES / name).read_bytes())
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rates", type=int, default=250_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    assert SERVER  # the same file server as the EC2 benchmark
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        written = _lay_out(root, args.rates)
        size_mb = (root / PLANS_PATH.lstrip("/")).stat().st_size / 1e6
        plains, ours = paired(root, PLAIN, PLANS_PATH, COLLECTOR, args.runs)
    print(f"file: {written:,} rates, {size_mb:,.0f} MB; kept {ours[0]['kept']:,} GPU rates,")
    print(f"      {ours[0]['records']:,} Savings Plans records")
    verdict("plain json.load pass:", plains, ours)


if __name__ == "__main__":
    main()
