"""AWS without an account: the offer files, the spot feed and the Spot Advisor through a loopback
server, against the API path on the same products.

The CSV offer files under tests/fixtures/aws/public/ were written from the very products of
the API recording (tracker/demo_data/aws/pricing-*.json), plus two rows only the CSV has (a
Dedicated g4dn and a CPU type): the two sources must give identical on-demand and reserved
records. Expected money is worked out by hand from the files' own strings.
"""

from __future__ import annotations

import gzip
import json
import pickle
import threading
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from collectors import REGISTRY
from collectors.aws import feeds
from collectors.aws.collector import AwsCollector
from collectors.base import ParseResult, PriceRecord, ProviderSettings
from collectors.common import CollectorError, ConfigError, PayloadShapeError
from storage.connection import connect
from storage.reads import tco
from storage.store import Store
from tests.collectors.support import demo_of
from tracker.cli import cli
from tracker.collecting import isolation
from tracker.config import from_dict

PUBLIC = Path(__file__).parents[1] / "fixtures" / "aws" / "public"
DEMO = demo_of("aws")
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
REGIONS = ("us-east-1", "us-west-2", "eu-west-1")
INDEX = "/offers/v1.0/aws/AmazonEC2/current/region_index.json"
VERSION = "/offers/v1.0/aws/AmazonEC2/20261125183542"
PLANS_INDEX = "/savingsPlan/v1.0/aws/AWSComputeSavingsPlan/current/region_index.json"
PLANS_VERSION = "/savingsPlan/v1.0/aws/AWSComputeSavingsPlan/20261125190000"


