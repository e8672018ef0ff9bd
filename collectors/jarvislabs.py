"""JarvisLabs.ai: on-demand and spot GPU prices per region, and the free GPUs of each.

`fetch` makes one call, `GET {endpoint}/misc/server_meta` with the key in `JL_API_KEY` as a
Bearer token; the production host answers for every region (india-01, india-noida-01,
europe-01). The answer's `server_meta` has one row per GPU type and region: `price_per_hour`
and `spot_price` are USD per GPU-hour, `num_gpus` the most GPUs one instance can have,
`vram` one GPU's memory, `cpus_per_gpu` and `ram_per_gpu` the host's share per GPU. `cpu_meta`
(CPU-only offers) is ignored. `parse` makes, per row, one offer per GPU count 1..num_gpus, named
`<gpu_type>-<n>x` ("H100-8x"; `-vm` added for a `workload_type` "vm" row, a separate offer):
on-demand n x price_per_hour, spot n x spot_price where it is not null. `available` is whether
the region has n free GPUs now (`effective_num_free_devices`, spot: `spot_num_free_devices`):
a type with none free is sold out there and keeps its list price with available = false.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, ClassVar

from collectors import gpus, kit
from collectors.base import ParseResult, Payloads, PriceRecord, money
from collectors.common import PayloadShapeError
from collectors.http import OneAnswer

DEFAULT_ENDPOINT = "https://backendprod.jarvislabs.net"
PATH = "/misc/server_meta"
PAYLOAD_KEY = "server_meta"
CREDENTIAL = "JL_API_KEY"
AUTH_HINT = (
    f"check the API key in {CREDENTIAL}, or in the variable providers.jarvislabs.api_key_env names"
)
CURRENCY = "USD"
# No JarvisLabs instance has more GPUs; a larger num_gpus is a broken row, not 10**9 offers.
MOST_GPUS = 16


class _Skip(Exception):
    """A row the parser cannot read: logged, counted in skipped_rows."""


@dataclass(frozen=True)
class _Row:
    gpu_type: str
    region: str
    suffix: str  # "-vm" for a VM row, else ""
    most: int
    on_demand: Decimal
    spot: Decimal | None
    free: int | None
    spot_free: int | None
    said: gpus.InstanceGpu | None  # one GPU, as the row says it; None: no memory known
    told: bool  # whether the row gave the memory (`vram`), else the GPU table's only variant
    host: tuple[float | None, float | None]  # per GPU

    def instance_type(self, count: int) -> str:
        return f"{self.gpu_type}-{count}x{self.suffix}"


class JarvislabsCollector(OneAnswer):
    """JarvisLabs' GPU types: every region server_meta lists, or the configured ones."""

    name = "jarvislabs"
    default_endpoint: ClassVar[str] = DEFAULT_ENDPOINT
    path = PATH
    payload_key = PAYLOAD_KEY
    credential_variable = CREDENTIAL
    what = "server meta"
    auth_hint = AUTH_HINT

    def rows(self, payloads: Payloads) -> list[Any]:
        return _rows(payloads)

    def parse(self, payloads: Payloads, *, observed_at: datetime) -> ParseResult:
        rows = _rows(payloads)
        result = ParseResult()
        asked = frozenset(self.regions)
        for entry in rows:
            try:
                row = _row(entry)
            except _Skip as why:
                gpu_type = str(kit.obj(entry).get("gpu_type"))[:60]
                self.log.warning("%s: %s skipped: %s", self.name, gpu_type, why)
                result.skipped_rows += 1
                result.unreadable.update(_types_of(entry))  # unconfirmed, not withdrawn
                continue
            if not asked or row.region in asked:
                self._offers(row, result)
        if rows and result.skipped_rows == len(rows):
            raise PayloadShapeError(
                self.name, f"none of the {len(rows)} GPU rows could be read: changed shape?"
            )
        return result

    def _offers(self, row: _Row, result: ParseResult) -> None:
        """Records of every GPU count of `row`, or its types reported when no one knows its GPU."""
        if row.said is not None and not gpus.known(row.said.gpu_model):
            self.log.warning(
                "%s: %s: GPU not in the GPU table; stored under its own name",
                self.name,
                row.gpu_type,
            )
        for count in range(1, row.most + 1):
            instance_type = row.instance_type(count)
            said = None if row.said is None else _times(row.said, count)
            found = gpus.resolve(self.name, instance_type, said)
            if found is None:
                self.log.warning("%s: %s: no GPU memory known", self.name, instance_type)
                result.unknown_instance_types.add(instance_type)
                continue
            result.records.extend(_records(row, count, found.gpu))
            told = row.told or found.source == "config"
            result.facts[instance_type] = found.source if told else "table"


