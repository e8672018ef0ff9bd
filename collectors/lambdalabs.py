"""Lambda Cloud: on-demand GPU prices, and the regions that can launch each type right now.

`fetch` makes one call, `GET {endpoint}/api/v1/instance-types` with the API key as a Bearer
token. The answer is an object keyed by instance type: the price in integer US cents per hour
(the same in every region) and `regions_with_capacity_available`. `parse` makes one on-demand
record per type per region with capacity (available=True). A type with capacity in no region
keeps its list price: one record with region NULL and available=False (the per-region offers
close, the sold-out one opens; when capacity returns, the reverse), `regions` configured or
not. With `regions` configured, a type with capacity only in other regions makes no record: its
offers in the asked ones close. The GPU is Lambda's own
`gpu_description` ("H100 (80 GB SXM5)") and `specs.gpus` (API facts); a GPU name the table
does not know is stored under its own name, the count and memory being known.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, ClassVar

from collectors import gpus, kit
from collectors.base import ParseResult, Payloads, PriceRecord, money
from collectors.common import PayloadShapeError
from collectors.http import OneAnswer

DEFAULT_ENDPOINT = "https://cloud.lambda.ai"
PATH = "/api/v1/instance-types"
PAYLOAD_KEY = "instance-types"
CREDENTIAL = "LAMBDA_API_KEY"
AUTH_HINT = (
    f"check the API key in {CREDENTIAL}, or in the variable providers.lambdalabs.api_key_env names"
)
CURRENCY = "USD"  # Lambda prices in US cents only
CENTS_PER_DOLLAR = Decimal(100)
# "H100 (80 GB SXM5)", "Tesla V100 (16 GB)", "GH200 (96 GB)": the GPU's name, then the memory
# of ONE GPU (the marketing GB, as everywhere in the GPU table), then an optional form factor.
_GPU_DESCRIPTION = re.compile(
    r"\s*(?P<name>\S.*?)\s*\(\s*(?P<memory>\d+(?:\.\d+)?)\s*GB\b[^)]*\)\s*"
)


class _Skip(Exception):
    """A row the parser does not understand: logged, counted in skipped_rows, not stored."""


class _Unplaced(Exception):
    """A GPU type whose GPU cannot be placed: reported in unknown_instance_types."""


@dataclass(frozen=True)
class _Offer:
    instance_type: str
    price: Decimal
    gpu: gpus.InstanceGpu
    source: str  # where the GPU facts came from: "api", "table" or "config"
    host: kit.Host
    regions: tuple[str, ...]


class LambdaCollector(OneAnswer):
    """Lambda Cloud's instance types: every region with capacity, or the configured ones."""

    name = "lambdalabs"
    default_endpoint: ClassVar[str] = DEFAULT_ENDPOINT
    path = PATH
    payload_key = PAYLOAD_KEY
    credential_variable = CREDENTIAL
    what = "instance types"
    auth_hint = AUTH_HINT

    def rows(self, payloads: Payloads) -> dict[str, Any]:
        return _data(payloads)

    def parse(self, payloads: Payloads, *, observed_at: datetime) -> ParseResult:
        """One record per GPU type per asked region with capacity, or one sold-out record in no
        region; CPU-only types are ignored."""
        data = _data(payloads)
        result = ParseResult()
        asked = frozenset(self.regions)
        nowhere: list[str] = []
        for instance_type in sorted(data):
            offer = self._read(instance_type, data[instance_type], result)
            if offer is None:
                continue
            regions = kit.sold_in(offer.regions, asked)
            if not regions:
                nowhere.append(instance_type)
                continue
            result.records.extend(_record(offer, region) for region in regions)
            result.facts[instance_type] = offer.source
        if data and result.skipped_rows == len(data):
            raise PayloadShapeError(
                self.name, f"none of the {len(data)} instance types could be read: changed shape?"
            )
        self._report(result, nowhere)
        return result

    def _report(self, result: ParseResult, nowhere: list[str]) -> None:
        sold_out = sorted({r.instance_type for r in result.records if r.region is None})
        if sold_out:
            self.log.info(
                "%s: %d instance types with capacity in no region, kept as sold out: %s",
                self.name,
                len(sold_out),
                ", ".join(sold_out),
            )
        # Capacity only outside the asked regions: no record, their offers there close.
        result.sold_out.update(nowhere)
        if nowhere:
            self.log.info(
                "%s: %d instance types without capacity in the asked regions, no record: %s",
                self.name,
                len(nowhere),
                ", ".join(nowhere),
            )

    def _read(self, instance_type: str, entry: Any, result: ParseResult) -> _Offer | None:
        """The offer of one entry, or None (logged and counted) when it cannot be stored."""
        try:
            offer = _offer(instance_type, entry)
        except _Skip as why:
            self.log.warning("%s: %s skipped: %s", self.name, instance_type, why)
            result.skipped_rows += 1
            result.unreadable.add(instance_type)  # unconfirmed, not withdrawn
            return None
        except _Unplaced as why:
            self.log.warning("%s: %s: %s; its prices are not stored", self.name, instance_type, why)
            result.unknown_instance_types.add(instance_type)
            return None
        if offer is None:
            return None
        said = _said(entry)
        contradiction = (
            gpus.contradiction(self.name, instance_type, said, "GB")
            if said is not None and gpus.known(said.gpu_model) and offer.source == "api"
            else None
        )
        if contradiction:
            self.log.warning(
                "%s: %s: %s; the API's facts are stored", self.name, instance_type, contradiction
            )
        elif not gpus.known(offer.gpu.gpu_model):
            self.log.warning(
                "%s: %s: GPU %r is not in the GPU table; stored under its own name",
                self.name,
                instance_type,
                entry["instance_type"].get("gpu_description"),
            )
        elif gpus.lookup(self.name, instance_type) is None:
            self.log.info(
                "%s: %s is not in the GPU table; placed from its description as %s x %s",
                self.name,
                instance_type,
                offer.gpu.gpu_count,
                offer.gpu.gpu_model,
            )
        return offer


