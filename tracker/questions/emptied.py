"""Which filter emptied an answer: `latest --gpu L4 --kind reserved` on a store with L4 offers
but none reserved says so ("no reserved offers for L4 (27 L4 offers of other kinds)") rather
than "run collect first?", which stays for an empty store (docs/commands.md, "Errors").

Each filter given is dropped in turn; the first whose absence brings offers (or series) back
is the one named, with how many the others match."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from collectors.common import kind_label
from storage.reads.gpu_filter import GpuChoice

F = TypeVar("F")

# Per filter: the fields it sets (dropped together), how it reads before "offers" (an
# adjective: "reserved"), after them ("from aws") and what the others are ("of other kinds").
_WORDS: dict[str, tuple[tuple[str, ...], str, str, str]] = {
    "kind": (("kind",), "{} ", "", "of other kinds"),
    "term": (("term",), "", " of a {}-month term", "of other terms"),
    "provider": (("provider",), "", " from {}", "from other providers"),
    "region": (("region",), "", " in {}", "in other regions"),
    "zone": (("zone",), "", " in zone {}", "in other zones"),
    "instance_type": (("instance_type",), "", " of type {}", "of other types"),
    "min_memory_gib": (("min_memory_gib",), "", " with {:g}+ GiB a GPU", "with less memory"),
    "gpu": (("gpu", "gpu_memory_gib"), "", "", "of other GPUs"),
}
START_HERE = "run `gpu-tracker collect` first?"


def why_empty(
    filters: F, count: Callable[[F], int], noun: str = "offers", *, everything: F, empty: str
) -> str:
    """Why nothing matches `filters`, counting matches with `count`; `everything` is the
    filters that match all, and `empty` the words for a store with nothing in it."""
    if not count(everything):
        return empty
    given = [name for name in _WORDS if _value(filters, name) is not None]
    if getattr(filters, "sold_out", True) is False:
        every = dataclasses.replace(filters, sold_out=True)  # type: ignore[type-var]
        if found := count(every):
            return (
                f"no {_phrase(filters, given, noun)} can be rented now ({found} "
                f"{_phrase(filters, given, _one(noun, found), gpu_first=True)} sold out: "
                "--include-sold-out shows them)"
            )
    for name in given:
        fields = _WORDS[name][0]
        others = dataclasses.replace(filters, **dict.fromkeys(fields))  # type: ignore[type-var]
        found = count(others)
        if found:
            rest = [n for n in given if n != name]
            return (
                f"no {_phrase(filters, given, noun)} ({found} "
                f"{_phrase(filters, rest, _one(noun, found), gpu_first=True)} "
                f"{_WORDS[name][3]})"
            )
    flags = " ".join(f"--{n.replace('_', '-')}" for n in given)
    return f"no {noun} match these filters together ({flags}): drop one to see more"


def _one(noun: str, found: int) -> str:
    """`1 offer`, `2 offers` (a series is one or many)."""
    return noun[:-1] if found == 1 and noun == "offers" else noun


def _value(filters: Any, name: str) -> Any:
    if name == "gpu" and getattr(filters, "gpu", None):
        return GpuChoice(filters.gpu, getattr(filters, "gpu_memory_gib", None)).label
    value = getattr(filters, name, None)
    if name == "kind" and value:
        return kind_label(value)
    return value or None


def _phrase(filters: Any, names: list[str], noun: str, *, gpu_first: bool = False) -> str:
    """`reserved offers for L4 from aws`; `gpu_first`: `L4 reserved offers from aws`."""
    before = "".join(_WORDS[n][1].format(_value(filters, n)) for n in names)
    gpu = _value(filters, "gpu") if "gpu" in names else None
    after = "".join(_WORDS[n][2].format(_value(filters, n)) for n in names if n != "gpu")
    if gpu_first and gpu:
        return f"{gpu} {before}{noun}{after}"
    return f"{before}{noun}{f' for {gpu}' if gpu else ''}{after}"


def latest(store: Path, filters: Any, timeout_s: float | None) -> str:
    """Why `latest` found nothing for `filters` (a `storage.latest.Filters`)."""
    from storage import latest as latest_mod

    def count(chosen: latest_mod.Filters) -> int:
        return latest_mod.matching(store, chosen, timeout_s)

    everything = latest_mod.Filters(sold_out=True)
    return why_empty(
        filters, count, everything=everything, empty=f"no current prices ({START_HERE})"
    )


def history(store: Path, filters: Any, timeout_s: float | None) -> str:
    """Why `history` found no series for `filters` (a `SeriesFilters`)."""
    from storage.reads import series

    def count(chosen: series.SeriesFilters) -> int:
        return series.matching_series(store, chosen, timeout_s=timeout_s)

    empty = f"no price series in the store ({START_HERE})"
    return why_empty(filters, count, "series", everything=series.SeriesFilters(), empty=empty)
