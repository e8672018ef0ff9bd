"""The review compares like with like: a price move is one offer's price then against its own
price now. Where the cheapest offer then is not the cheapest now (another provider, a new or a
withdrawn offer), the two prices are no move: the review says so and gives each offer's own
move instead. Real DuckDB files; every figure checked by hand in the comments."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from alerts import digest
from alerts.digest_render import html_body, slack_message
from tests.alerts.support import Bench, offer
from tests.tracker.review_support import NOW
from tracker.config.daemon import Since
from tracker.review.build import build, look_back

SIX = Since(6, "mo")
THEN = look_back(NOW, SIX)
H = timedelta(hours=1)
ND96 = ("A100", 8, 40)  # Azure Standard_ND96asr_v4: 8x A100 40 GB


def kind(facts: dict[str, Any], name: str) -> dict[str, Any]:
    ((model),) = facts["models"]
    return {k["price_kind"]: k for k in model["kinds"]}[name]


def azure(price: str, kind: str = "on_demand") -> Any:
    return offer(price, provider="azure", region="eastus", itype="Standard_ND96asr_v4",
                 kind=kind, gpu=ND96)  # fmt: skip


def test_a_new_cheaper_provider_is_no_price_drop(tmp_path: Path) -> None:
    # What a user saw: AWS's spot price then against Azure's now, as if it had dropped 62.8 %.
    # AWS p4d spot in use1-az1: 9.8328 / 8 = 1.2291 per GPU-hour then, 8.0468 / 8 = 1.00585 now.
    # Azure, collected only now: 3.6578 / 8 = 0.457225; 0.457225 / 1.2291 - 1 = -62.80 %: two
    # offers, no move. AWS's own move: 1.00585 / 1.2291 - 1 = -18.16 %.
    bench = Bench(tmp_path / "prices.duckdb")
    bench.collect([offer("9.8328", kind="spot", zone="use1-az1")], THEN - H, regions=None)
    bench.collect([offer("8.0468", kind="spot", zone="use1-az1")], NOW - H, regions=None)
    bench.collect([azure("3.6578", "spot")], NOW - H, provider="azure", regions=None)
    facts = build(bench.path, NOW, SIX).to_dict()
    spot = kind(facts, "spot")
    assert (spot["now"]["provider"], spot["now"]["price_usd"]) == ("azure", 0.457225)
    assert (spot["then"]["provider"], spot["then"]["price_usd"]) == ("aws", 1.2291)
    assert (spot["same_offer"], spot["move_pct"]) == (False, None)
    assert (spot["now_offer_then"], spot["now_offer_move_pct"]) == (None, None)
    assert spot["then_offer_now"]["price_usd"] == 1.00585
    assert spot["then_offer_move_pct"] == -18.16
    # The offers' own moves (the market index's, its own section, may well be -62.8 %).
    text = digest.plain_text(facts | {"market": []})
    assert "62.8" not in text
    ((table),) = [b for b in text.split("\n\n") if b.startswith("A100")]
    assert table.splitlines() == [
        "A100     then        now         move",
        "spot  1.2291   0.457225   other offer",
        "  spot  now:  azure eastus Standard_ND96asr_v4; no price then",
        "        then: aws us-east-1 (use1-az1) p4d.24xlarge; is 1.00585 now (-18.2%)",
    ]


def test_the_cheapest_changes_provider_each_offer_moves_on_its_own(tmp_path: Path) -> None:
    # On-demand per GPU-hour: AWS p4d 16.00 / 8 = 2.00 then, 17.60 / 8 = 2.20 now; Azure 16.80 /
    # 8 = 2.10 then, 14.40 / 8 = 1.80 now. Cheapest then AWS, now Azure: 1.80 / 2.00 - 1 = -10 %
    # would mix them. Azure's own: 1.80 / 2.10 - 1 = -14.29 %; AWS's own: 2.20 / 2.00 - 1 = +10 %.
    bench = Bench(tmp_path / "prices.duckdb")
    for at, aws_price, azure_price in ((THEN - H, "16.00", "16.80"), (NOW - H, "17.60", "14.40")):
        bench.collect([offer(aws_price)], at, regions=None)
        bench.collect([azure(azure_price)], at, provider="azure", regions=None)
    facts = build(bench.path, NOW, SIX).to_dict()
    on_demand = kind(facts, "on_demand")
    assert (on_demand["now"]["provider"], on_demand["then"]["provider"]) == ("azure", "aws")
    assert (on_demand["same_offer"], on_demand["move_pct"]) == (False, None)
    now_then, then_now = on_demand["now_offer_then"], on_demand["then_offer_now"]
    assert (now_then["provider"], now_then["price"], on_demand["now_offer_move_pct"]) == (
        "azure",
        2.1,
        -14.29,
    )
    assert (then_now["provider"], then_now["price"], on_demand["then_offer_move_pct"]) == (
        "aws",
        2.2,
        10.0,
    )
    ((model),) = facts["models"]
    assert digest.model_table(model) == [
        "A100        then    now         move",
        "on-demand  2.00   1.80   other offer",
        "  on-demand  now:  azure eastus Standard_ND96asr_v4; was 2.10 then (-14.3%)",
        "             then: aws us-east-1 p4d.24xlarge; is 2.20 now (+10.0%)",
    ]
    # Every channel renders the same rows: no channel shows a % for two offers.
    facts |= {"market": []}  # the offers' own moves (the market index has its own section)
    slack = "\n".join(str(b) for b in slack_message(facts)["blocks"])
    for rendered in (slack, html_body(facts)):
        assert "other offer" in rendered and "-10.0%" not in rendered


def test_the_same_offer_moves_by_its_own_price(tmp_path: Path) -> None:
    # AWS's real p4d.24xlarge cut: 32.7726 then, 21.957642 now (= 32.7726 x 0.67), per GPU-hour
    # 4.096575 and 2.744705: 2.744705 / 4.096575 - 1 = -33.0 %. Azure at 36.00 / 8 = 4.50 both
    # times is dearer on both sides: AWS's p4d is the cheapest then and now.
    bench = Bench(tmp_path / "prices.duckdb")
    for at, price in ((THEN - H, "32.7726"), (NOW - H, "21.957642")):
        bench.collect([offer(price)], at, regions=None)
        bench.collect([azure("36.00")], at, provider="azure", regions=None)
    facts = build(bench.path, NOW, SIX).to_dict()
    on_demand = kind(facts, "on_demand")
    assert (on_demand["now"]["price"], on_demand["then"]["price"]) == (2.744705, 4.096575)
    assert (on_demand["same_offer"], on_demand["move_pct"]) == (True, -33.0)
    assert on_demand["now_offer_move_pct"] == on_demand["then_offer_move_pct"] == -33.0
    ((model),) = facts["models"]
    assert digest.model_table(model) == [
        "A100            then        now    move",
        "on-demand  4.096575   2.744705   -33.0%",
        "  on-demand  now:  aws us-east-1 p4d.24xlarge",
        "             then: the same offer",
    ]
