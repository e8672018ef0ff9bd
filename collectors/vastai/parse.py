"""Vast.ai's offer search -> one on-demand and one spot price per group of comparable offers.

A group is what a user can compare over time: the same GPU (Vast's own `gpu_name`), the same
GPU count and the host's country. Its instance type is `"<num_gpus>x <gpu_name>"` and its region
the country code. On-demand is the lowest `dph_base` (compute only: `dph_total` adds storage for
the disk size the query named, so it is no list price) and spot the lowest `min_bid` (the
interruptible floor) among the group's verified, rentable, not rented offers; an offer listed
twice (same `id`) counts once. Per-offer detail (host, machine, reliability) stays out of the
price history; how many offers each group had goes beside it (`market`, the view
`market_depth`) and into the run summary.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from collectors import gpus, kit
from collectors.base import MarketDepth, ParseResult, Payloads, PriceRecord, money
from collectors.common import PayloadShapeError

PROVIDER = "vastai"
PAYLOAD_KEY = "bundles"
CURRENCY = "USD"
LIMIT = 10_000
MIB_PER_GIB = 1024
MOST_SHOWN = 3  # groups named in the run summary's line; the log names every group
# "Texas, US", "Sweden, SE", "US": the country code is the last part.
_COUNTRY = re.compile(r"(?:^|,)\s*([A-Z]{2})\s*$")
Log = logging.Logger | logging.LoggerAdapter[logging.Logger]


class _Skip(Exception):
    """An offer the parser cannot read: logged, counted in skipped_rows."""


@dataclass(frozen=True)
class _Offer:
    group: tuple[int, str, str]  # (num_gpus, gpu_name, country)
    gpu: gpus.InstanceGpu
    source: str  # where the GPU facts came from: "api" (the offer's fields) or "config"
    dph_base: Decimal
    min_bid: Decimal | None


@dataclass
class _Group:
    offers: int = 0
    on_demand: _Offer | None = None
    spot: _Offer | None = None


def offers(payloads: Payloads) -> list[Any]:
    """The answer's offers; a changed overall shape raises PayloadShapeError."""
    body = payloads.get(PAYLOAD_KEY)
    found = body.get("offers") if isinstance(body, dict) else None
    if not isinstance(found, list):
        error = kit.obj(body).get("error") or kit.obj(body).get("msg")
        why = f"the answer is an error: {repr(error)[:200]}" if error else "no offers list"
        raise PayloadShapeError(PROVIDER, f"{PAYLOAD_KEY}: {why}")
    return found


def parse(payloads: Payloads, countries: tuple[str, ...], log: Log) -> ParseResult:
    """The groups' records; `countries` (the configured regions) limits them, () keeps all."""
    answer = offers(payloads)
    result = ParseResult()
    groups: dict[tuple[int, str, str], _Group] = {}
    seen: set[Any] = set()
    left_out = Counter[str]()
    for entry in answer:
        offer = _read(entry, seen, left_out, result, log)
        if offer is None or (countries and offer.group[2] not in countries):
            continue
        group = groups.setdefault(offer.group, _Group())
        group.offers += 1
        if group.on_demand is None or offer.dph_base < group.on_demand.dph_base:
            group.on_demand = offer
        if offer.min_bid is not None and (
            group.spot is None or group.spot.min_bid is None or offer.min_bid < group.spot.min_bid
        ):
            group.spot = offer
    if answer and result.skipped_rows == len(answer):
        raise PayloadShapeError(PROVIDER, f"none of the {len(answer)} offers could be read")
    for key in sorted(groups):
        result.records.extend(_records(key, groups[key]))
        first = groups[key].on_demand
        if first is not None:
            result.facts[_type(*key[:2])] = first.source
    result.market = [
        MarketDepth(key[2], _type(*key[:2]), groups[key].offers) for key in sorted(groups)
    ]
    result.notes.extend(_notes(answer, groups, left_out))
    if groups:  # every group's count, for the log a daemon keeps
        counts = ", ".join(f"{_name(key)} {groups[key].offers}" for key in sorted(groups))
        log.info("%s: offers per group: %s", PROVIDER, counts)
    return result


def _read(
    entry: Any, seen: set[Any], left_out: Counter[str], result: ParseResult, log: Log
) -> _Offer | None:
    """One eligible offer, or None: not eligible (counted apart), a repeat, or unreadable."""
    row = kit.obj(entry)
    ident = row.get("id")
    if not isinstance(ident, int | str) or isinstance(ident, bool):
        log.warning("%s: an offer without an id skipped", PROVIDER)
        result.skipped_rows += 1
        return None
    if ident in seen:
        return None  # listed twice: one offer
    seen.add(ident)
    why = _ineligible(row)
    if why:
        left_out[why] += 1
        return None
    try:
        return _offer(row)
    except _Skip as skip:
        log.warning("%s: offer %s skipped: %s", PROVIDER, str(ident)[:40], skip)
        result.skipped_rows += 1
        name, count = row.get("gpu_name"), row.get("num_gpus")
        if isinstance(name, str) and len(name) <= 100 and isinstance(count, int):  # unconfirmed
            result.unreadable.add(_type(count, name.strip()))
        return None