class Files(ThreadingHTTPServer):
    """Serves the fixture files by path, with an ETag, answering If-None-Match with 304; keeps
    every request's path and conditional headers."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.files: dict[str, bytes] = {INDEX: (PUBLIC / "region_index.json").read_bytes()}
        for region in REGIONS:
            self.files[f"{VERSION}/{region}/index.csv"] = (PUBLIC / f"{region}.csv").read_bytes()
        self.files[PLANS_INDEX] = (PUBLIC / "savings-plans-region_index.json").read_bytes()
        for region in REGIONS:
            path = f"{PLANS_VERSION}/{region}/index.json"
            self.files[path] = (PUBLIC / f"savings-plans-{region}.json").read_bytes()
        self.files["/spot.js"] = (PUBLIC / "spot.js").read_bytes()
        self.files["/spot-advisor-data.json"] = (PUBLIC / "spot-advisor-data.json").read_bytes()
        self.requests: list[tuple[str, str | None]] = []
        self.modified_since: list[tuple[str, str | None]] = []
        self.gzipped: set[str] = set()  # paths sent gzip-encoded to a client that accepts it
        # path -> byte offset where the answer stops until `release` is set (10 s at most);
        # `paused` says, per pause, whether it was released.
        self.pause_at: dict[str, int] = {}
        self.release = threading.Event()
        self.paused: list[bool] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: Files

    def do_GET(self) -> None:
        self.server.requests.append((self.path, self.headers.get("If-None-Match")))
        self.server.modified_since.append((self.path, self.headers.get("If-Modified-Since")))
        body = self.server.files.get(self.path)
        if body is None:
            self.send_error(404)
            return
        etag = f'"{len(body)}-{hash(body) & 0xFFFF}"'
        if self.headers.get("If-None-Match") == etag:
            self.send_response(304)
            self.end_headers()
            return
        pause = self.server.pause_at.get(self.path, len(body))
        self.send_response(200)
        if self.path in self.server.gzipped and "gzip" in self.headers.get("Accept-Encoding", ""):
            body, pause = gzip.compress(body), len(body)
            self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("ETag", etag)
        self.send_header("Last-Modified", "Wed, 25 Nov 2026 18:35:42 GMT")
        self.end_headers()
        self.wfile.write(body[:pause])
        if pause < len(body):
            self.wfile.flush()
            self.server.paused.append(self.server.release.wait(10))
            self.wfile.write(body[pause:])

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def files() -> Iterator[Files]:
    server = Files()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def public(files: Files, state: Path | None, **options: Any) -> AwsCollector:
    settings = ProviderSettings(
        regions=REGIONS,
        options={
            "source": "public",
            "offers_endpoint": files.url,
            "spot_feed_url": files.url + "/spot.js",
            "spot_advisor_url": files.url + "/spot-advisor-data.json",
            **options,
        },
        max_retries=0,
        timeout=5,
        state_dir=state,
    )
    return AwsCollector(settings)


def api_parse() -> ParseResult:
    """The API path's records of the recording's current products (its parse is pure)."""
    payloads = {
        f"pricing/{path.stem.removeprefix('pricing-')}/page-1": json.loads(path.read_text())
        for path in sorted(DEMO.glob("pricing-*.json"))
    }
    settings = ProviderSettings(regions=REGIONS, options={"source": "api"})
    return AwsCollector(settings).parse(payloads, observed_at=NOW)


# A GPU type only the CSV has (the API recording has no answer for it).
CSV_ONLY = "g4ad.xlarge"


# Savings Plans come from the public files alone.
PLAN_CLASSES = ("compute_savings_plan", "ec2_instance_savings_plan")


def listed(records: list[PriceRecord], *kinds: str) -> list[PriceRecord]:
    """The records of `kinds` both sources price, in a stable order."""
    both = (
        r
        for r in records
        if r.price_kind in kinds and r.instance_type != CSV_ONLY
        and r.offering_class not in PLAN_CLASSES
    )  # fmt: skip
    return sorted(both, key=lambda r: repr(r.key()))


def plan_records(records: list[PriceRecord]) -> list[PriceRecord]:
    return [r for r in records if r.offering_class in PLAN_CLASSES]


def test_public_files_give_the_api_records_exactly(files: Files, tmp_path: Path) -> None:
    result = public(files, tmp_path).parse(public(files, tmp_path).fetch(), observed_at=NOW)
    api = listed(api_parse().records, "on_demand", "reserved")
    assert len(api) == 35
    assert listed(result.records, "on_demand", "reserved") == api
    # The traps only the CSV has: the Dedicated g4dn, the g4dn with SQL Web and the CPU row
    # never become records.
    found = {r.price_per_hour for r in result.records}
    assert not found & {Decimal("0.5786"), Decimal("0.593")}
    assert "m5.large" not in {r.instance_type for r in result.records}
    assert result.unknown_instance_types == set()


def test_a_gpu_type_the_table_does_not_know_is_stored_without_a_model(
    files: Files, tmp_path: Path
) -> None:
    """Without credentials there is no DescribeInstanceTypes: g4ad.xlarge (an AMD GPU the table
    does not know) is kept by its attributes ("GPU instance"), with the Price List's count and
    memory ("1", "8 GiB") and no model, and the run summary names it."""
    result = public(files, tmp_path).parse(public(files, tmp_path).fetch(), observed_at=NOW)
    [record] = [r for r in result.records if r.instance_type == CSV_ONLY]
    assert record == PriceRecord(
        provider="aws",
        region="us-east-1",
        zone=None,
        instance_type="g4ad.xlarge",
        price_kind="on_demand",
        term_months=None,
        payment_option=None,
        offering_class=None,
        currency="USD",
        price_per_hour=Decimal("0.37853"),  # the row's "0.3785300000"
        upfront_total=None,
        gpu_model=None,
        gpu_count=1,
        gpu_memory_gib=8,
        vcpus=4.0,
        memory_gib=16.0,
    )
    assert result.facts["g4ad.xlarge"] == "api" and result.facts["p4d.24xlarge"] == "table"
    summary = result.gpu_summary()
    assert (summary.priced, summary.from_api, summary.without_facts) == (9, 1, ["g4ad.xlarge"])


def test_reserved_effective_hourly_by_hand(files: Files, tmp_path: Path) -> None:
    result = public(files, tmp_path).parse(public(files, tmp_path).fetch(), observed_at=NOW)
    (partial,) = [
        r
        for r in result.records
        if (r.instance_type, r.region, r.term_months, r.payment_option, r.offering_class)
        == ("g4dn.xlarge", "us-east-1", 12, "partial_upfront", "standard")
    ]
    # 0.158 + 1382 / 8760 = 0.315763 (to six places), the recording's own strings.
    assert partial.price_per_hour == Decimal("0.315763")
    assert partial.upfront_total == Decimal("1382.000000")
    (whole,) = [
        r
        for r in result.records
        if (r.instance_type, r.region, r.term_months, r.payment_option, r.offering_class)
        == ("p4d.24xlarge", "us-east-1", 36, "all_upfront", "standard")
    ]
    # All Upfront: an "Hrs" dimension of 0 and the fee, 214420 / 26280 = 8.159056.
    assert (whole.price_per_hour, whole.upfront_total) == (Decimal("8.159056"), Decimal("214420"))


def test_spot_feed_one_price_per_region_zone_null(files: Files, tmp_path: Path) -> None:
    result = public(files, tmp_path).parse(public(files, tmp_path).fetch(), observed_at=NOW)
    spot = {(r.region, r.instance_type): r for r in result.records if r.price_kind == "spot"}
    # "us-east" and "eu-ireland" are the feed's own names for us-east-1 and eu-west-1; p5 is
    # "N/A*" (not sold as spot there); ap-east-1 was not asked; m5.large is no GPU type.
    assert sorted(spot) == [
        ("eu-west-1", "g4dn.xlarge"),
        ("eu-west-1", "g6.xlarge"),
        ("eu-west-1", "p4d.24xlarge"),
        ("us-east-1", "g4dn.xlarge"),
        ("us-east-1", "g5.xlarge"),
        ("us-east-1", "p3.2xlarge"),
        ("us-east-1", "p4d.24xlarge"),
        ("us-west-2", "g4dn.xlarge"),
        ("us-west-2", "p4d.24xlarge"),
    ]
    p4d = spot[("us-east-1", "p4d.24xlarge")]
    assert (p4d.zone, p4d.effective_at, p4d.price_per_hour, p4d.currency) == (
        None,
        None,  # dated by the collection
        Decimal("8.046800"),
        "USD",
    )
    assert p4d.vcpus == 96  # the host size the offer file gave


def test_advisor_bands(files: Files, tmp_path: Path) -> None:
    result = public(files, tmp_path).parse(public(files, tmp_path).fetch(), observed_at=NOW)
    assert result.interruption is not None
    bands = {(b.region, b.instance_type): b for b in result.interruption}
    # p3.2xlarge's band index 7 is not among the ranges: left out; Windows and m5.large too.
    assert sorted(bands) == [
        ("eu-west-1", "g4dn.xlarge"),
        ("eu-west-1", "g6.xlarge"),
        ("us-east-1", "g4dn.xlarge"),
        ("us-east-1", "g5.xlarge"),
        ("us-east-1", "p4d.24xlarge"),
        ("us-west-2", "g4dn.xlarge"),
        ("us-west-2", "p4d.24xlarge"),
    ]
    p4d = bands[("us-east-1", "p4d.24xlarge")]
    assert (p4d.band, p4d.band_low, p4d.band_high, p4d.savings_pct) == (
        ">20%",
        Decimal("0.2"),
        Decimal("1"),
        63,
    )
    g4 = bands[("us-east-1", "g4dn.xlarge")]
    assert (g4.band, g4.band_low, g4.band_high) == ("5-10%", Decimal("0.05"), Decimal("0.1"))
    assert p4d.as_of == datetime(2026, 11, 25, 18, 35, 42, tzinfo=UTC)  # Last-Modified


def test_an_unchanged_region_file_is_not_read_again(files: Files, tmp_path: Path) -> None:
    first = public(files, tmp_path).fetch()
    csvs = [p for p, _ in files.requests if p.endswith(".csv")]
    assert len(csvs) == 3
    files.requests.clear()
    again = public(files, tmp_path)
    result = again.parse(again.fetch(), observed_at=NOW)
    assert [p for p, _ in files.requests if p.endswith(".csv")] == []  # the same versioned URL
    assert "offer files unchanged since the last run: us-east-1, us-west-2, eu-west-1" in (
        result.notes
    )
    before = public(files, tmp_path).parse(first, observed_at=NOW)
    assert result.records == before.records
    # A new version in the index: asked with the ETag seen; 304 keeps the rows already kept.
    index = json.loads(files.files[INDEX])
    for region in REGIONS:
        old = index["regions"][region]["currentVersionUrl"]
        index["regions"][region]["currentVersionUrl"] = old.replace("20261125", "20261126")
        files.files[old.replace("20261125", "20261126").removesuffix("json") + "csv"] = files.files[
            old.removesuffix("json") + "csv"
        ]
    files.files[INDEX] = json.dumps(index).encode()
    files.requests.clear()
    files.modified_since.clear()
    third = public(files, tmp_path)
    result = third.parse(third.fetch(), observed_at=NOW)
    conditional = [(p, tag) for p, tag in files.requests if p.endswith(".csv")]
    assert len(conditional) == 3 and all(tag for _, tag in conditional)
    # Both validators the first answer gave go back: a server without ETags still answers 304.
    since = {date for p, date in files.modified_since if p.endswith(".csv")}
    assert since == {"Wed, 25 Nov 2026 18:35:42 GMT"}
    assert result.records == before.records
    # The 304 is remembered under the new URL: the next run asks for no offer file at all.
    files.requests.clear()
    fourth = public(files, tmp_path)
    assert fourth.parse(fourth.fetch(), observed_at=NOW).records == before.records
    assert [p for p, _ in files.requests if p.endswith(".csv")] == []


def test_the_offer_file_is_read_as_it_arrives(
    files: Files, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server sends the file's rows, then holds back the rest (3,000 CPU rows) until the
    collector has tested a row: a reader that waited for the whole file would never test one
    while the answer is held, and the pause would end unreleased."""
    path = f"{VERSION}/us-east-1/index.csv"
    whole = files.files[path]
    cpu_row = next(line for line in whole.splitlines(keepends=True) if b'"m5.large"' in line)
    files.files[path] = whole + cpu_row * 3000
    files.pause_at[path] = len(whole)
    tested = feeds.might_be_gpu

    def first_test(row: list[str], family: int, gpu: int) -> bool:
        files.release.set()
        return tested(row, family, gpu)

    monkeypatch.setattr(feeds, "might_be_gpu", first_test)
    result = public(files, None).parse(public(files, None).fetch(), observed_at=NOW)
    assert files.paused == [True]
    assert listed(result.records, "on_demand", "reserved") == listed(
        api_parse().records, "on_demand", "reserved"
    )


