"""The `tco` chart: one horizontal bar per strategy's best option (and per blended plan), the
total cost over the horizon in USD, labelled with the offer it is, cheapest on top."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from storage.reads.tco import Tco
from tracker.charts import labels

if TYPE_CHECKING:  # matplotlib only to draw: the dashboard takes `bars` and draws its own SVG
    from matplotlib.figure import Figure

# One colour per kind of plan, so a reader sees at a glance which bars are spot or reserved.
_COLOURS = {"on-demand": "tab:blue", "spot": "tab:orange", "reserved": "tab:green",
            "blend": "tab:purple"}  # fmt: skip


@dataclass(frozen=True)
class Bar:
    label: str  # strategy, provider, instance type, term
    total_usd: float
    kind: str  # a key of _COLOURS


def bars(answer: Tco) -> list[Bar]:
    """The bars to draw: the best option of each strategy (per memory size), then the blends,
    cheapest first."""
    best = labels.best_per_strategy(answer)
    several = len(labels.sizes(best)) > 1  # then each bar says its memory size

    def size(row: dict[str, Any]) -> str:
        return f" ({labels.memory_words(row['gpu_memory_gib'])})" * several

    drawn = [
        Bar(f"{labels.strategy(row)}{size(row)}: {labels.offer(row)}"
            + _term_note(row, answer.need.months), row["total_usd"],
            labels.strategy(row).split()[0])
        for row in best
    ]  # fmt: skip
    drawn += [
        Bar(f"blend {labels.plan_name(plan)}{size(plan)}", plan["total_usd"], "blend")
        for plan in answer.blends
    ]
    return sorted(drawn, key=lambda bar: bar.total_usd)


def chart(answer: Tco) -> Figure:
    """The figure: titled with the need, the x axis the total in USD."""
    from tracker.charts.base import figure

    need = answer.need
    fig, ax = figure(labels.title(answer), ylabel="")
    shown = bars(answer)[::-1]  # barh draws bottom-up: the cheapest ends on top
    positions = range(len(shown))
    ax.barh(positions, [b.total_usd for b in shown], color=[_COLOURS[b.kind] for b in shown])
    ax.set_yticks(list(positions), [b.label for b in shown], fontsize="small")
    ax.set_xlabel(f"total cost over {need.months:g} months (USD)")
    ax.xaxis.set_major_formatter("{x:,.0f}")
    for y, bar in zip(positions, shown, strict=True):
        ax.annotate(f" {bar.total_usd:,.0f}", (bar.total_usd, y), va="center",
                    fontsize="small")  # fmt: skip
    ax.margins(x=0.15)
    return fig


def save_chart(answer: Tco, path: str | Path) -> Path:
    """Draw the chart of `answer` into a PNG file."""
    from tracker.charts.base import save

    return save(chart(answer), path)


def _term_note(row: dict[str, object], months: float) -> str:
    term = row["term_months"]
    if isinstance(term, int) and term > months:
        return " (whole term)"
    return ""
