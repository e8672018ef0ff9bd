"""Azure's Retail Prices rows to price records: pure, no I/O.

`Consumption` rows are on-demand (spot when the sku or meter name ends in " Spot"), with the
savings plans of their `savingsPlan` array (`collectors.azure.plans`); `Reservation` rows are
1 or 3 year reservations. The API names no GPU, so GPU and host facts
come from `collectors.gpus`: the user's `[gpus.instance_types."<sku>"]` entry, else the bundled
table. A SKU neither knows has no GPU count: it is reported (`unknown_instance_types`), not
stored.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Iterator
from decimal import Decimal
from operator import itemgetter
from typing import Any

from collectors import gpus, kit
from collectors.azure import plans
from collectors.base import ParseResult, Payloads, PriceRecord, effective_hourly, money
from collectors.common import PayloadShapeError, PriceKind

PROVIDER = "azure"
# Reservation rows say "1 Hour" but price the whole term: these are the terms we can spread.
RESERVATION_TERMS = {"1 Year": 12, "3 Years": 36}
REQUIRED_FIELDS = (
    "armRegionName",
    "armSkuName",
    "currencyCode",
    "meterName",
    "productName",
    "retailPrice",
    "skuName",
    "type",
    "unitOfMeasure",
)
TEXT_FIELDS = tuple(f for f in REQUIRED_FIELDS if f != "retailPrice")
_REQUIRED = frozenset(REQUIRED_FIELDS)
_TEXT_VALUES = itemgetter(*TEXT_FIELDS)
# Skip reasons that are not policy but rows we did not expect: each one is logged as a warning.
ODDITIES = frozenset(
    {
        "unknown price type",
        "no armSkuName",
        "no region",
        "unit is not 1 Hour",
        "no price",
        "unknown reservation term",
    }
)
_PAGE_KEY = re.compile(r"page-(\d+)")

Log = logging.LoggerAdapter[Any]


def parse(payloads: Payloads, regions: tuple[str, ...], log: Log) -> ParseResult:
    """Rows to records; every row not stored is counted in `skipped_rows`.

    Never stored: Windows, Low Priority, dev/test and dedicated-host rows, zero prices,
    rows without a SKU or priced per something other than the hour, and duplicates. With
    `regions`, rows of other regions are skipped too.
    """
    return _Parser(frozenset(regions), log).run(payloads)


def page_items(page: Any, where: str) -> list[Any]:
    """The rows of one page; an answer without an `Items` list fails the run."""
    items = page.get("Items") if isinstance(page, dict) else None
    if not isinstance(items, list):
        raise PayloadShapeError(PROVIDER, f"{where}: answer has no Items list")
    return items


class _Parser:
    def __init__(self, asked: frozenset[str], log: Log) -> None:
        self._asked = asked  # the regions kept (empty: all)
        self.log = log

    def run(self, payloads: Payloads) -> ParseResult:
        result = ParseResult()
        offers: dict[tuple[Any, ...], PriceRecord] = {}
        skipped: Counter[str] = Counter()
        malformed: list[str] = []
        for key, index, item, problem in _rows(payloads):
            if problem:  # one row of another shape is skipped; every row so, the answer fails
                malformed.append(problem)
                self._skip_malformed(item, problem, result)
                skipped["malformed row"] += 1
                continue
            reason = self._place(item, (key, index), offers, result)
            if reason is not None:
                skipped[reason] += 1
        if malformed and len(malformed) == sum(skipped.values()) and not offers:
            raise PayloadShapeError(PROVIDER, malformed[0])
        result.records = list(offers.values())
        result.skipped_rows = sum(skipped.values())
        for sku in sorted(result.unknown_instance_types):
            self.log.warning(
                "%s: %s is not in the GPU table; its prices are not stored (add "
                '[gpus.instance_types."%s"] to config.toml to price it)',
                PROVIDER,
                sku,
                sku,
            )
        if skipped:
            self.log.info(
                "%s: %d records, %d rows skipped (%s)",
                PROVIDER,
                len(offers),
                result.skipped_rows,
                ", ".join(f"{k}: {n}" for k, n in skipped.items()),
            )
        return result

    def _place(
        self,
        item: dict[str, Any],
        where: tuple[str, int],
        offers: dict[tuple[Any, ...], PriceRecord],
        result: ParseResult,
    ) -> str | None:
        """Add the row's record to `offers`, or say why it was skipped."""
        reason = self._skip_reason(item)
        # The API names no GPU: the user's [gpus.instance_types] entry, else the bundled table.
        found = None if reason else gpus.resolve(PROVIDER, item["armSkuName"])
        if found is None and reason is None:
            result.unknown_instance_types.add(item["armSkuName"])
            return "unknown instance type"
        gpu = None if found is None else found.gpu
        # The price is read last: most rows of a full answer are skipped before it is needed.
        price = None if reason else kit.exact(item["retailPrice"])
        reason = reason or _price_reason(item, price)
        if reason is not None or gpu is None or price is None:
            if reason in ODDITIES:
                self.log.warning(
                    "%s: %s item %d: skipped (%s): %s", PROVIDER, *where, reason, _describe(item)
                )
            return reason
        record = _record(item, gpu, price)
        kept = offers.setdefault(record.key(), record)
        if kept is record:
            result.facts[record.instance_type] = found.source if found else "table"
            if record.price_kind == "on_demand":  # savings plans cover no spot VM
                self._place_plans(item, gpu, where, offers, result)
            return None
        # Two rows pricing the same offer differently: which one Azure bills is not knowable
        # from the payload, so keep the first seen (pages are read in order: deterministic)
        # and say so, rather than guess that the lower one is right.
        if (kept.price_per_hour, kept.upfront_total) != (
            record.price_per_hour,
            record.upfront_total,
        ):
            self.log.warning(
                "%s: %s item %d: second price %s for %s; keeping the first, %s",
                PROVIDER,
                *where,
                record.price_per_hour,
                _describe(item),
                kept.price_per_hour,
            )
            return "conflicting price"
        # The API repeats rows. Consumption and Reservation rows can share a meterId, so the
        # offer key (kind and term included), not the meter, tells a repeat from a new price.
        return "duplicate"

    def _place_plans(
        self,
        item: dict[str, Any],
        gpu: gpus.InstanceGpu,
        where: tuple[str, int],
        offers: dict[tuple[Any, ...], PriceRecord],
        result: ParseResult,
    ) -> None:
        """The row's savings-plan prices, each an offer of its own beside the on-demand one."""
        found, problems = plans.offers(item)
        for problem in problems:
            self.log.warning("%s: %s item %d: %s: %s", PROVIDER, *where, problem, _describe(item))
        if problems:  # its plans missing here: unconfirmed, not withdrawn
            result.unreadable.add(item["armSkuName"])
        for offer in found:
            record = kit.record(PROVIDER, item["armRegionName"], item["armSkuName"], gpu, offer)
            kept = offers.setdefault(record.key(), record)
            if kept.price_per_hour != record.price_per_hour:  # first seen, as for any price
                self.log.warning(
                    "%s: %s item %d: second %d-month savings-plan price %s for %s; keeping %s",
                    PROVIDER,
                    *where,
                    record.term_months,
                    record.price_per_hour,
                    _describe(item),
                    kept.price_per_hour,
                )

    def _skip_malformed(self, item: Any, problem: str, result: ParseResult) -> None:
        self.log.warning("%s: %s; skipped", PROVIDER, problem)
        sku = item.get("armSkuName") if isinstance(item, dict) else None
        if isinstance(sku, str):  # its offers missing here: unconfirmed, not withdrawn
            result.unreadable.add(sku)

    def _skip_reason(self, item: dict[str, Any]) -> str | None:
        """Why a row must not be stored, or None when it is a price we keep."""
        kind = item["type"]
        if kind == "DevTestConsumption":  # dev/test subscription pricing, not the list price
            return "dev/test price"
        if kind not in ("Consumption", "Reservation"):
            return "unknown price type"
        if "Windows" in item["productName"]:  # the only marker of a Windows (licensed) row
            return "windows"
        if _name_ends(item, " Low Priority"):  # the retiring Batch price: not spot
            return "low priority"
        if "Dedicated" in item["productName"]:  # a whole dedicated host, not a VM
            return "dedicated host"
        if not item["armSkuName"]:
            return "no armSkuName"
        if not item["armRegionName"]:
            return "no region"
        if self._asked and item["armRegionName"] not in self._asked:
            return "region not asked"
        if item["unitOfMeasure"] != "1 Hour":
            return "unit is not 1 Hour"
        return None