def test_a_gzip_encoded_offer_file_is_unpacked_on_the_way(files: Files, tmp_path: Path) -> None:
    """The raw stream under requests is not decoded by requests itself: the collector asks
    urllib3 to unpack it, else csv would meet gzip bytes."""
    files.gzipped = {f"{VERSION}/{region}/index.csv" for region in REGIONS}
    result = public(files, None).parse(public(files, None).fetch(), observed_at=NOW)
    assert listed(result.records, "on_demand", "reserved") == listed(
        api_parse().records, "on_demand", "reserved"
    )


def test_an_offer_file_that_is_not_utf8_fails_as_a_payload_error(
    files: Files, tmp_path: Path
) -> None:
    path = f"{VERSION}/us-east-1/index.csv"
    files.files[path] += b'"\xff\xfe",' * 20 + b"\n"
    with pytest.raises(PayloadShapeError, match="us-east-1 offer file: 'utf-8' codec"):
        public(files, None).fetch()


def test_rows_kept_by_a_version_copying_other_columns_are_read_again(
    files: Files, tmp_path: Path
) -> None:
    public(files, tmp_path).fetch()
    state = tmp_path / "aws-offers" / "us-east-1.json"
    kept = json.loads(state.read_text())
    state.write_text(json.dumps({**kept, "kept_for": kept["kept_for"][:-1]}))
    files.requests.clear()
    answer = public(files, tmp_path).fetch()
    assert [p for p, _ in files.requests if p.endswith(".csv")] == [
        f"{VERSION}/us-east-1/index.csv"
    ]
    assert answer["public/offers/us-east-1"]["reused"] is False
    assert answer["public/offers/us-west-2"]["reused"] is True


