"""AWS Savings Plans from the public Savings Plans offer files, through the loopback server of
test_aws_public (tests/fixtures/aws/public/savings-plans-*.json, rates made up in the real
format; the SKUs and usages they discount are the offer files' own).

Expected money is read by hand from the files' own strings.
"""

from __future__ import annotations

import io
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from collectors import REGISTRY
from collectors.aws import jsonstream, savings
from collectors.aws.jsonstream import JsonShapeError, JsonStream
from collectors.base import ParseResult, PriceRecord
from storage.connection import connect
from tests.collectors.test_aws_public import (
    NOW,
    PLAN_CLASSES,
    PLANS_INDEX,
    PLANS_VERSION,
    REGIONS,
    Files,
    files,
    no_credentials,
    plan_records,
    public,
)
from tracker.cli import cli

__all__ = ["files"]  # the loopback server fixture, shared

US_EAST = f"{PLANS_VERSION}/us-east-1/index.json"
Key = tuple[str | None, str, int | None, str | None, str | None]


def collected(server: Files, state: Path | None = None) -> ParseResult:
    collector = public(server, state)
    return collector.parse(collector.fetch(), observed_at=NOW)


def by_key(records: list[PriceRecord]) -> dict[Key, Decimal]:
    return {
        (r.region, r.instance_type, r.term_months, r.payment_option, r.offering_class): (
            r.price_per_hour
        )
        for r in plan_records(records)
    }


def test_rates_by_hand_every_term_and_purchase_option(files: Files) -> None:
    result = collected(files)
    plans = by_key(result.records)
    east = "us-east-1"
    # The file's own strings: a plan's rate is the effective hourly price, nothing added.
    assert plans[(east, "p4d.24xlarge", 12, "no_upfront", "compute_savings_plan")] == Decimal(
        "15.3703"
    )
    assert plans[(east, "p4d.24xlarge", 36, "all_upfront", "ec2_instance_savings_plan")] == (
        Decimal("8.1591")
    )
    assert plans[(east, "g4dn.xlarge", 12, "partial_upfront", "compute_savings_plan")] == (
        Decimal("0.3504")
    )
    assert plans[("eu-west-1", "p4d.24xlarge", 12, "no_upfront", "compute_savings_plan")] == (
        Decimal("16.601")
    )
    # Compute plans: 1 and 3 years x every purchase option, for p4d and g4dn.
    for instance_type in ("p4d.24xlarge", "g4dn.xlarge"):
        terms = {
            (months, payment)
            for (region, itype, months, payment, offering) in plans
            if (region, itype, offering) == (east, instance_type, "compute_savings_plan")
        }
        assert terms == {(m, p) for m in (12, 36) for p in ("no_upfront", "partial_upfront",
                                                             "all_upfront")}  # fmt: skip
    # 17 in us-east-1 (12 p4d/g4dn Compute, 2 p5 Compute, 3 EC2 Instance), 2 + 1 elsewhere;
    # the plan listed twice counts once.
    assert len(plans) == len(plan_records(result.records)) == 20
    found = plan_records(result.records)
    assert {r.price_kind for r in found} == {"reserved"}
    assert {r.upfront_total for r in found} == {Decimal(0)}  # no upfront part is split out
    assert {r.zone for r in found} == {None} and {r.currency for r in found} == {"USD"}
    p4d = next(r for r in found if r.instance_type == "p4d.24xlarge")
    assert (p4d.gpu_model, p4d.gpu_count, p4d.vcpus) == ("A100", 8.0, 96.0)


def test_only_plain_linux_gpu_boxes_of_the_region_are_priced(files: Files) -> None:
    """Windows and SQL Web (same usage type, other operation), Dedicated, a CPU type, Fargate,
    Lambda and a Local Zone rate never become records; p5's Capacity Block product has the
    usage type of the real p5 and another operation."""
    result = collected(files)
    prices = {r.price_per_hour for r in plan_records(result.records)}
    traps = {"19.1", "0.4", "0.41", "0.07", "0.0323", "0.0000141", "0.44"}
    assert not prices & {Decimal(t) for t in traps}
    assert {r.instance_type for r in plan_records(result.records)} == {
        "p4d.24xlarge",
        "g4dn.xlarge",
        "p5.48xlarge",
    }
    # What was kept of the file: only the rates of usages the EC2 file lists for GPU rows.
    kept = public(files, None).fetch()["public/plans/us-east-1"]
    usages = {(r["discountedUsageType"], r["discountedOperation"]) for t in kept["terms"]
              for r in t["rates"]}  # fmt: skip
    assert ("BoxUsage:m5.large", "RunInstances") not in usages
    assert ("Fargate-vCPU-Hours:perCPU", "") not in usages
    assert ("BoxUsage:p4d.24xlarge", "RunInstances:0002") in usages  # dropped by the parse


def test_a_term_whose_plan_is_not_listed_is_skipped_and_its_type_unconfirmed(
    files: Files,
) -> None:
    result = collected(files)
    assert result.skipped_rows == 1
    assert result.unreadable == {"g4dn.xlarge"}