def _price_reason(item: dict[str, Any], price: Decimal | None) -> str | None:
    """Why a row of a known instance type carries no price we can store."""
    if price is None or price <= 0:
        return "no price"
    if item["type"] == "Reservation" and str(item.get("reservationTerm")) not in RESERVATION_TERMS:
        return "unknown reservation term"
    return None


def _record(item: dict[str, Any], gpu: gpus.InstanceGpu, price: Decimal) -> PriceRecord:
    kind: PriceKind
    term: int | None = None
    upfront: Decimal | None = None
    if item["type"] == "Reservation":
        # Reservation rows say "1 Hour" but retailPrice is the TOTAL for the term. Azure lets
        # it be paid up front or monthly for the same total; the price list does not tell the
        # two apart, so the total is the upfront part and payment_option stays None.
        kind, term = "reserved", RESERVATION_TERMS[item["reservationTerm"]]
        upfront, hourly = money(price), effective_hourly(Decimal(0), price, term)
    else:
        # Spot is the same `type` as on-demand; only the name suffix tells them apart.
        kind = "spot" if _name_ends(item, " Spot") else "on_demand"
        hourly = money(price)
    offer = kit.Offer(kind, item["currencyCode"], hourly, term, upfront_total=upfront)
    return kit.record(PROVIDER, item["armRegionName"], item["armSkuName"], gpu, offer)


