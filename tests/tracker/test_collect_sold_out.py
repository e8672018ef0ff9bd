"""A provider whose answer prices offers but has capacity for none of them (Lambda sold out
everywhere) is news, stored as such: the per-region offers close and each type keeps its list
price in one offer of no region, available false, `regions` configured or not (the offers in
the asked regions close). An empty answer still fails, and so does one with nothing in the asked
regions where nothing there was open (a `regions` typo)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from collectors import REGISTRY
from storage.query import query
from tracker.collecting import pipeline
from tracker.config import from_dict

# Lambda's one recording (the demo's too), served for its stand-in key.
RECORDING = Path(__file__).parents[2] / "tracker" / "demo_data" / "lambdalabs"
ENV = {"LAMBDA_API_KEY": "demo"}


def recording(tmp_path: Path, name: str, change: Any) -> Path:
    folder = tmp_path / name
    shutil.copytree(RECORDING, folder)
    body = json.loads((folder / "instance-types.json").read_text())
    change(body["data"])
    (folder / "instance-types.json").write_text(json.dumps(body))
    return folder


def sell_nothing(data: dict[str, Any]) -> None:
    for entry in data.values():
        entry["regions_with_capacity_available"] = []


def collect(
    replay: Any, folder: Path, store: Path, regions: list[str] | None = None
) -> pipeline.Outcome:
    server = replay(folder)
    providers: dict[str, Any] = {n: {"enabled": False} for n in REGISTRY}
    providers["lambdalabs"] = {"endpoint": server.url, "timeout": 2}
    if regions:
        providers["lambdalabs"]["regions"] = regions
    config = from_dict({"storage": {"path": str(store)}, "providers": providers}, source=None)
    (outcome,) = pipeline.collect(config, env=ENV)
    return outcome


def test_sold_out_everywhere_keeps_the_list_prices_in_no_region(
    replay: Any, tmp_path: Path
) -> None:
    store = tmp_path / "prices.duckdb"
    first = collect(replay, RECORDING, store)
    assert first.status == "ok" and first.records > 0
    sold_out = collect(replay, recording(tmp_path, "sold-out", sell_nothing), store)
    # 17 GPU types in the recording, each one offer of no region now
    assert (sold_out.status, sold_out.records) == ("ok", 17)
    current = query(
        store,
        "SELECT count(*), count(region), bool_or(available) FROM latest_prices",
    ).rows
    assert current == [(17, 0, False)]
    # the three types sold out in the first collection already had their no-region offer
    assert sold_out.changed == (first.records - 3) + (17 - 3)
    h100 = query(
        store,
        "SELECT price_per_hour FROM latest_prices WHERE instance_type = 'gpu_8x_h100_sxm5'",
    ).rows
    assert [(float(p),) for (p,) in h100] == [(31.92,)]  # 3192 cents, the list price kept
    closed = query(store, "SELECT count(*) FROM prices WHERE valid_to IS NOT NULL").rows
    assert closed == [(first.records - 3,)]  # every per-region offer
    # Capacity comes back: the no-region offers of the 14 close, the per-region ones reopen.
    back = collect(replay, RECORDING, store)
    assert (back.status, back.records, back.changed) == ("ok", first.records, 14 + 24)
    assert query(store, "SELECT count(*) FROM latest_prices WHERE region IS NULL").rows == [(3,)]


def test_sold_out_in_the_asked_regions_closes_their_intervals(replay: Any, tmp_path: Path) -> None:
    """With `regions` configured too, a type sold out everywhere keeps its list price in one
    offer of no region, and that offer closes once capacity is back, in any region: every
    collection looks for the offers of no region, whatever regions it asked."""
    store = tmp_path / "prices.duckdb"
    asked = ["us-east-3"]
    first = collect(replay, RECORDING, store, regions=asked)
    # 4 types with capacity in us-east-3, the 3 sold out everywhere in no region
    assert (first.status, first.records) == ("ok", 4 + 3)
    sold_out = collect(replay, recording(tmp_path, "sold-out", sell_nothing), store, regions=asked)
    # the 4 offers in us-east-3 close, the 14 other types open an offer of no region
    assert (sold_out.status, sold_out.records, sold_out.changed) == ("ok", 17, 4 + 14)
    current = "SELECT count(*), count(region), bool_or(available) FROM latest_prices"
    assert query(store, current).rows == [(17, 0, False)]
    closed = query(store, "SELECT count(*) FROM prices WHERE valid_to IS NOT NULL").rows
    assert closed == [(4,)]
    # Capacity comes back: the no-region offers of the 14 close (10 of them have capacity only
    # in regions not asked), the 4 in us-east-3 reopen.
    back = collect(replay, RECORDING, store, regions=asked)
    assert (back.status, back.records, back.changed) == ("ok", 4 + 3, 14 + 4)
    assert query(store, "SELECT count(*) FROM latest_prices WHERE region IS NULL").rows == [(3,)]


def test_an_answer_with_no_gpu_offer_at_all_still_fails(replay: Any, tmp_path: Path) -> None:
    store = tmp_path / "prices.duckdb"
    first = collect(replay, RECORDING, store)
    empty = collect(replay, recording(tmp_path, "empty", lambda data: data.clear()), store)
    assert empty.status == "failed" and "no GPU price" in str(empty.error)
    assert query(store, "SELECT count(*) FROM latest_prices").rows == [(first.records,)]


def test_a_regions_typo_is_not_taken_for_a_sell_out(replay: Any, tmp_path: Path) -> None:
    server = replay(RECORDING)
    providers: dict[str, Any] = {n: {"enabled": False} for n in REGISTRY}
    providers["lambdalabs"] = {"endpoint": server.url, "timeout": 2, "regions": ["us-east1"]}
    store = tmp_path / "prices.duckdb"
    config = from_dict({"storage": {"path": str(store)}, "providers": providers}, source=None)
    (outcome,) = pipeline.collect(config, env=ENV)
    assert outcome.status == "failed"
    assert "sold out or not in the asked regions (us-east1); check `regions`" in str(outcome.error)


def test_an_unreadable_row_leaves_its_offers_stale_not_withdrawn(
    replay: Any, tmp_path: Path
) -> None:
    store = tmp_path / "prices.duckdb"
    first = collect(replay, RECORDING, store)
    assert first.status == "ok"

    def garble(data: dict[str, Any]) -> None:  # the price arrives as text once
        data["gpu_8x_h100_sxm5"]["instance_type"]["price_cents_per_hour"] = "3192"

    second = collect(replay, recording(tmp_path, "garbled", garble), store)
    assert second.status == "ok" and second.skipped_rows == 1
    h100 = query(
        store,
        "SELECT count(*), bool_and(stale) FROM latest_prices"
        " WHERE instance_type = 'gpu_8x_h100_sxm5'",
    ).rows
    closed = query(
        store, "SELECT count(*) FROM prices WHERE instance_type = 'gpu_8x_h100_sxm5'"
        " AND valid_to IS NOT NULL",
    ).rows  # fmt: skip
    assert h100[0][0] > 0 and h100[0][1] is True  # still there, marked stale
    assert closed == [(0,)]  # no withdrawal recorded