def _rows(payloads: Payloads) -> list[Any]:
    body = kit.obj(payloads.get(PAYLOAD_KEY))
    rows = body.get(PAYLOAD_KEY)
    if not isinstance(rows, list):
        raise PayloadShapeError(JarvislabsCollector.name, f"{PAYLOAD_KEY}: answer has no list")
    return rows


def _row(entry: Any) -> _Row:
    row = kit.obj(entry)
    gpu_type, region = row.get("gpu_type"), row.get("region")
    if not isinstance(gpu_type, str) or not gpu_type or len(gpu_type) > 60:
        raise _Skip("no gpu_type")
    if gpu_type != gpu_type.strip() or any(c.isspace() for c in gpu_type):
        raise _Skip("a GPU name with spaces is ambiguous")  # "RTX 6000": Ada or Turing?
    if not isinstance(region, str) or not region or len(region) > 60:
        raise _Skip(f"region is {str(region)[:40]!r}")
    most = kit.count(row.get("num_gpus"))
    if most is None or most < 1 or most > MOST_GPUS:
        raise _Skip(f"num_gpus is {str(row.get('num_gpus'))[:40]!r}")
    on_demand = _price(row.get("price_per_hour"))
    if on_demand is None:
        raise _Skip(f"price_per_hour is {str(row.get('price_per_hour'))[:40]!r}")
    model = gpus.stored_model(JarvislabsCollector.name, gpu_type)
    memory = kit.size(row.get("vram")) or gpus.only_memory(model)
    host = (kit.size(row.get("cpus_per_gpu")), kit.size(row.get("ram_per_gpu")))
    free = row.get("effective_num_free_devices", row.get("num_free_devices"))
    return _Row(
        gpu_type,
        region,
        "-vm" if row.get("workload_type") == "vm" else "",
        most,
        on_demand,
        _price(row.get("spot_price")),  # null: no spot, never the on-demand price instead
        kit.count(free),
        kit.count(row.get("spot_num_free_devices")),
        None if memory is None else gpus.InstanceGpu(model, 1, memory, *host),
        kit.size(row.get("vram")) is not None,
        host,
    )


def _types_of(entry: Any) -> set[str]:
    """The instance types an unreadable row stands for, where its name and count are readable."""
    row = kit.obj(entry)
    gpu_type, most = row.get("gpu_type"), kit.count(row.get("num_gpus"))
    if not isinstance(gpu_type, str) or most is None or not 0 < most <= MOST_GPUS:
        return set()
    if not gpu_type or any(c.isspace() for c in gpu_type) or len(gpu_type) > 60:
        return set()
    suffix = "-vm" if row.get("workload_type") == "vm" else ""
    return {f"{gpu_type}-{n}x{suffix}" for n in range(1, most + 1)}


def _times(one: gpus.InstanceGpu, count: int) -> gpus.InstanceGpu:
    """`count` of the GPU `one` describes, with the host grown with them."""
    vcpus = None if one.vcpus is None else one.vcpus * count
    memory = None if one.memory_gib is None else one.memory_gib * count
    return gpus.InstanceGpu(one.gpu_model, count, one.gpu_memory_gib, vcpus, memory)


def _records(row: _Row, count: int, gpu: gpus.InstanceGpu) -> list[PriceRecord]:
    # Prices are per GPU-hour: an instance of `count` GPUs costs count x the price.
    offers = [(kit.Offer("on_demand", CURRENCY, money(row.on_demand * count)), row.free)]
    if row.spot is not None:
        offers.append((kit.Offer("spot", CURRENCY, money(row.spot * count)), row.spot_free))
    return [
        kit.record(
            JarvislabsCollector.name,
            row.region,
            row.instance_type(count),
            gpu,
            offer,
            available=None if free is None else free >= count,
        )
        for offer, free in offers
    ]


def _price(value: Any) -> Decimal | None:
    """A positive per-GPU price as exact money, else None (no zero prices)."""
    number = kit.exact(value)
    return money(number) if number is not None and number > 0 else None
