"""Transfer prices as each source gives them (docs/sql.md, `transfer_prices`): AWS's Data
Transfer rows of the public offer files (read through the real fetch on loopback), Azure's
Bandwidth rows, Google Cloud's egress SKUs, and the bundled flat rates, each checked by hand
from the recording's own numbers, tiers applied to one move of 60 TiB."""

from __future__ import annotations

import json
import tomllib
from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

from collectors.azure import AzureCollector, bandwidth
from collectors.base import ParseResult, ProviderSettings, TransferRate
from collectors.gcp.egress import Egress
from collectors.transfer import TABLE, flat_rates, with_flat_rates
from tests.collectors.support import demo_of, recording
from tests.collectors.test_aws_public import Files, files, public
from tracker.collecting.replay import ReplayServer

__all__ = ["files"]  # the loopback offer files of the AWS public tests, a fixture here too

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
MOVE_GIB = Decimal(60 * 1024)  # 60 TiB


def cost(rates: list[TransferRate], region: str | None) -> Decimal:
    """What moving MOVE_GIB out to the internet costs at `region`'s tiers."""
    total = Decimal(0)
    for r in rates:
        if r.region == region and r.direction == "out_internet":
            end = MOVE_GIB if r.to_gib is None else min(MOVE_GIB, r.to_gib)
            total += max(Decimal(0), end - r.from_gib) * r.price_per_gib
    return total


def tiers(rates: list[TransferRate], region: str, direction: str) -> list[tuple[str, ...]]:
    return [
        (str(r.from_gib), str(r.to_gib), str(r.price_per_gib))
        for r in sorted(rates, key=lambda r: r.from_gib)
        if r.region == region and r.direction == direction
    ]


def test_aws_tiers_come_from_the_offer_files_data_transfer_rows(files: Files) -> None:
    collector = public(files, None)
    result = collector.parse(collector.fetch(), observed_at=NOW)
    assert result.transfer is not None
    # us-east-1's "AWS Outbound" rows to "External" (StartingRange/EndingRange in GB, Inf last);
    # its inbound row and its free rows to CloudFront are not a move out.
    assert tiers(result.transfer, "us-east-1", "out_internet") == [
        ("0", "10240", "0.0900000000"),
        ("10240", "51200", "0.0850000000"),
        ("51200", "153600", "0.0700000000"),
        ("153600", "None", "0.0500000000"),
    ]
    # InterRegion Outbound to us-east-2 at 0.01, to eu-west-1 at 0.02: the dearer kept.
    assert tiers(result.transfer, "us-east-1", "out_region") == [("0", "None", "0.0200000000")]
    assert {r.region for r in result.transfer} == {"us-east-1", "us-west-2", "eu-west-1"}
    # 60 TiB out of us-east-1: 10,240 x 0.09 + 40,960 x 0.085 + 10,240 x 0.07
    # = 921.60 + 3,481.60 + 716.80 = 5,120.00 USD.
    assert cost(result.transfer, "us-east-1") == Decimal("5120.00")


def test_aws_kept_rows_are_read_again_by_a_version_that_keeps_transfer(
    files: Files, tmp_path: Path
) -> None:
    first = public(files, tmp_path)
    first.fetch()
    state = tmp_path / "aws-offers" / "us-east-1.json"
    kept = json.loads(state.read_text())
    # Every Data Transfer row: 4 internet tiers, 2 inter-region, the inbound and CloudFront
    # rows (left to the parse to drop).
    assert len(kept["transfer"]["rows"]) == 8
    del kept["transfer"]  # as a version before transfer prices left it
    state.write_text(json.dumps(kept))
    again = public(files, tmp_path)
    result = again.parse(again.fetch(), observed_at=NOW)
    assert result.transfer and cost(result.transfer, "us-east-1") == Decimal("5120.00")


def bandwidth_pages() -> dict[str, object]:
    page = json.loads((demo_of("azure") / "bandwidth.json").read_text())
    return {"bandwidth-page-1": page}


