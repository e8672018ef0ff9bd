"""The dashboard's charts as SVG text, drawn by the house charts (`tracker.charts`): the step
chart of `history` and the bars of `tco`.

pyplot keeps global state, and the server answers on several threads: one chart at a time.
"""

from __future__ import annotations

import io
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from storage.reads.series import Window
from storage.reads.tco import Tco

if TYPE_CHECKING:  # matplotlib is imported when the first chart is drawn
    from matplotlib.figure import Figure

    from tracker.charts.history import Series

_DRAWING = threading.Lock()
# Text stays text (not glyph paths): a third of the size, and the browser test can read it.
_RC: dict[Any, Any] = {"svg.fonttype": "none"}


def history_svg(
    lines: Sequence[Series],
    currency: str,
    window: Window,
    left_out: int,
    unit: str = "instance-hour",
) -> str:
    """The step chart of `lines` (one currency, prices per `unit`)."""
    from tracker.charts import history

    with _DRAWING:
        fig = history.draw(
            lines,
            currency=currency,
            since=window.since,
            until=window.until,
            left_out=left_out,
            unit=unit,
        )
        return _svg(fig)


def tco_svg(answer: Tco) -> str:
    """The bars of the best option per strategy."""
    from tracker.charts import tco

    with _DRAWING:
        return _svg(tco.chart(answer))


def figure_svg(draw: Callable[[], Figure]) -> str:
    """The figure `draw` makes, as SVG (drawn while no other chart is)."""
    with _DRAWING:
        return _svg(draw())


def _svg(fig: Figure) -> str:
    import matplotlib
    import matplotlib.pyplot as plt

    buffer = io.StringIO()
    try:
        with matplotlib.rc_context(_RC):
            fig.tight_layout()
            fig.savefig(buffer, format="svg")
    finally:
        plt.close(fig)
    text = buffer.getvalue()
    return text[text.index("<svg") :]  # no XML prolog or DOCTYPE inside an HTML page
