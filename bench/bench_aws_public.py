"""AWS's public offer file: the collector's streamed read against a plain csv.reader pass.

A full-size synthetic us-east-1 `index.csv` (the real column layout, five metadata lines, the
quoted header; >= 500,000 product rows, about 1 % GPU instance rows) is served by a loopback
server in its own process. Two fresh processes, alternately, in the same run:

- plain: `requests` streams the file and passes every line through `csv.reader`, nothing else;
- collector: the `aws` collector in public mode (region index, the file streamed and filtered
  row by row, the spot feed, the Advisor, then the parse to records), no state kept, so the
  file is read in full.

Each child reports its own wall time and peak RSS (`getrusage`). Targets: the collector within
2x of the plain pass, its peak RSS at most 300 MB.

    python bench/bench_aws_public.py [--rows 500000] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from aws_offers import synthetic

HERE = Path(__file__).parent
FIXTURES = HERE.parent / "tests" / "fixtures" / "aws" / "public"
CSV_PATH = "/offers/v1.0/aws/AmazonEC2/20261125183542/us-east-1/index.csv"

SERVER = """
import sys
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
root = sys.argv[1]
class Quiet(SimpleHTTPRequestHandler):
    def __init__(self, *a, **k):
        super().__init__(*a, directory=root, **k)
    def log_message(self, *a):
        pass
server = ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
print(server.server_address[1], flush=True)
server.serve_forever()
"""

PLAIN = """
import csv, io, json, resource, sys, time
import requests
started = time.perf_counter()
with requests.get(sys.argv[1], stream=True, timeout=60) as response:
    response.raw.decode_content = True
    response.raw.auto_close = False
    rows = sum(1 for _ in csv.reader(io.TextIOWrapper(response.raw, encoding="utf-8", newline="")))
print(json.dumps({"s": time.perf_counter() - started, "rows": rows,
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
kept = len(payloads["public/offers/us-east-1"]["rows"])
print(json.dumps({"s": time.perf_counter() - started, "kept": kept,
                  "records": len(result.records),
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def _child(code: str, url: str) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", code, url], capture_output=True, text=True, cwd=HERE.parent
    )
    if done.returncode != 0:
        raise SystemExit(f"child failed ({done.returncode}):\n{done.stderr[-2000:]}")
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def _serve(root: Path) -> tuple[subprocess.Popen[str], str]:
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(root)], stdout=subprocess.PIPE, text=True
    )
    assert server.stdout is not None
    return server, f"http://127.0.0.1:{server.stdout.readline().strip()}"


def _lay_out(root: Path, rows: int) -> int:
    index = {
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
    (current / "region_index.json").write_text(json.dumps(index))
    target = root / CSV_PATH.lstrip("/")
    target.parent.mkdir(parents=True)
    with target.open("w", newline="") as out:
        written = synthetic(out, rows)
    for name in ("spot.js", "spot-advisor-data.json"):
        (root / name).write_bytes((FIXTURES / name).read_bytes())
    return written


def paired(
    root: Path, plain: str, plain_path: str, collector: str, runs: int
) -> tuple[list[dict[str, float]], list[dict[str, float]]]:
    """Serve `root` on loopback; run the plain pass (`plain`, given the URL of `plain_path`) and
    the collector (`collector`, given the server's URL) `runs` times each, alternately, so a
    drift of the machine hits both. Each run's figures, plain first."""
    server, url = _serve(root)
    try:
        plains, ours = [], []
        for _ in range(runs):
            plains.append(_child(plain, url + plain_path))
            ours.append(_child(collector, url))
    finally:
        server.terminate()
        server.wait()
    return plains, ours


def verdict(plain_name: str, plains: list[dict[str, float]], ours: list[dict[str, float]]) -> None:
    """Print the medians and the ratio against the targets (2x the plain pass's time, 300 MB
    peak RSS); exit non-zero when one is missed."""
    p = statistics.median(f["s"] for f in plains)
    c = statistics.median(f["s"] for f in ours)
    rss = max(f["rss_mb"] for f in ours)
    print(f"{plain_name:<22} {p:6.2f} s  (peak RSS {max(f['rss_mb'] for f in plains):.0f} MB)")
    print(f"aws public collector:  {c:6.2f} s  (peak RSS {rss:.0f} MB)")
    print(f"ratio: {c / p:.2f}x (target <= 2x); peak RSS {rss:.0f} MB (target <= 300 MB)")
    if c / p > 2 or rss > 300:
        raise SystemExit("target missed")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=500_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        written = _lay_out(root, args.rows)
        size_mb = (root / CSV_PATH.lstrip("/")).stat().st_size / 1e6
        plains, ours = paired(root, PLAIN, CSV_PATH, COLLECTOR, args.runs)
    print(f"file: {written:,} product rows, {size_mb:,.0f} MB; kept {ours[0]['kept']:,} GPU rows,")
    print(f"      {ours[0]['records']:,} records")
    verdict("plain csv.reader pass:", plains, ours)


if __name__ == "__main__":
    main()