def test_azure_tiers_follow_tier_minimum_units_over_microsofts_network() -> None:
    rates = bandwidth.rates(bandwidth_pages(), ("eastus", "westeurope"))
    assert rates is not None
    # "Rtn Preference: MGN" (the default routing), not the cheaper Internet-routing product
    # listed first; each tier ends where the next starts.
    assert tiers(rates, "eastus", "out_internet") == [
        ("0.0", "100.0", "0.0"),
        ("100.0", "10340.0", "0.087"),
        ("10340.0", "51300.0", "0.083"),
        ("51300.0", "153700.0", "0.07"),
        ("153700.0", "None", "0.05"),
    ]
    # Intra Continent 0.02, Inter Continent 0.05: the dearer.
    assert tiers(rates, "eastus", "out_region") == [("0.0", "None", "0.05")]
    # Only the asked regions; the "Zone 1" row and the inbound meter are no region's move out.
    assert {r.region for r in rates} == {"eastus", "westeurope"}
    # 60 TiB out of eastus: 100 free, 10,240 x 0.087 + 40,960 x 0.083 + 10,140 x 0.07
    # = 890.88 + 3,399.68 + 709.80 = 5,000.36 USD.
    assert cost(rates, "eastus") == Decimal("5000.36")


def test_azure_without_bandwidth_pages_leaves_the_stored_tiers_be() -> None:
    prices, moves = bandwidth.split({"page-1": {}, **bandwidth_pages()})
    assert list(prices) == ["page-1"] and list(moves) == ["bandwidth-page-1"]
    assert bandwidth.rates({}, ()) is None


def test_azure_bandwidth_fetch_failure_keeps_the_vm_prices(
    replay: Callable[..., ReplayServer], tmp_path: Path
) -> None:
    page = {"Items": [], "NextPageLink": None, "Count": 0}
    (tmp_path / "rec").mkdir()
    (tmp_path / "rec" / "vm.json").write_text(json.dumps(page))
    folder = recording(
        tmp_path / "rec",
        {"match": {"method": "GET", "query": {"$filter": bandwidth.FILTER}}, "status": 500},
        {"match": {"method": "GET"}, "status": 200, "body_file": "vm.json"},
    )
    server = replay(folder)
    settings = ProviderSettings(
        endpoint=f"{server.url}/api/retail/prices", max_retries=0, transfer_prices=True
    )
    payloads = AzureCollector(settings).fetch()
    assert list(payloads) == ["page-1"]  # the VM rows; the transfer prices stay as they were


def test_gcp_premium_internet_egress_per_service_region() -> None:
    book = Egress(frozenset({"us-central1", "europe-west4", "asia-east1"}))
    for number in (1, 2, 3):
        page = json.loads((demo_of("gcp") / f"page{number}.json").read_text())
        for sku in page["skus"]:
            book.add(sku)
    rates = book.rates()
    # Premium tier to the Americas and EMEA (the same tiers); China (dearer) and the Standard
    # tier (cheaper) are priced apart and left out.
    assert tiers(rates, "us-central1", "out_internet") == [
        ("0", "1024", "0.12"),
        ("1024", "10240", "0.11"),
        ("10240", "None", "0.08"),
    ]
    assert tiers(rates, "us-central1", "out_region") == [("0", "None", "0.05")]
    assert not [r for r in rates if r.region == "asia-east1"]  # no SKU of its region
    # 60 TiB out of us-central1: 1,024 x 0.12 + 9,216 x 0.11 + 51,200 x 0.08
    # = 122.88 + 1,013.76 + 4,096.00 = 5,232.64 USD.
    assert cost(rates, "us-central1") == Decimal("5232.64")


def test_the_flat_table_names_a_source_for_every_rate() -> None:
    table = tomllib.loads(TABLE.read_text())["providers"]
    for name, entry in table.items():
        assert entry["source"].startswith("https://"), name
        assert isinstance(entry["sure"], bool) and entry["noted"], name
        assert flat_rates(name), name
    assert "vastai" not in table  # each host prices its own bandwidth: no flat rate
    free = flat_rates("lambdalabs")
    assert free == [TransferRate(None, "out_internet", Decimal(0), None, "USD", Decimal(0))]
    oci = flat_rates("oci")
    assert oci is not None and cost(oci, None) == Decimal("435.2")  # (61,440 - 10,240) x 0.0085


def test_flat_rates_fill_only_an_answer_without_its_own() -> None:
    own = [TransferRate("r", "out_internet", Decimal(0), None, "USD", Decimal("0.1"))]
    assert with_flat_rates("oci", ParseResult(transfer=own)).transfer == own
    assert with_flat_rates("oci", ParseResult()).transfer == flat_rates("oci")
    assert with_flat_rates("aws", ParseResult()).transfer is None