def test_a_file_cut_before_its_header_fails_loudly(files: Files, tmp_path: Path) -> None:
    files.files[f"{VERSION}/us-east-1/index.csv"] = b'"FormatVersion","v1.0"\n'
    with pytest.raises(PayloadShapeError, match="us-east-1 offer file: ends before its header"):
        public(files, tmp_path).fetch()


def no_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Nothing for boto3's chain to find (and no metadata service to ask)."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def test_auto_without_credentials_uses_the_public_files(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, files: Files
) -> None:
    no_credentials(monkeypatch, tmp_path)
    collector = public(files, tmp_path, source="auto")
    collector.check_credentials()  # nothing to find, nothing missing
    result = collector.parse(collector.fetch(), observed_at=NOW)
    assert result.notes[0] == "prices from the public price files (no AWS credentials found)"
    keyed = ProviderSettings(credentials={"aws_access_key_id": "a", "aws_secret_access_key": "b"})
    assert AwsCollector(keyed).source == ("api", "AWS credentials found")
    for key in ("pricing_endpoint", "ec2_endpoint"):  # a mirror of an API: the APIs it is
        mirror = ProviderSettings(options={key: "http://127.0.0.1:4566"})
        assert AwsCollector(mirror).source == ("api", "an API endpoint is configured")


