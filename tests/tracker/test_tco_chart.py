"""The `tco` chart: one bar per strategy's best option and per blend, each as long as its total,
labelled with the offer, titled with the need; written as a PNG."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

from matplotlib.patches import Rectangle

from storage.reads.tco import Need, Tco, read
from storage.store import Store
from tests.storage.test_tco_reads import ON_DEMAND, SPOT
from tracker.charts import tco as tco_chart

T0 = datetime(2026, 6, 1, tzinfo=UTC)
RESERVED = replace(
    ON_DEMAND, price_kind="reserved", term_months=36, payment_option="all_upfront",
    offering_class="standard", price_per_hour=Decimal("8.159056"), upfront_total=Decimal("214420"),
)  # fmt: skip


def answer(tmp_path: Path, baseline: int | None = None) -> Tco:
    store = Store(tmp_path / "p.duckdb")
    store.write_run("aws", [ON_DEMAND, SPOT, RESERVED], started_at=T0, observed_at=T0,
                    regions=["us-east-1"])  # fmt: skip
    return read(store.path, Need("A100", months=6), baseline=baseline)


def test_the_bars_are_the_totals_cheapest_on_top(tmp_path: Path) -> None:
    found = answer(tmp_path, baseline=4)
    fig = tco_chart.chart(found)
    ax = fig.axes[0]
    widths = [p.get_width() for p in ax.patches if isinstance(p, Rectangle)]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    # Six months: spot 10 x 4380 h x 1.1 = 48,180; on-demand 21.957642 x 4380 = 96,174.47;
    # the 3-year term paid whole: 214,419.99; blends: 4 reserved (one whole p4d, 214,419.99)
    # + 4 at spot on one p4d (48,180) = 262,599.99, + 4 on-demand = 310,594.46.
    assert widths == [310594.46, 262599.99, 214419.99, 96174.47, 48180.0]  # bottom-up
    assert labels[-1] == "spot: aws us-east-1/use1-az6 p4d.24xlarge"
    assert labels[2] == "reserved 3y: aws us-east-1 p4d.24xlarge (whole term)"
    assert labels[0] == "blend 4 reserved 3y + 4 on-demand"
    assert ax.get_title() == "TCO of 8x A100 for 6 months at 100% utilization"
    assert ax.get_xlabel() == "total cost over 6 months (USD)"


def test_the_chart_is_written_as_png(tmp_path: Path) -> None:
    target = tco_chart.save_chart(answer(tmp_path), tmp_path / "tco.png")
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
