"""What compute costs in the review: the best PFLOP per dollar and the cheapest 3-year strategy per
GPU model, now and six months ago, on the review scenario's store (review_support: every price
written through the real store at its time), and the review email with its chart, received by a
real SMTP server on loopback. Every figure is worked out by hand in the comments.

TFLOPS (dense FP16, the GPU table): A100 312, H100 989.4, L4 121, V100 125. PFLOP per USD =
TFLOPS x GPUs x 3.6 / USD per hour. The need: 8 GPUs for 36 months (730 x 36 = 26280 hours) at
100 % use; CNY at 7.2 per USD.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import PIL.Image
import pytest
from click.testing import CliRunner

from alerts import digest
from tests.alerts.smtp_server import Inbox, smtp_server
from tests.tracker.review_support import NOW, scenario, scenario_now
from tracker import config as config_mod
from tracker.cli import cli
from tracker.config.daemon import Since
from tracker.review import chart
from tracker.review.build import build, send

SIX = Since(6, "mo")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def model(facts: dict[str, Any], name: str) -> dict[str, Any]:
    (found,) = [m for m in facts["models"] if m["gpu_model"] == name]
    return found


def where(o: dict[str, Any] | None) -> tuple[Any, ...] | None:
    if o is None:
        return None
    return (o["provider"], o["instance_type"], o["price_kind"], o["term_months"])


@pytest.fixture(scope="module")
def facts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    # Built once per module: the tests only read the facts.
    store = tmp_path_factory.mktemp("review") / "prices.duckdb"
    scenario(store)
    return build(store, NOW, SIX).to_dict()


def test_the_best_pflop_per_dollar_now_and_then(facts: dict[str, Any]) -> None:
    a100 = model(facts, "A100")["pflop"]
    # Now: Tencent's spot 56.00 CNY / 7.2 = 7.777778 USD/h for 8x A100: 312 x 8 x 3.6 / 7.777778
    # = 1155.29, over AWS spot (8985.6 / 8.0468 = 1116.67) and the 3-year RI (8985.6 / 8.159056
    # = 1101.30). Then: the RI (1101.30) over Tencent at 64.00 / 7.2 = 8.888889 (1010.88).
    assert where(a100["now"]) == ("tencent", "GT4.41XLARGE948", "spot", None)
    assert where(a100["then"]) == ("aws", "p4d.24xlarge", "reserved", 36)
    assert round(a100["now"]["pflop_per_usd"], 2) == 1155.29
    assert round(a100["then"]["pflop_per_usd"], 2) == 1101.30
    # Two offers: no change between them; each one's own: Tencent 64 / 56 - 1 = +14.29 %, the RI
    # unchanged.
    assert (a100["same_offer"], a100["change_pct"]) == (False, None)
    assert round(a100["now_offer_then"]["pflop_per_usd"], 2) == 1010.88
    assert (a100["now_offer_change_pct"], a100["then_offer_change_pct"]) == (14.29, 0.0)
    h100 = model(facts, "H100")["pflop"]
    # The p5 3-year RI, 8 x H100 SXM5 (989.4 each): 43.00 then, 28494.72 / 43.00 = 662.67; 22.016
    # now, 1294.27 (+95.31 %). Lambda's 1x H100 PCIe at 2.49 buys the PCIe's 756 TFLOPS only:
    # 756 x 3.6 / 2.49 = 1093.01, not the SXM's 989.4 x 3.6 / 2.49 = 1430.46.
    assert where(h100["now"]) == where(h100["then"]) == ("aws", "p5.48xlarge", "reserved", 36)
    assert round(h100["now"]["pflop_per_usd"], 2) == 1294.27
    assert round(h100["then"]["pflop_per_usd"], 2) == 662.67
    assert (h100["same_offer"], h100["change_pct"]) == (True, 95.31)
    # L4 only now (121 x 3.6 / 0.8048 = 541.25), V100 only then (125 x 3.6 / 3.06 = 147.06).
    l4, v100 = model(facts, "L4")["pflop"], model(facts, "V100")["pflop"]
    assert (round(l4["now"]["pflop_per_usd"], 2), l4["then"]) == (541.25, None)
    assert (v100["now"], round(v100["then"]["pflop_per_usd"], 2)) == (None, 147.06)


def test_the_cheapest_3_year_strategy_now_and_then(facts: dict[str, Any]) -> None:
    assert facts["need"] == {"gpus": 8, "months": 36, "utilization": 1.0, "spot_overhead_pct": 10.0}
    a100 = model(facts, "A100")["tco"]
    # The 3-year All Upfront RI both times: 1 instance x 1 term x 8.159056 x 26280 = 214,419.99;
    # Tencent spot now at the view's 56.00 / 7.2 = 7.777778 USD/h: 7.777778 x 26280 x 1.1 =
    # 224,840.01; Lambda 8 x 1.10 x 26280 = 231,264; the 1-year RI 3 terms x 13.921094 x 8760 =
    # 365,846.35.
    assert where(a100["now"]) == where(a100["then"]) == ("aws", "p4d.24xlarge", "reserved", 36)
    assert (a100["now"]["total_usd"], a100["then"]["total_usd"]) == (214419.99, 214419.99)
    assert (a100["same_offer"], a100["change_pct"]) == (True, 0.0)
    assert [(s["price_kind"], s["term_months"], s["total_usd"]) for s in
            a100["strategies"]["now"]] == [("reserved", 36, 214419.99), ("spot", None, 224840.01),
                                          ("on_demand", None, 231264.0),
                                          ("reserved", 12, 365846.35)]  # fmt: skip
    h100 = model(facts, "H100")["tco"]
    # Now Lambda's 1x H100 on demand: 8 instances x 2.49 x 26280 = 523,497.60; then the p5 RI:
    # 43.00 x 26280 = 1,130,040.00, which now costs 22.016 x 26280 = 578,580.48 (-48.80 %).
    assert where(h100["now"]) == ("lambdalabs", "gpu_1x_h100_pcie", "on_demand", None)
    assert (h100["now"]["instances"], h100["now"]["total_usd"]) == (8, 523497.6)
    assert h100["then"]["total_usd"] == 1130040.0
    assert (h100["same_offer"], h100["change_pct"], h100["now_offer_then"]) == (False, None, None)
    assert h100["then_offer_now"]["total_usd"] == 578580.48
    assert h100["then_offer_change_pct"] == -48.8
    # No offer six months ago (L4) or now (V100): that side is empty.
    l4, v100 = model(facts, "L4")["tco"], model(facts, "V100")["tco"]
    assert (l4["now"]["total_usd"], l4["then"], l4["change_pct"]) == (169201.15, None, None)
    assert (v100["now"], v100["then"]["total_usd"]) == (None, 643334.4)


def test_the_text_says_what_compute_costs(facts: dict[str, Any]) -> None:
    text = digest.plain_text(facts)
    block = next(b for b in text.split("\n\n") if b.startswith("compute"))
    lines = block.splitlines()
    assert lines[:9] == [
        "compute                  then      now       change",
        "A100 PFLOP per USD     1101.3   1155.3  other offer",
        "A100 3-year cost      214,420  214,420        +0.0%",
        "H100 PFLOP per USD      662.7   1294.3       +95.3%",
        "H100 3-year cost    1,130,040  523,498  other offer",
        "L4 PFLOP per USD            —    541.3            —",
        "L4 3-year cost              —  169,201            —",
        "V100 PFLOP per USD      147.1        —            —",
        "V100 3-year cost      643,334        —            —",
    ]
    assert lines[9:11] == [
        "  A100 PFLOP per USD  now:  spot, tencent ap-guangzhou (ap-guangzhou-6) GT4.41XLARGE948 "
        "(7.00 CNY/GPU-h, converted): 8x 312 TFLOPS for 7.777778 USD/h; was 1010.9 then (+14.3%)",
        "                      then: reserved, aws us-east-1 p4d.24xlarge, 3y all-upfront "
        "standard: 8x 312 TFLOPS for 8.159056 USD/h; is 1101.3 now (+0.0%)",
    ]
    assert (
        "                      then: reserved, aws us-east-1 p5.48xlarge, 3y all-upfront "
        "standard: 1 instance, 5.375 USD/GPU-h; is 578,580 now (-48.8%)" in lines
    )
    assert "                      then: no offer of this GPU to price then" in lines
    assert "3-year cost: the cheapest way to run 8 GPUs for 36 months at 100% use" in text


def test_the_review_email_carries_the_chart(tmp_path: Path) -> None:
    inbox = Inbox()
    scenario(tmp_path / "prices.duckdb")
    with smtp_server(inbox) as port:
        (tmp_path / "config.toml").write_text(
            '[storage]\npath = "prices.duckdb"\n[alerts.email]\nsmtp_host = "127.0.0.1"\n'
            f'smtp_port = {port}\nsecurity = "none"\nfrom = "gpu-tracker@example.com"\n'
            'to = ["ops@example.com"]\n'
        )
        config = config_mod.load(tmp_path / "config.toml")
        report = send(config, {}, io.StringIO(), now=NOW)
    assert report.ok
    ((_, _, mail, _),) = inbox.mails
    (image,) = [p for p in mail.walk() if p.get_content_type() == "image/png"]
    data = image.get_content()
    assert data.startswith(PNG_SIGNATURE)
    with PIL.Image.open(io.BytesIO(data)) as picture:  # a whole PNG, not just its signature
        picture.verify()
        assert (picture.format, picture.size) == ("PNG", (1210, 660))
    cid = image["Content-ID"].strip("<>")
    assert f"src='cid:{cid}'" in mail.get_body(("html",)).get_content()
    text = mail.get_body(("plain",)).get_content().replace("\r\n", "\n")
    assert "H100 3-year cost    1,130,040  523,498  other offer\n" in text
    assert "A100 PFLOP per USD     1101.3   1155.3  other offer\n" in text


def test_the_review_table_shows_what_compute_costs(tmp_path: Path) -> None:
    scenario_now(tmp_path / "prices.duckdb")
    (tmp_path / "config.toml").write_text('[storage]\npath = "prices.duckdb"\n')
    result = CliRunner().invoke(
        cli, ["--config", str(tmp_path / "config.toml"), "review"], terminal_width=250
    )
    assert result.exit_code == 0, result.output
    assert "What compute costs, then and now, per GPU model" in result.output
    for row in (("A100 3-year cost", "214,420", "214,420", "+0.0%"),
                ("H100 3-year cost", "1,130,040", "523,498", "other offer"),
                ("A100 PFLOP per USD", "1101.3", "1155.3", "other offer")):  # fmt: skip
        (line,) = [x for x in result.output.splitlines() if row[0] in x]
        assert [cell for cell in row if cell not in line] == [], line


def test_a_review_recorded_before_these_figures_renders_without_them(
    facts: dict[str, Any],
) -> None:
    # A pending review stored by an earlier version has no need, pflop or tco: a retry sends it
    # as it was made, with neither the compute block nor a chart.
    old = {k: v for k, v in facts.items() if k != "need"}
    old["models"] = [{k: v for k, v in m.items() if k not in ("pflop", "tco")}
                     for m in facts["models"]]  # fmt: skip
    text = digest.plain_text(old)
    assert "What compute costs" not in text and "3-year cost" not in text
    assert text.startswith(digest.plain_text(facts).split("\n\nWhat compute costs")[0])
    assert chart.images(old) == []
    (image,) = chart.images(facts)
    assert image.png.startswith(PNG_SIGNATURE) and image.filename.endswith(".png")


def test_the_chart_bars_are_the_3_year_costs_cheapest_now_first(facts: dict[str, Any]) -> None:
    # Now: L4 169,201.15 < A100 214,419.99 < H100 523,497.60; V100 has no price now: last.
    assert [(b.gpu_model, b.side, b.total_usd, b.label) for b in chart.bars_of(facts)] == [
        ("L4", "now", 169201.15, "on-demand, aws"),
        ("A100", "then", 214419.99, "reserved 3y, aws"),
        ("A100", "now", 214419.99, "reserved 3y, aws"),
        ("H100", "then", 1130040.0, "reserved 3y, aws"),
        ("H100", "now", 523497.6, "on-demand, lambdalabs"),
        ("V100", "then", 643334.4, "on-demand, aws"),
    ]


def test_an_offer_without_a_region_is_named_without_one() -> None:
    # RunPod prices no region (docs/sql.md): the review named its offers `runpod None ...`.
    offer = {
        "provider": "runpod", "region": None, "zone": None,
        "instance_type": "community/NVIDIA L40S", "price_kind": "spot", "term_months": None,
        "payment_option": None, "offering_class": None, "currency": "USD", "price": 0.42,
    }  # fmt: skip
    assert digest.offer_words(offer) == "runpod community/NVIDIA L40S"
