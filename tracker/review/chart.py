"""The review's chart: per GPU model, what its cheapest 3-year strategy costs then and now, as
horizontal bars in the house style (`tracker.charts.base`), drawn from the review's digest so a
retried email shows what was true when the review was made.

The email carries it inline (`alerts.email.Image`); Slack's incoming webhooks take no files, so
Slack gets the text alone. matplotlib is imported only when a chart is drawn.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from alerts.email import Image
from alerts.review.compute import horizon, need_words, strategy

FILENAME = "gpu-review-3-year-cost.png"
MAX_MODELS = 20  # beyond this the bars are too thin to read: the cheapest now are drawn
_COLORS = {"then": "#9e9e9e", "now": "#1f77b4"}


@dataclass(frozen=True)
class Bar:
    """One side of one GPU model: the 3-year total in USD and the strategy's short name."""

    gpu_model: str
    side: str
    total_usd: float
    label: str


def images(facts: Mapping[str, Any]) -> list[Image]:
    """The review's pictures for its email: the 3-year cost chart, or none when no GPU model
    has a 3-year figure (or the review is from before them)."""
    bars = bars_of(facts)
    if not bars or facts.get("need") is None:
        return []
    need = facts["need"]
    words = need_words(need)
    span = horizon(need)
    alt = f"Cheapest {span} strategy per GPU model, then and now ({words}); the text says it all"
    return [Image(FILENAME, draw(bars, words, str(facts["period"]), span), alt)]


def bars_of(facts: Mapping[str, Any]) -> list[Bar]:
    """The bars, GPU models with the cheapest now first (a model priced only then last)."""
    found = []
    for model in facts.get("models", []):
        tco = model.get("tco")
        if not tco:
            continue
        for side in ("then", "now"):
            best = tco[side]
            if best is not None:
                label = f"{strategy(best)}, {best['provider']}"
                found.append(Bar(model["gpu_model"], side, float(best["total_usd"]), label))
    now = {b.gpu_model: b.total_usd for b in found if b.side == "now"}
    order = sorted({b.gpu_model for b in found}, key=lambda m: (m not in now, now.get(m, 0), m))
    shown = set(order[:MAX_MODELS])
    return sorted((b for b in found if b.gpu_model in shown),
                  key=lambda b: (order.index(b.gpu_model), b.side != "then"))  # fmt: skip


def draw(bars: Sequence[Bar], need: str, period: str, span: str = "3-year") -> bytes:
    """The chart as PNG bytes: one row per GPU model, a bar then and a bar now, each labelled
    with its strategy and provider."""
    from tracker.charts import base  # matplotlib: only when drawing

    models = list(dict.fromkeys(b.gpu_model for b in bars))
    fig, ax = base.figure(
        f"Cheapest {span} strategy per GPU model, {period} ({need})",
        "GPU model",
        "total cost over the horizon, thousand USD",
    )
    height = 0.38
    for side, offset in (("then", -height / 2), ("now", height / 2)):
        mine = [b for b in bars if b.side == side]
        ys = [models.index(b.gpu_model) + offset for b in mine]
        widths = [b.total_usd / 1000 for b in mine]
        drawn = ax.barh(ys, widths, height=height, color=_COLORS[side], label=side)
        ax.bar_label(drawn, labels=[f" {b.label}" for b in mine], fontsize="small")
    ax.set_yticks(range(len(models)), models)
    ax.invert_yaxis()  # the cheapest now on top
    ax.margins(x=0.35)  # room for the labels right of the bars
    base.legend(ax)
    return base.png_bytes(fig)