def _data(payloads: Payloads) -> dict[str, Any]:
    body = payloads.get(PAYLOAD_KEY)
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        error = body["error"]
        raise PayloadShapeError(
            LambdaCollector.name,
            f"the answer is an error: {error.get('code')}: {error.get('message')}",
        )
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, dict):
        raise PayloadShapeError(LambdaCollector.name, f"{PAYLOAD_KEY}: answer has no data object")
    return data


def _offer(instance_type: str, entry: Any) -> _Offer | None:
    """Read one entry; None for a CPU-only type (cpu_4x_general), which is not a GPU offer."""
    if not isinstance(entry, dict) or not isinstance(entry.get("instance_type"), dict):
        raise _Skip("no instance_type object")
    described = entry["instance_type"]
    specs = described.get("specs")
    if not isinstance(specs, dict):
        raise _Skip("no specs object")
    count = specs.get("gpus")
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise _Skip(f"specs.gpus is {count!r}")
    if count == 0:
        return None
    price = _dollars(described.get("price_cents_per_hour"))
    regions = _regions(entry.get("regions_with_capacity_available"))
    resolved = _gpu(instance_type, _said(entry), described.get("gpu_description"))
    gpu = resolved.gpu  # the host size: the user's entry where it says one, else the API's
    host = (
        gpu.vcpus if gpu.vcpus is not None else kit.size(specs.get("vcpus")),
        gpu.memory_gib if gpu.memory_gib is not None else kit.size(specs.get("memory_gib")),
    )
    return _Offer(instance_type, price, gpu, resolved.source, host, regions)


def _dollars(cents: Any) -> Decimal:
    """Integer cents -> exact dollars: 3192 -> 31.920000."""
    if isinstance(cents, bool) or not isinstance(cents, int | float | Decimal):
        raise _Skip(f"price_cents_per_hour is {cents!r}")
    value = Decimal(str(cents))  # str(): a float's shortest repr, never its binary expansion
    if not value.is_finite() or value <= 0:
        raise _Skip(f"price_cents_per_hour is {cents!r}")  # never a zero or negative price
    return money(value / CENTS_PER_DOLLAR)


def _regions(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise _Skip(f"regions_with_capacity_available is {value!r}")
    names: list[str] = []
    for region in value:
        name = region.get("name") if isinstance(region, dict) else None
        if not isinstance(name, str) or not name:
            raise _Skip(f"region entry {region!r} has no name")
        if name not in names:
            names.append(name)
    return tuple(names)


def _said(entry: dict[str, Any]) -> gpus.InstanceGpu | None:
    """What the entry says of its GPUs: the model (None for a name the table does not know)
    and one GPU's memory from `gpu_description`, the count from `specs.gpus`; None when the
    description gives no memory."""
    described = entry["instance_type"]
    description = described.get("gpu_description")
    found = _GPU_DESCRIPTION.fullmatch(description) if isinstance(description, str) else None
    if found is None:
        return None
    model = gpus.stored_model(LambdaCollector.name, found["name"])
    specs = described["specs"]
    return gpus.InstanceGpu(
        model,
        specs["gpus"],
        float(found["memory"]),
        kit.size(specs.get("vcpus")),
        kit.size(specs.get("memory_gib")),
    )


def _gpu(instance_type: str, said: gpus.InstanceGpu | None, description: Any) -> gpus.Resolved:
    """The user's entry over what the API said over the table. A GPU name the spellings do not
    know, on a type the table knows with the same count and memory, takes the table's model:
    the type's history keeps its meaning when Lambda spells its GPU anew."""
    known = gpus.resolve(LambdaCollector.name, instance_type)
    if (
        said is not None
        and not gpus.known(said.gpu_model)
        and known is not None
        and (known.gpu.gpu_count, known.gpu.gpu_memory_gib) == (said.gpu_count, said.gpu_memory_gib)
    ):
        return known
    resolved = gpus.resolve(LambdaCollector.name, instance_type, said)
    if resolved is None:
        raise _Unplaced(f"gpu_description {description!r} not understood")
    return resolved


def _record(offer: _Offer, region: str | None) -> PriceRecord:
    # The API has no spot or reserved prices, and lists only regions with capacity: a record in
    # no region is the type sold out everywhere.
    priced = kit.Offer("on_demand", CURRENCY, offer.price)
    return kit.record(
        LambdaCollector.name,
        region,
        offer.instance_type,
        offer.gpu,
        priced,
        available=region is not None,
        host=offer.host,
    )
