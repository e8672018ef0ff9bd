"""The house style of every chart: Agg backend, titled, labelled axes, dates on the x axis.

matplotlib is imported here, lazily by the commands that draw, so commands that do not draw
never pay its start-up.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # before pyplot: no display on a server or in CI

import matplotlib.dates as mdates
import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure

# Wide enough for a legend beside the plot and readable when shrunk into an email.
SIZE_INCHES = (11.0, 6.0)
DPI = 110


def figure(title: str, ylabel: str, xlabel: str | None = None) -> tuple[Figure, Axes]:
    """A new figure with one axes, titled and labelled (the units belong in the labels)."""
    fig, ax = plt.subplots(figsize=SIZE_INCHES, dpi=DPI)
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    if xlabel:
        ax.set_xlabel(xlabel)
    ax.grid(True, alpha=0.3)
    return fig, ax


def date_axis(ax: Axes) -> None:
    """Dates on the x axis, labelled as the span calls for (hours, days or months), in UTC."""
    locator = mdates.AutoDateLocator()  # type: ignore[no-untyped-call]
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))  # type: ignore[no-untyped-call]
    ax.set_xlabel("date (UTC)")


def save(fig: Figure, path: str | Path) -> Path:
    """Write the figure as PNG and free it (the daemon draws for months in one process)."""
    target = Path(path)
    try:
        fig.tight_layout()
        fig.savefig(target, format="png")
    finally:
        plt.close(fig)
    return target


def png_bytes(fig: Figure) -> bytes:
    """The figure as PNG bytes (for an email attachment), freed afterwards."""
    import io

    buffer = io.BytesIO()
    try:
        fig.tight_layout()
        fig.savefig(buffer, format="png")
    finally:
        plt.close(fig)
    return buffer.getvalue()


def legend(ax: Axes, **kwargs: Any) -> None:
    """A legend outside the plot on the right, so it never hides a line."""
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", **kwargs)