@pytest.mark.parametrize("source", ["auto", "api"])
def test_a_broken_credential_chain_is_a_collector_error_not_a_crash(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, files: Files, source: str
) -> None:
    no_credentials(monkeypatch, tmp_path)
    monkeypatch.setenv("AWS_PROFILE", "nowhere")  # named, but in no config file
    collector = public(files, tmp_path, source=source)
    with pytest.raises(CollectorError, match=r"config profile \(nowhere\) could not be found"):
        collector.check_credentials()


def test_public_and_api_spot_series_stay_apart_in_the_store(files: Files, tmp_path: Path) -> None:
    """The API's per-zone spot series and the feed's per-region one have different offer keys
    (a zone against NULL): one source's price never becomes a change of the other's series, and
    a run of one source does not close the other's series as withdrawn."""
    store = Store(tmp_path / "prices.duckdb")
    collector = public(files, tmp_path)
    result = collector.parse(collector.fetch(), observed_at=NOW)
    feed_p4d = [
        r
        for r in result.records
        if (r.price_kind, r.region, r.instance_type) == ("spot", "us-east-1", "p4d.24xlarge")
    ]
    zoned = replace(feed_p4d[0], zone="use1-az6", price_per_hour=Decimal("7.5"))
    earlier, later = NOW.replace(hour=10), NOW.replace(hour=14)
    store.write_run(
        "aws", [zoned], started_at=earlier, observed_at=earlier, regions=REGIONS, spot_zoned=True
    )
    assert result.spot_zoned is False
    store.write_run(
        "aws",
        result.records,
        started_at=NOW,
        observed_at=NOW,
        regions=REGIONS,
        interruption=result.interruption,
        spot_zoned=result.spot_zoned,
    )
    # Back to the API (credentials found again): the feed's series is not withdrawn either.
    store.write_run(
        "aws", [zoned], started_at=later, observed_at=later, regions=REGIONS, spot_zoned=True
    )
    with connect(tmp_path / "prices.duckdb", read_only=True) as con:
        series = con.execute(
            "SELECT zone, price_per_hour, valid_from, valid_to FROM prices"
            " WHERE price_kind = 'spot' AND region = 'us-east-1'"
            " AND instance_type = 'p4d.24xlarge' ORDER BY zone"
        ).fetchall()
        bands = con.execute(
            "SELECT band, band_low, band_high, savings_pct FROM spot_interruption"
            " WHERE region = 'us-west-2' AND instance_type = 'p4d.24xlarge'"
        ).fetchall()
    # Each series keeps its own price from its own start: two intervals, not one changed.
    # Both stay open: the one the last run did not confirm shows stale, never withdrawn.
    assert [(z, p, to) for z, p, _, to in series] == [("use1-az6", 7.5, None), (None, 8.0468, None)]
    assert series[0][2] == earlier and series[1][2] == NOW
    assert bands == [("15-20%", 0.15, 0.2, 64)]


def test_the_feeds_spot_is_per_region_even_when_the_index_names_no_region_asked(
    files: Files, tmp_path: Path
) -> None:
    files.files[INDEX] = json.dumps({"formatVersion": "v1.0", "regions": {}}).encode()
    collector = public(files, tmp_path)
    result = collector.parse(collector.fetch(), observed_at=NOW)
    assert not [r for r in result.records if r.price_kind != "spot"]
    assert {r.zone for r in result.records} == {None} and len(result.records) == 9
    assert result.spot_zoned is False  # else the API's per-zone series would be closed