def _ineligible(row: dict[str, Any]) -> str:
    """Why an offer is not one a user can rent from a verified host now ('' when it is)."""
    if row.get("verified") is not True and row.get("verification") != "verified":
        return "unverified host"
    if row.get("rentable") is False or row.get("rented") is True:
        return "rented or not rentable"
    if row.get("external") is True:
        return "external"
    return ""


def _offer(row: dict[str, Any]) -> _Offer:
    name = row.get("gpu_name")
    if not isinstance(name, str) or not name.strip() or len(name) > 100:
        raise _Skip(f"gpu_name is {_shown(name)}")
    name = name.strip()
    count = row.get("num_gpus")
    if isinstance(count, bool) or not isinstance(count, int) or not 0 < count <= 1024:
        raise _Skip(f"num_gpus is {_shown(count)}")
    country = _country(row.get("geolocation"))
    dph_base = _price(row.get("dph_base"))
    if dph_base is None:
        raise _Skip(f"dph_base is {_shown(row.get('dph_base'))}")
    # gpu_ram is one GPU's memory in MiB (24564, 81559): the nearest whole GB, as the GPU
    # table and every other provider state it (24, 80).
    ram = kit.size(row.get("gpu_ram"))
    if ram is None:
        raise _Skip(f"gpu_ram is {_shown(row.get('gpu_ram'))}")
    model = gpus.stored_model(PROVIDER, name)
    said = gpus.InstanceGpu(model, count, float(round(ram / MIB_PER_GIB)))
    # The offer's own facts; a user's [gpus.instance_types."<count>x <name>"] entry over them.
    found = gpus.resolve(PROVIDER, _type(count, name), said)
    gpu = said if found is None else found.gpu
    source = "api" if found is None else found.source
    return _Offer((count, name, country), gpu, source, dph_base, _price(row.get("min_bid")))


def _country(value: Any) -> str:
    found = _COUNTRY.search(value) if isinstance(value, str) and len(value) < 200 else None
    if found is None:
        raise _Skip(f"geolocation {_shown(value)} names no country")
    return found[1]


def _price(value: Any) -> Decimal | None:
    """A positive hourly price, exact to the store's six places; None for none or zero."""
    number = kit.exact(value)
    return money(number) if number is not None and number > 0 else None


def _records(key: tuple[int, str, str], group: _Group) -> list[PriceRecord]:
    count, name, country = key
    instance_type = _type(count, name)
    # Rentable now by definition: only offers open to rent make a group.
    records = []
    if group.on_demand is not None:
        priced = kit.Offer("on_demand", CURRENCY, group.on_demand.dph_base)
        records.append(_record(country, instance_type, group.on_demand, priced))
    if group.spot is not None and group.spot.min_bid is not None:
        priced = kit.Offer("spot", CURRENCY, group.spot.min_bid)
        records.append(_record(country, instance_type, group.spot, priced))
    return records


def _record(country: str, instance_type: str, offer: _Offer, priced: kit.Offer) -> PriceRecord:
    # The GPU facts of the offer that set the price: two variants may share a name.
    return kit.record(PROVIDER, country, instance_type, offer.gpu, priced, available=True)


def _notes(
    answer: list[Any], groups: dict[tuple[int, str, str], _Group], left_out: Counter[str]
) -> list[str]:
    offered = sum(g.offers for g in groups.values())
    ranked = sorted(groups.items(), key=lambda item: (-item[1].offers, item[0]))
    most = ", ".join(f"{_name(key)} ({group.offers})" for key, group in ranked[:MOST_SHOWN])
    notes = [f"{offered} offers in {len(groups)} groups (GPU, count, country)"]
    if most:
        notes[0] += f"; most offered: {most}"
    if left_out:
        notes.append("left out: " + ", ".join(f"{n} {why}" for why, n in sorted(left_out.items())))
    if len(answer) >= LIMIT:
        notes.append(f"the answer holds {len(answer)} offers, the most asked for: it may be cut")
    return notes


def _type(count: int, name: str) -> str:
    """The instance type of a group of offers ("8x H100 SXM"): what the store and a user's
    [gpus.instance_types] entry call it."""
    return f"{count}x {name}"


def _name(key: tuple[int, str, str]) -> str:
    return f"{_type(*key[:2])} {key[2]}"


def _shown(value: Any) -> str:
    """A value as a log line shows it: its repr, cut short (an answer may carry megabytes)."""
    return repr(value)[:40]