def test_the_savings_plans_file_is_read_as_it_arrives(
    files: Files, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server holds back the file's end until the collector has looked at a rate: a reader
    that waited for the whole file would never look at one while the answer is held."""
    files.pause_at[US_EAST] = len(files.files[US_EAST]) - 200
    looked = savings._wanted

    def first_look(rate: Any, keep: dict[str, set[str]]) -> bool:
        files.release.set()
        return looked(rate, keep)

    monkeypatch.setattr(savings, "_wanted", first_look)
    result = collected(files)
    assert files.paused == [True]
    assert len(plan_records(result.records)) == 20


def test_an_unchanged_file_is_not_read_again(files: Files, tmp_path: Path) -> None:
    first = collected(files, tmp_path)
    files.requests.clear()
    again = collected(files, tmp_path)
    assert [p for p, _ in files.requests if p.startswith(PLANS_VERSION)] == []
    assert plan_records(again.records) == plan_records(first.records)
    # A new version: asked with the ETag seen, and a 304 keeps what was kept.
    index = json.loads(files.files[PLANS_INDEX])
    for entry in index["regions"]:
        if entry["regionCode"] not in REGIONS:
            continue
        new = entry["versionUrl"].replace("20261125", "20261126")
        files.files[new] = files.files[entry["versionUrl"]]
        entry["versionUrl"] = new
    files.files[PLANS_INDEX] = json.dumps(index).encode()
    files.requests.clear()
    third = collected(files, tmp_path)
    asked = [(p, tag) for p, tag in files.requests if "/20261126" in p]
    assert len(asked) == 3 and all(tag for _, tag in asked)
    assert plan_records(third.records) == plan_records(first.records)


def test_a_missing_index_means_no_plans_and_a_broken_file_keeps_them_open(
    files: Files,
) -> None:
    """No index on the server (404): no Savings Plans, said in the summary, the other prices
    stored. A region's file that is not JSON: that region's types stay unconfirmed (open, not
    withdrawn), the run goes on."""
    index = files.files.pop(PLANS_INDEX)
    result = collected(files)
    assert plan_records(result.records) == []
    assert any(n.startswith("no Savings Plans prices:") for n in result.notes)
    assert result.unreadable == set()
    files.files[PLANS_INDEX] = index
    files.files[US_EAST] = b'{"products": [ {"sku": "X"} ], "terms": {"savingsPlan": [ {"rat'
    result = collected(files)
    assert {r.region for r in plan_records(result.records)} == {"us-west-2", "eu-west-1"}
    assert "p4d.24xlarge" in result.unreadable and "p5.48xlarge" in result.unreadable
    assert any(n.startswith("us-east-1 Savings Plans not read:") for n in result.notes)
    assert len([r for r in result.records if r.price_kind == "on_demand"]) > 0


@pytest.mark.parametrize(
    "body",
    [
        b"not json at all",
        b"[1, 2, 3]",
        b'{"products": {}, "terms": {"savingsPlan": []}}',
        b'{"products": [], "terms": {"savingsPlan": [{"rates": {"a": 1}}]}}',
        b'{"products": [], "terms": {"savingsPlan": [{"rates": [1, null, "x", [1]]}]}}',
        b'{"products": [' + b"[" * 100_000 + b"]" * 100_000 + b"]}",
        b"\xff\xfe garbage",
        b'{"products": [], "terms": {"savingsPlan": [{"sku": "CSP1YRNUPFRONT00", "rates": [{'
        b'"discountedUsageType": "BoxUsage:p4d.24xlarge", "discountedOperation": '
        b'"RunInstances", "discountedRate": {"price": "1e400", "currency": "USD"}}]}]}',
        b'{"products": [{"sku": {}}], "terms": {"savingsPlan": [{"sku": ["x"], "rates": [{'
        b'"discountedUsageType": "BoxUsage:p4d.24xlarge", "discountedOperation": '
        b'"RunInstances", "discountedRate": {"price": "1", "currency": "USD"}}]}]}',
    ],
    ids=[
        "text",
        "list",
        "products-object",
        "rates-object",
        "odd-rates",
        "deep",
        "bytes",
        "huge",
        "odd-skus",
    ],
)
def test_hostile_files_never_fail_the_run(files: Files, body: bytes) -> None:
    files.files[US_EAST] = body
    result = collected(files)
    assert {r.region for r in plan_records(result.records)} <= {"us-west-2", "eu-west-1"}
    assert len([r for r in result.records if r.price_kind == "on_demand"]) > 0


def test_savings_plans_through_the_cli_and_the_store(
    files: Files, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`collect` without a key stores the plans; a second run an hour later changes nothing."""
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
    for _ in range(2):
        done = runner.invoke(cli, ["--config", str(config), "collect"])
        assert done.exit_code == 0, done.output
    with connect(tmp_path / "prices.duckdb", read_only=True) as con:
        rows = con.execute(
            "SELECT offering_class, term_months, payment_option, price_per_hour, upfront_total,"
            " price_per_gpu_hour FROM latest_prices WHERE provider = 'aws' AND region ="
            " 'us-east-1' AND instance_type = 'p4d.24xlarge' AND offering_class IN"
            f" {PLAN_CLASSES} ORDER BY 1, 2, 3"
        ).fetchall()
        intervals = con.execute(
            f"SELECT count(*) FROM prices WHERE offering_class IN {PLAN_CLASSES}"
        ).fetchone()
    assert len(rows) == 8 and intervals == (20,)
    assert rows[0] == ("compute_savings_plan", 12, "all_upfront", 14.3458, 0, 14.3458 / 8)
    shown = runner.invoke(
        cli, ["--config", str(config), "latest", "--provider", "aws", "--kind", "reserved",
              "--gpu", "A100", "--format", "json"],
    )  # fmt: skip
    classes = {r.get("offering_class") for r in json.loads(shown.output)}
    assert set(PLAN_CLASSES) <= classes


def test_a_walk_in_small_pieces_decodes_what_json_loads_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every value cut at every place by the pieces (numbers, strings, escapes)."""
    monkeypatch.setattr(jsonstream, "CHUNK", 3)
    document = {"a": [1, -2.5e3, 'x\\"y\u00e9', None, True, {"b": []}], "c": {}, "d": 12345}
    text = json.dumps(document, indent=1)
    stream = JsonStream(io.StringIO(text).read)
    walked: dict[str, Any] = {}
    for key in stream.members():
        if key == "a":
            walked[key] = []
            for _ in stream.items():
                walked[key].append(stream.value())
        else:
            walked[key] = stream.value()
    assert walked == document


@pytest.mark.parametrize("text", ['{"a": [1, 2', '{"a" 1}', '{"a": [1 2]}', '{"a": tru}', ""])
def test_a_broken_document_is_a_shape_error(text: str) -> None:
    stream = JsonStream(io.StringIO(text).read)
    with pytest.raises(JsonShapeError):
        for _ in stream.members():
            for _ in stream.items():
                stream.skip()


def test_the_walk_keeps_only_a_few_pieces_of_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """A long list is never held whole: the text kept stays within a couple of pieces."""
    monkeypatch.setattr(jsonstream, "CHUNK", 1000)
    text = json.dumps({"rates": [{"price": str(n)} for n in range(20_000)]})
    stream = JsonStream(io.StringIO(text).read)
    longest = 0
    for _ in stream.members():
        for _ in stream.items():
            stream.skip()
            longest = max(longest, len(stream._text))
    assert len(text) > 300_000 and longest <= 2_000


def test_the_api_source_reads_the_plans_where_the_files_url_is_given(
    replay: Any, files: Files, tmp_path: Path
) -> None:
    """With credentials the Price List API prices EC2's own terms; the plans still come from the
    public files, joined to the boxes the API priced: the same records as the public source."""
    from tests.collectors.test_aws import answers, make

    server = replay(*answers(tmp_path))
    collector = make(server.url, regions=("us-east-1",), options={"offers_endpoint": files.url})
    result = collector.parse(collector.fetch(), observed_at=NOW)
    from_api = by_key(result.records)
    from_files = {k: v for k, v in by_key(collected(files).records).items() if k[0] == "us-east-1"}
    assert from_api == from_files and len(from_api) == 17
    # Without the files' URL, a mirror of the APIs is asked for nothing else.
    quiet = make(server.url, regions=("us-east-1",))
    assert plan_records(quiet.parse(quiet.fetch(), observed_at=NOW).records) == []


def test_a_gzip_encoded_file_is_unpacked_and_a_missing_one_left_unconfirmed(
    files: Files,
) -> None:
    files.gzipped = {US_EAST}
    del files.files[f"{PLANS_VERSION}/us-west-2/index.json"]
    result = collected(files)
    assert {r.region for r in plan_records(result.records)} == {"us-east-1", "eu-west-1"}
    assert len(plan_records(result.records)) == 17 + 1
    assert "p4d.24xlarge" in result.unreadable  # us-west-2's, kept open
    assert any(n.startswith("us-west-2 Savings Plans not read:") for n in result.notes)


def test_a_rate_names_its_box_by_sku_or_else_by_usage(files: Files) -> None:
    """p5's rates name its SKU under another usage type (priced by the SKU, as documented);
    g4dn's name an unknown SKU under its usage type and operation (priced by those)."""
    text = files.files[US_EAST].decode()
    text = text.replace('"BoxUsage:p5.48xlarge"', '"USE1-Other:p5.48xlarge"')
    text = text.replace('"7TVXMFHQR6U7W5CV"', '"UNLISTEDSKU00001"')
    files.files[US_EAST] = text.encode()
    plans = by_key(collected(files).records)
    east = "us-east-1"
    assert plans[(east, "p5.48xlarge", 36, "no_upfront", "compute_savings_plan")] == Decimal(
        "27.52"
    )
    assert plans[(east, "g4dn.xlarge", 12, "no_upfront", "ec2_instance_savings_plan")] == (
        Decimal("0.331")
    )
    assert len(plans) == 20