def test_tco_spot_overhead_from_the_advisor_band(files: Files, tmp_path: Path) -> None:
    path = tmp_path / "prices.duckdb"
    collector = public(files, tmp_path)
    result = collector.parse(collector.fetch(), observed_at=NOW)
    Store(path).write_run(
        "aws",
        result.records,
        started_at=NOW,
        observed_at=NOW,
        regions=REGIONS,
        interruption=result.interruption,
    )
    need = tco.Need(gpu="A100", gpus=8, months=1, providers=("aws",), spot_overhead_advisor=True)
    spot = {
        (r["region"], r["instance_type"]): r["total_usd"]
        for r in tco.read(path, need).rows
        if r["price_kind"] == "spot"
    }
    # One p4d (8 x A100) for 730 h: us-east-1 ">20%" redoes up to every hour, 8.0468 x 730 x 2
    # = 11,748.33; us-west-2 "15-20%", 7.995 x 730 x 1.2 = 7,003.62; eu-west-1 has no band:
    # the 10 % default, 9.1234 x 730 x 1.1 = 7,326.09.
    assert spot[("us-east-1", "p4d.24xlarge")] == pytest.approx(11748.33)
    assert spot[("us-west-2", "p4d.24xlarge")] == pytest.approx(7003.62)
    assert spot[("eu-west-1", "p4d.24xlarge")] == pytest.approx(7326.09)
    fixed = tco.read(path, replace(need, spot_overhead_advisor=False, spot_overhead_pct=0))
    plain = {(r["region"], r["price_kind"]): r["total_usd"] for r in fixed.rows}
    assert plain[("us-east-1", "spot")] == pytest.approx(5874.16)  # 8.0468 x 730


