"""Acme Cloud: on-demand and spot GPU prices per region (the provider template: copy me).

`fetch` asks `GET {endpoint}/v1/gpu-prices` with the key in `ACME_API_KEY` as a Bearer token,
page after page: each answer carries `next_cursor`, sent back as `cursor` until it is null. The
answer is `{"prices": [...], "next_cursor": ...}`, one row per instance type and region with
`gpu` (Acme's spelling of the GPU), `gpu_count`, `gpu_memory_gb` (of one GPU),
`price_per_hour` (USD for the whole instance) and `spot_price_per_hour` (null: no spot).
`parse` makes one on-demand record per row and one spot record where the row has a spot price.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any, ClassVar

from collectors import gpus, kit
from collectors.base import Collector, ParseResult, Payloads, PriceRecord, money
from collectors.common import FetchError, PayloadShapeError
from collectors.http import get_json, make_session
from collectors.pages import Cap, Cursor

DEFAULT_ENDPOINT = "https://api.acme.example"
PATH = "/v1/gpu-prices"
CREDENTIAL = "ACME_API_KEY"
AUTH_HINT = (
    f"check the API key in {CREDENTIAL}, or in the variable providers.acme.api_key_env names"
)
CURRENCY = "USD"
MOST_PAGES = 50  # a cursor that never ends must not hang the daemon


class _Skip(Exception):
    """A row the parser cannot read: logged, counted in skipped_rows, its type unreadable."""


class AcmeCollector(Collector):
    """Acme's GPU prices: every page of the price list, every region it names."""

    name = "acme"
    default_endpoint: ClassVar[str] = DEFAULT_ENDPOINT

    def check_credentials(self) -> None:
        self.credential("api_key", CREDENTIAL)

    def fetch(self) -> Payloads:
        url = (self.settings.endpoint or DEFAULT_ENDPOINT).rstrip("/") + PATH
        cap: Cap[str] = Cap(
            Cursor(_next_cursor),
            MOST_PAGES,
            lambda most: FetchError(self.name, f"price list: more than {most} pages"),
        )
        payloads: Payloads = {}
        with make_session(max_retries=self.settings.max_retries) as session:
            session.headers["Authorization"] = f"Bearer {self.credential('api_key', CREDENTIAL)}"

            def ask(number: int, cursor: str | None) -> Any:
                return get_json(
                    session,
                    self.name,
                    url,
                    timeout=self.settings.timeout,
                    what=f"price list page {number}",
                    auth_hint=AUTH_HINT,
                    params={"cursor": cursor} if cursor else None,
                )

            for number, page in cap.walk(ask):
                payloads[f"page-{number}"] = page
                self.progress(number, len(_rows(payloads)))  # a changed shape fails here
        return payloads

    def parse(self, payloads: Payloads, *, observed_at: datetime) -> ParseResult:
        rows = _rows(payloads)
        result = ParseResult()
        asked = frozenset(self.regions)
        for row in rows:
            instance_type = str(kit.obj(row).get("instance_type"))[:100]
            try:
                records, source = _records(row, asked)
            except _Skip as why:
                self.log.warning("%s: %s skipped: %s", self.name, instance_type, why)
                result.skipped_rows += 1
                result.unreadable.add(instance_type)  # its offers stay open, unconfirmed
                continue
            if records and records[0].gpu_model is None:
                self.log.warning("%s: %s: GPU not in the GPU table", self.name, instance_type)
            result.records.extend(records)
            if records:
                result.facts[instance_type] = source
        if rows and result.skipped_rows == len(rows):
            raise PayloadShapeError(self.name, f"none of the {len(rows)} rows could be read")
        return result


def _next_cursor(page: Any, number: int) -> str | None:
    cursor = kit.obj(page).get("next_cursor")
    return cursor if isinstance(cursor, str) and cursor else None


def _rows(payloads: Payloads) -> list[Any]:
    """Every page's rows in order; a page without a `prices` list is a changed shape."""
    rows: list[Any] = []
    for key in sorted(payloads, key=lambda k: int(k.rpartition("-")[2])):
        found = kit.obj(payloads[key]).get("prices")
        if not isinstance(found, list):
            raise PayloadShapeError(AcmeCollector.name, f"{key}: answer has no prices list")
        rows.extend(found)
    return rows


def _records(entry: Any, asked: frozenset[str]) -> tuple[list[PriceRecord], str]:
    """The row's records (none outside the asked regions) and where its GPU facts came from."""
    row = kit.obj(entry)
    instance_type, region = row.get("instance_type"), row.get("region")
    if not isinstance(instance_type, str) or not isinstance(region, str):
        raise _Skip("no instance_type or region")
    count, memory = kit.size(row.get("gpu_count")), kit.size(row.get("gpu_memory_gb"))
    if count is None or memory is None:
        raise _Skip("no gpu_count or gpu_memory_gb")
    said = gpus.InstanceGpu(gpus.canonical_model(AcmeCollector.name, row.get("gpu")), count, memory)
    found = gpus.resolve(AcmeCollector.name, instance_type, said)
    gpu, source = (said, "api") if found is None else (found.gpu, found.source)
    on_demand = _price(row.get("price_per_hour"))
    if on_demand is None:
        raise _Skip(f"price_per_hour is {str(row.get('price_per_hour'))[:40]!r}")
    if asked and region not in asked:
        return [], source
    offers = [kit.Offer("on_demand", CURRENCY, on_demand)]
    spot = _price(row.get("spot_price_per_hour"))
    if spot is not None:  # never the on-demand price standing in for a missing spot one
        offers.append(kit.Offer("spot", CURRENCY, spot))
    return [kit.record(AcmeCollector.name, region, instance_type, gpu, o) for o in offers], source


def _price(value: Any) -> Decimal | None:
    """A positive price as exact money, else None (no zero prices)."""
    number = kit.exact(value, kit.NUMBERS_OR_TEXT)
    return money(number) if number is not None and number > 0 else None
