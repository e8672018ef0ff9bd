"""What keeping every raw answer costs: a collection with its answers kept (`[raw] keep =
"90d"`, the default) against the same collection keeping none (`keep = "0"`), and the space a
second identical collection adds.

The collection is the write benchmark's (bench_store.py): every AWS GPU type in 25 regions as
the Price List and spot APIs answer (94 pages, 18 MB of JSON, kept as the SDK decoded them)
and a full-size Azure Retail Prices answer (60 pages of 1,000 items, 38 MB, kept as the bytes
received): 57,000 records. Each run fetches (Azure's pages decoded from their bytes, as from
the wire; AWS's handed over as the SDK would), keeps, parses and stores both providers through
the pipeline's own `fetch_and_parse` and `Store.write_run`, into a copy of a store holding the
previous collection; kept and not kept alternate, and each ratio pairs neighbours. Targets:
keeping adds at most 10% (ratio <= 1.10); a second identical collection adds under 1% of the
raw folder's size.

`--collect` measures a whole `gpu-tracker collect --provider aws --provider azure` instead, as
fresh processes (wall-clock and the process's CPU time), the same answers served on loopback in
their wire formats (`generate.write_aws_recording`: the Price List's JSON pages and EC2's spot
XML, which boto3 signs and decodes as from AWS; Azure's pages): 53,340 records; `--disk`
prints what each provider's demo answers take kept, per collection and per day at its default
interval (docs/trust.md).

    python bench/bench_raw.py [--runs 7]
    python bench/bench_raw.py --collect [--runs 5]
    python bench/bench_raw.py --disk
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

sys.path.insert(0, str(Path(__file__).parent))

from bench_collect import timed
from generate import (
    AWS_REGIONS,
    aws_payloads,
    azure_items,
    write_aws_recording,
    write_azure_recording,
)

from collectors import REGISTRY, collector_class
from collectors.aws.collector import AwsCollector
from collectors.azure.collector import AzureCollector
from collectors.base import ProviderSettings
from collectors.common import parse_duration
from collectors.http import listening, received
from storage.store import Store
from tracker.collecting.demo import demo_setup
from tracker.collecting.keeping import fetch_and_parse, keep
from tracker.collecting.replay import Recording, ReplayServer

T0 = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.iterdir()) if folder.is_dir() else 0


def _config(root: Path, name: str, urls: dict[str, str], keep: str) -> Path:
    config = root / f"{name}.toml"
    regions = ", ".join(f'"{r}"' for r in AWS_REGIONS)
    config.write_text(
        f'[storage]\npath = "{name}.duckdb"\n[raw]\nkeep = "{keep}"\n'
        f'[providers.aws]\nendpoint = "{urls["aws"]}"\nregions = [{regions}]\ntimeout = 60\n'
        f'[providers.azure]\nendpoint = "{urls["azure"]}"\ntimeout = 60\n'
    )
    return config


class _Fetched(AwsCollector):
    """AWS, its fetch handing over the payloads the SDK would have decoded."""

    payloads: ClassVar[dict[str, Any]] = {}

    def fetch(self) -> dict[str, Any]:
        return dict(self.payloads)


class _Received(AzureCollector):
    """Azure, its fetch decoding each page from the bytes the wire would carry."""

    pages: ClassVar[list[bytes]] = []

    def fetch(self) -> dict[str, Any]:
        payloads = {}
        for number, content in enumerate(self.pages, 1):
            payloads[f"page-{number}"] = document = json.loads(content)
            received(document, content)
        return payloads


def _collection(store: Path, folder: Path | None) -> tuple[float, float]:
    """One collection of both providers into `store`, its answers kept in `folder`: its
    wall-clock and CPU seconds (every thread of the process)."""
    started, cpu = time.perf_counter(), time.process_time()
    target = Store(store)
    for collector in (
        _Fetched(ProviderSettings(regions=tuple(AWS_REGIONS))),
        _Received(ProviderSettings()),
    ):
        parsed, kept = fetch_and_parse(collector, T0, folder)
        target.write_run(
            collector.name,
            parsed.records,
            started_at=T0,
            observed_at=T0,
            regions=collector.regions or None,
            keep_open=parsed.unreadable,
            unknown=parsed.unknown_instance_types,
            raw=kept,
        )
    return time.perf_counter() - started, time.process_time() - cpu


def in_process(runs: int) -> None:
    _Fetched.payloads = aws_payloads()
    items = azure_items(60_000)
    _Received.pages = [
        json.dumps({"Items": items[n * 1000 : (n + 1) * 1000], "NextPageLink": None}).encode()
        for n in range(60)
    ]
    with tempfile.TemporaryDirectory(prefix="bench-raw-") as tmp:
        root = Path(tmp)
        previous, store, raw = root / "previous.duckdb", root / "s.duckdb", root / "raw"
        _collection(previous, raw)  # the previous collection, and the raw folder it leaves
        first = _size(raw)
        shutil.copy(previous, store)
        _collection(store, raw)
        added = _size(raw) - first
        # kept: every answer new (written); again: every answer kept already (only hashed).
        times: dict[str, list[tuple[float, float]]] = {"kept": [], "again": [], "none": []}
        ratios: dict[str, list[float]] = {
            f"{way}, {kind}": [] for way in ("kept", "again") for kind in ("wall", "CPU")
        }
        for _ in range(runs):
            for name in ("kept", "again", "none"):
                if name == "kept":
                    shutil.rmtree(raw, ignore_errors=True)
                shutil.copy(previous, store)
                times[name].append(_collection(store, None if name == "none" else raw))
            for way in ("kept", "again"):
                for n, kind in enumerate(("wall", "CPU")):
                    ratios[f"{way}, {kind}"].append(times[way][-1][n] / times["none"][-1][n])
        records = Store(store).open_offers("aws", None) + Store(store).open_offers("azure", None)
    print(f"a collection of aws + azure: {records:,} open offers after it, {runs} runs each")
    print(f"raw folder after one collection: {first:,} bytes")
    share = f"{added / first:.2%}"
    print(f"a second identical collection added {added:,} bytes ({share}); target < 1%")
    words = {"kept": "every answer new", "again": "every answer kept already"}
    for label, r in ratios.items():
        way, kind = label.split(", ")
        n = 0 if kind == "wall" else 1
        none = statistics.median(t[n] for t in times["none"])
        kept = statistics.median(t[n] for t in times[way])
        print(
            f"{kind}, {words[way]}: keeping none {none:.2f} s, keeping raw {kept:.2f} s: "
            f"{statistics.median(r):.3f}x (min {min(r):.3f}, max {max(r):.3f}); target <= 1.10"
        )


def speed(runs: int) -> None:
    # The recordings' stand-in credentials: boto3 signs every request, as it would for real.
    os.environ.update(AWS_ACCESS_KEY_ID="AKIDEXAMPLE", AWS_SECRET_ACCESS_KEY="bench-secret")
    with tempfile.TemporaryDirectory(prefix="bench-raw-") as tmp, ExitStack() as stack:
        root = Path(tmp)
        counts = {
            "aws": write_aws_recording(root / "aws"),
            "azure": write_azure_recording(root / "azure"),
        }
        urls = {}
        for name, path in (("aws", ""), ("azure", "/api/retail/prices")):
            server = ReplayServer(Recording.load(root / name)).start()
            stack.callback(server.stop)
            urls[name] = server.url + path
        configs = {
            "kept": _config(root, "kept", urls, "90d"),
            "none": _config(root, "none", urls, "0"),
        }
        raw = root / "kept.duckdb.state" / "raw"
        times: dict[str, list[tuple[float, float]]] = {"kept": [], "none": []}
        ratios: dict[str, list[float]] = {"wall": [], "CPU": []}
        command = [sys.executable, "-m", "tracker", "--config"]
        both = ["collect", "--provider", "aws", "--provider", "azure"]
        timed([*command, str(configs["none"]), *both])
        previous = root / "previous.duckdb"
        shutil.copy(root / "none.duckdb", previous)
        timed([*command, str(configs["kept"]), *both])
        first, files = _size(raw), len(list(raw.iterdir()))
        timed([*command, str(configs["kept"]), *both])
        added = _size(raw) - first
        for _ in range(runs):
            for name in ("kept", "none"):
                shutil.rmtree(raw, ignore_errors=True)  # every kept run writes its files
                shutil.copy(previous, root / f"{name}.duckdb")
                times[name].append(timed([*command, str(configs[name]), *both]))
            for n, kind in enumerate(ratios):
                ratios[kind].append(times["kept"][-1][n] / times["none"][-1][n])
        records = subprocess.run(
            [
                *command,
                str(configs["none"]),
                "sql",
                "SELECT sum(records) FROM (SELECT records FROM collection_runs "
                "ORDER BY run_id DESC LIMIT 2)",
                "--format",
                "csv",
            ],
            capture_output=True,
            text=True,
        ).stdout.split()[-1]
        print(
            f"aws ({counts['aws']:,} products and spot items, 62 pages) and azure "
            f"({counts['azure']:,} items, 60 pages): {records} records, {runs} runs each"
        )
        print(f"raw folder after one collection: {first:,} bytes in {files} files")
        share = f"{added / first:.2%}"
        print(f"a second identical collection added {added:,} bytes ({share}); target < 1%")
        for n, (kind, r) in enumerate(ratios.items()):
            none = statistics.median(t[n] for t in times["none"])
            kept = statistics.median(t[n] for t in times["kept"])
            print(
                f"collect, {kind}: keeping none {none:.2f} s, keeping raw {kept:.2f} s: "
                f"{statistics.median(r):.3f}x (min {min(r):.3f}, max {max(r):.3f}); "
                "target <= 1.10"
            )


def disk() -> None:
    """Per provider: answers and bytes per collection as the demo answers them, kept size."""
    # Per day and over 90 days: at most, were every answer new each time; an unchanged one
    # costs nothing more (content addressing).
    print("| provider | answers | received | kept (gzip) | interval | per day | 90 days |")
    print("|---|---|---|---|---|---|---|")
    with (
        tempfile.TemporaryDirectory(prefix="bench-raw-disk-") as tmp,
        demo_setup(Path(tmp) / "s.duckdb") as setup,
    ):
        for name in sorted(setup.servers):
            settings, _ = setup.config.providers[name].settings(setup.env)
            collector = collector_class(name)(replace(settings, state_dir=Path(tmp) / name))
            with listening() as heard:
                payloads = collector.fetch()
            folder = Path(tmp) / "raw" / name
            kept = keep(folder, heard, payloads, name) or []
            received, stored = sum(k.bytes for k in kept), _size(folder)
            interval = REGISTRY[name].default_interval
            per_day = stored * 86400 // parse_duration(interval, "interval")
            print(
                f"| {name} | {len(kept)} | {received / 1e3:.1f} kB | {stored / 1e3:.1f} kB "
                f"| {interval} | {per_day / 1e3:,.0f} kB | {per_day * 90 / 1e6:.1f} MB |"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--collect", action="store_true", help="a whole collect, as processes")
    parser.add_argument("--disk", action="store_true", help="the demo answers' disk use instead")
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # the synthetic answers' unknown types, said per run
    if args.disk:
        disk()
    elif args.collect:
        speed(args.runs)
    else:
        in_process(args.runs)


if __name__ == "__main__":
    main()