def test_collect_and_latest_through_the_cli(
    files: Files, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No key at all and no `source`: `collect` stores AWS from the public files (the summary
    says so and why), a second run reads no offer file again, and `latest` shows the band
    beside the spot prices."""
    no_credentials(monkeypatch, tmp_path)
    lines = [f'[storage]\npath = "{tmp_path / "prices.duckdb"}"', "[providers.aws]"]
    lines += [
        f"regions = {list(REGIONS)}",
        f'offers_endpoint = "{files.url}"',
        f'spot_feed_url = "{files.url}/spot.js"',
        f'spot_advisor_url = "{files.url}/spot-advisor-data.json"',
    ]
    lines += [f"[providers.{name}]\nenabled = false" for name in REGISTRY if name != "aws"]
    config = tmp_path / "config.toml"
    config.write_text("\n".join(lines) + "\n")
    runner = CliRunner()
    first = runner.invoke(cli, ["--config", str(config), "collect"])
    assert first.exit_code == 0, first.output
    said = " ".join(first.output.split())
    assert "prices from the public price files (no AWS credentials found)" in said, said
    files.requests.clear()
    again = runner.invoke(cli, ["--config", str(config), "collect"])
    assert again.exit_code == 0, again.output
    assert not [p for p, _ in files.requests if p.endswith(".csv")]
    args = ["--config", str(config), "latest", "--provider", "aws", "--kind", "spot"]
    shown = runner.invoke(cli, [*args, "--format", "json"])
    bands = {(r["region"], r["instance_type"]): r["interruption"] for r in json.loads(shown.output)}
    assert bands[("us-east-1", "p4d.24xlarge")] == ">20%"
    assert bands[("eu-west-1", "p4d.24xlarge")] is None  # the Advisor has no entry for it
    table = runner.invoke(cli, [*args, "--gpu", "T4"])
    assert "interruption" in table.output and "5-10%" in table.output


def test_an_advisor_that_cannot_be_read_leaves_the_bands_and_keeps_the_prices(
    files: Files, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    del files.files["/spot-advisor-data.json"]
    collector = public(files, tmp_path)
    result = collector.parse(collector.fetch(), observed_at=NOW)
    assert result.interruption is None  # the store keeps the bands it has
    assert len(listed(result.records, "on_demand", "reserved")) == 35
    assert "the Spot Advisor's bands are left as they were" in caplog.text
    assert "HTTP 404" in caplog.text


def test_the_api_source_reads_the_advisor_where_its_url_is_given(
    replay: Any, files: Files, tmp_path: Path
) -> None:
    from tests.collectors.test_aws import answers, make

    server = replay(*answers(tmp_path))
    url = files.url + "/spot-advisor-data.json"
    collector = make(server.url, regions=("us-east-1",), options={"spot_advisor_url": url})
    payloads = collector.fetch()
    result = collector.parse(payloads, observed_at=NOW)
    assert payloads["source"] == {"source": "api", "why": "an API endpoint is configured"}
    assert (
        result.notes[0] == "prices from the Price List and EC2 APIs (an API endpoint is configured)"
    )
    assert {(b.instance_type, b.band) for b in result.interruption or []} == {
        ("p4d.24xlarge", ">20%"),
        ("g4dn.xlarge", "5-10%"),
        ("g5.xlarge", "<5%"),
    }
    # Spot from the API keeps its zones.
    assert {r.zone for r in result.records if r.price_kind == "spot"} >= {"use1-az6"}
    # A mirror of the APIs without the Advisor's URL: not asked at all.
    files.requests.clear()
    make(server.url, regions=("us-east-1",)).fetch()
    assert files.requests == []


def test_the_daemons_collection_child_hands_back_bands_and_notes(
    files: Files, tmp_path: Path
) -> None:
    """The daemon collects in a child process and gets plain data back: the bands and the
    summary's notes travel with the records."""
    settings = public(files, tmp_path).settings
    answer = isolation._collect("aws", settings, NOW, isolation._RECORD_FIELDS)
    fetched = isolation._answer("aws", pickle.dumps(answer), 0)
    # g4ad.xlarge's one price and the Savings Plans rates (test_aws_plans.py) included
    assert len(fetched.parsed.records) == 36 + 9 + len(plan_records(fetched.parsed.records))
    assert fetched.parsed.notes == ['prices from the public price files (source = "public")']
    assert fetched.parsed.interruption is not None and len(fetched.parsed.interruption) == 7


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("source", "free", "providers.aws.source: expected one of auto, api, public, got 'free'"),
        ("spot_feed_url", "spot.js", "providers.aws.spot_feed_url: 'spot.js' is not an http(s)"),
        ("offers_endpoint", "ftp://x", "providers.aws.offers_endpoint: 'ftp://x' is not an http"),
        ("spot_advisor_url", 5, "providers.aws.spot_advisor_url"),
    ],
)
def test_the_public_keys_are_checked_like_every_key(key: str, value: Any, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        from_dict({"providers": {"aws": {key: value}}}, source=None)
    assert str(err.value).startswith(message)


def test_a_kept_row_of_another_shape_is_skipped_and_counted(files: Files, tmp_path: Path) -> None:
    collector = public(files, tmp_path)
    answer = collector.fetch()
    good = collector.parse(answer, observed_at=NOW)
    kept = answer["public/offers/us-east-1"]
    hostile = {**kept, "rows": [[5] * len(kept["columns"]), ["short"], *kept["rows"]]}
    parsed = collector.parse({**answer, "public/offers/us-east-1": hostile}, observed_at=NOW)
    assert parsed.records == good.records and good.records
    assert parsed.skipped_rows == good.skipped_rows + 2


def test_a_damaged_kept_file_is_read_again(
    files: Files, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    first = public(files, tmp_path).fetch()
    kept = sorted(tmp_path.rglob("us-east-1.json"))
    assert kept, "the first run keeps what it read of each region's file"
    for path in kept:
        path.write_text('{"rows": [')  # cut off, as by a full disk
    files.requests.clear()
    again = public(files, tmp_path)
    with caplog.at_level("WARNING"):
        payloads = again.fetch()
    asked = [p for p, _ in files.requests if p.endswith(".csv")]
    assert len([p for p in asked if "us-east-1" in p]) == 1  # that region read again, whole
    assert "is read again" in caplog.text
    assert again.parse(payloads, observed_at=NOW).records == (
        public(files, tmp_path).parse(first, observed_at=NOW).records
    )
