"""The review opens with the market index's move over the period, per followed GPU, kind and
segment (on `index_support`'s store, whose docstring has the numbers)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from alerts import digest
from alerts.review import market
from tests.storage.reads import index_support
from tests.storage.reads.index_support import NOW
from tracker.review.market import index_moves


def test_the_index_then_and_now_per_gpu_kind_and_segment(tmp_path: Path) -> None:
    store = index_support.build(tmp_path / "prices.duckdb")
    then = datetime(2026, 11, 1, 12, tzinfo=UTC)
    moves = index_moves(store, then, NOW, ("H100",))
    found = {m["segment"]: (m["then"], m["now"], m["move_pct"]) for m in moves}
    # all: 2.5 at the end of 11-01, 2.0 now (lambdalabs at 2.0): 2.0 / 2.5 - 1 = -20 %.
    assert found == {
        "all": (2.5, 2.0, -20.0),
        "hyperscaler": (2.8, 2.8, 0.0),
        "neocloud": (2.5, 2.0, -20.0),
        "marketplace": (1.6, 1.6, 0.0),
    }
    assert {m["gpu_model"] for m in moves} == {"H100"}  # only the GPUs followed
    lines = market.lines({"market": list(moves)})
    assert lines[0].startswith("How the market moved")
    assert lines[2].split() == ["H100", "80GB", "on-demand", "(all)", "2.50", "(4)", "2.00",
                                "(4)", "-20.0%"]  # fmt: skip
    text = digest.plain_text(_facts(moves))
    assert text.index("How the market moved") < text.index("No prices to show")


def _facts(moves: tuple[dict[str, object], ...]) -> dict[str, object]:
    return {"kind": "review", "period": "2026-11-01..2026-11-03", "since": "2d",
            "now": NOW.isoformat(), "then": "2026-11-01T12:00:00+00:00", "has_then": True,
            "history_from": None, "models": [], "unrated": {"now": {}, "then": {}},
            "alerts": [], "market": list(moves)}  # fmt: skip