def _rows(payloads: Payloads) -> Iterator[tuple[str, int, Any, str]]:
    """Every row of every page, in page order, checked for the fields the parser reads: with
    what is wrong with its shape ('' when nothing)."""
    for key in sorted(payloads, key=lambda k: _page_number(str(k))):
        for index, item in enumerate(page_items(payloads[key], key)):
            # One C-level check per row (60,000 in a full answer); the slow path only to
            # explain a failure.
            if (
                isinstance(item, dict)
                and _REQUIRED.issubset(item)
                and {*map(type, _TEXT_VALUES(item))} == {str}
            ):
                yield key, index, item, ""
            else:
                yield key, index, item, _explain_bad_row(item, f"{key} item {index}")


def _explain_bad_row(item: Any, where: str) -> str:
    if not isinstance(item, dict):
        return f"{where} is not an object"
    missing = [f for f in REQUIRED_FIELDS if f not in item]
    if missing:
        return f"{where} lacks {', '.join(missing)}"
    not_text = [f for f in TEXT_FIELDS if not isinstance(item[f], str)]
    return f"{where}: {', '.join(not_text)} not a string"


def _page_number(key: str) -> int:
    found = _PAGE_KEY.fullmatch(key)
    if found is None:
        raise PayloadShapeError(PROVIDER, f"unexpected payload key {key!r}")
    return int(found.group(1))


def _name_ends(item: dict[str, Any], suffix: str) -> bool:
    return bool(item["skuName"].endswith(suffix) or item["meterName"].endswith(suffix))


def _describe(item: dict[str, Any]) -> str:
    return (
        f"{item['armSkuName'] or '?'} {item['armRegionName'] or '?'} {item['type']} "
        f"{item['skuName']!r} {item['retailPrice']} {item['unitOfMeasure']!r}"
    )
