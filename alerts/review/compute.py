"""The review's lines on what compute costs: per GPU model the best PFLOP per dollar and the
cheapest 3-year strategy for the review's GPU need, then and now, as rows of one table (label,
then, now, change, which offer now, which then) and the intro lines that explain them.

Like the price tables, they compare like with like: a change is one offer's figure then against
its own figure now; where the best then and now are two offers, the change column says so and
each one's own figure on the other side is named. Reviews recorded before these figures existed
have none of their keys: nothing is shown for them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from alerts.message import amount, number
from collectors.common import kind_label

DASH = "—"
TITLE = "compute"
PFLOP_LABEL = "PFLOP per USD"
TCO_LABEL = "3-year cost"  # at the default 36 months; `horizon` names another need's
SAME = "the same offer"
OTHER_OFFER = "other offer"  # the change column where the best then is not the best now

Describe = Callable[[dict[str, Any]], str]  # the digest's wording of an offer (offer_words)


def intro(facts: dict[str, Any]) -> list[str]:
    """What the two rows mean, with the need the 3-year cost is priced for."""
    need = facts.get("need")
    if need is None:  # a review recorded before these figures
        return []
    return [
        f"What compute costs, then and now, per GPU model ({cost_label(need)}: "
        f"{need_words(need)}); change: how that one offer's figure changed ('{OTHER_OFFER}': the "
        "best then and now are two offers, each one's own figure on the other side is named "
        "below).",
        f"{PFLOP_LABEL}: the most dense FP16 compute one dollar buys (PFLOP), at the best offer "
        "of any kind.",
        f"{cost_label(need)}: the cheapest way to run {need_words(need)}, in USD: on-demand "
        f"and spot paid for the hours used (spot +{number(need['spot_overhead_pct'])}% for "
        "interruptions), reserved in whole terms.",
    ]


def horizon(need: dict[str, Any] | None) -> str:
    """`3-year` for 36 months (and a review from before the need), `2-year`, `18-month`."""
    months = 36 if need is None else int(need["months"])
    return f"{months // 12}-year" if months % 12 == 0 else f"{months}-month"


def cost_label(need: dict[str, Any] | None) -> str:
    """The 3-year-cost rows' label for the need's horizon (`2-year cost` for 24 months)."""
    return f"{horizon(need)} cost"


def need_words(need: dict[str, Any]) -> str:
    """`8 GPUs for 36 months at 100% use`."""
    gpus = f"{need['gpus']} GPU{'s' if need['gpus'] != 1 else ''}"
    return f"{gpus} for {need['months']} months at {number(100 * need['utilization'])}% use"


def rows(
    model: dict[str, Any], describe: Describe, label: str = TCO_LABEL
) -> list[tuple[str, str, str, str, str, str]]:
    """The model's PFLOP-per-dollar and 3-year-cost rows (none when it has neither), labelled
    with the model; `describe` words an offer."""
    lines = []
    name = model["gpu_model"]
    if pflop := model.get("pflop"):
        words = [_pflop_words(pflop[side], side, describe) for side in ("now", "then")]
        lines.append((f"{name} {PFLOP_LABEL}", _pflop(pflop["then"]), _pflop(pflop["now"]),
                      _change(pflop), *_where(pflop, words, _pflop)))  # fmt: skip
    if tco := model.get("tco"):
        words = [_tco_words(tco[side], side, describe) for side in ("now", "then")]
        lines.append((f"{name} {label}", _usd(tco["then"]), _usd(tco["now"]), _change(tco),
                      *_where(tco, words, _usd)))  # fmt: skip
    return lines


def strategy(row: dict[str, Any]) -> str:
    """`on-demand`, `spot`, `reserved 1y`, `reserved 3y`, `reserved 6mo`."""
    if row["price_kind"] != "reserved":
        return kind_label(row["price_kind"])
    term = int(row["term_months"])
    return f"reserved {term // 12}y" if term % 12 == 0 else f"reserved {term}mo"


def _pflop_words(best: dict[str, Any] | None, side: str, describe: Describe) -> str:
    """`spot, tencent ap-guangzhou ... GT4.41XLARGE948: 8x 312 TFLOPS for 7.777778 USD/h`."""
    if best is None:
        return f"no offer of this GPU with a USD price and an FP16 figure {side}"
    offer = describe({**best, "price": best["price_per_gpu_hour"]})  # its own currency's price
    words = f"{kind_label(best['price_kind'])}, {offer}"
    gpus, tflops = number(best["gpu_count"]), number(best["gpu_tflops_fp16"])
    return f"{words}: {gpus}x {tflops} TFLOPS for {amount(best['price_per_hour_usd'])} USD/h"


def _tco_words(best: dict[str, Any] | None, side: str, describe: Describe) -> str:
    """`reserved, aws us-east-1 p4d.24xlarge, 3y all-upfront standard: 1 instance, 1.019882
    USD/GPU-h`, or why there is none."""
    if best is None:
        return f"no offer of this GPU to price {side}"
    words = describe({**best, "currency": "USD"})  # the totals are in USD already
    if best["currency"] != "USD":
        words += f" (priced in {best['currency']}, converted)"
    count = int(best["instances"])
    instances = f"{count} instance{'s' if count != 1 else ''}"
    # The offer's words name a reserved term already: the kind alone says the strategy.
    usd = amount(best["usd_per_gpu_hour"])
    return f"{kind_label(best['price_kind'])}, {words}: {instances}, {usd} USD/GPU-h"


def _change(compared: dict[str, Any]) -> str:
    if compared["same_offer"] is False:  # two offers' figures are no change
        return OTHER_OFFER
    return _signed(compared["change_pct"])


def _where(
    compared: dict[str, Any], words: list[str], figure: Callable[[dict[str, Any] | None], str]
) -> tuple[str, str]:
    """Which offers are best now and then; where they are two, each one's own figure on the
    other side and how it changed."""
    now_words, then_words = words
    if compared["same_offer"]:
        return now_words, SAME
    if compared["same_offer"] is False:
        now_words += "; " + _across(compared["now_offer_then"], compared["now_offer_change_pct"],
                                    "then", figure)  # fmt: skip
        then_words += "; " + _across(compared["then_offer_now"], compared["then_offer_change_pct"],
                                     "now", figure)  # fmt: skip
    return now_words, then_words


def _across(
    best: dict[str, Any] | None,
    change: float | None,
    when: str,
    figure: Callable[[dict[str, Any] | None], str],
) -> str:
    """`was 913.8 then (+26.1%)`, `is 284,264 now (-18.2%)`, `no price then`."""
    if best is None:
        return f"no price {when}"
    verb = "was" if when == "then" else "is"
    return f"{verb} {figure(best)} {when} ({_signed(change)})"


def _pflop(best: dict[str, Any] | None) -> str:
    return DASH if best is None else f"{best['pflop_per_usd']:.1f}"


def _usd(best: dict[str, Any] | None) -> str:
    return DASH if best is None else f"{best['total_usd']:,.0f}"


def _signed(value: float | None) -> str:
    return DASH if value is None else f"{round(value, 1) + 0.0:+.1f}%"
