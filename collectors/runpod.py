"""RunPod: GPU pods by the GPU, in Secure Cloud and Community Cloud, on-demand and spot.

`fetch` makes one GraphQL call, `POST {endpoint}/graphql`, for `gpuTypes` with the key in
`RUNPOD_API_KEY` as a Bearer token (whether prices need one is not documented: the key is asked
for, as docs/sql.md says). Prices are per GPU-hour and name no region, so `parse` makes per GPU
type and cloud (`secure/<id>`, `community/<id>`) a record of one GPU with region NULL: on-demand
from `securePrice` / `communityPrice`, spot (interruptible pods) from `secureSpotPrice` /
`communitySpotPrice`. A zero price, or a cloud the type is not sold in, means no record;
`available` is whether the cloud has stock of one GPU of the type now (`lowestPrice`'s
`stockStatus`, null when none).
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any, ClassVar

from collectors import gpus, kit
from collectors.base import ParseResult, Payloads, PriceRecord, money
from collectors.common import PayloadShapeError, PriceKind
from collectors.http import OneAnswer

DEFAULT_ENDPOINT = "https://api.runpod.io"
PATH = "/graphql"
PAYLOAD_KEY = "gpuTypes"
CREDENTIAL = "RUNPOD_API_KEY"
AUTH_HINT = (
    f"check the API key in {CREDENTIAL}, or in the variable providers.runpod.api_key_env names"
)
CURRENCY = "USD"
# One lowestPrice per cloud (GraphQL aliases), for one GPU: its stockStatus says whether that
# cloud can start a pod of the type now.
QUERY = """query GpuTypes {
  gpuTypes {
    id displayName manufacturer memoryInGb
    secureCloud communityCloud securePrice communityPrice secureSpotPrice communitySpotPrice
    secureStock: lowestPrice(input: {gpuCount: 1, secureCloud: true}) { stockStatus }
    communityStock: lowestPrice(input: {gpuCount: 1, secureCloud: false}) { stockStatus }
  }
}"""
# (cloud, whether it sells the type, on-demand price, spot price, its stock)
CLOUDS = (
    ("secure", "secureCloud", "securePrice", "secureSpotPrice", "secureStock"),
    ("community", "communityCloud", "communityPrice", "communitySpotPrice", "communityStock"),
)
NOT_A_GPU = "unknown"  # the list holds a type of this id, which is no GPU anyone rents


class _Skip(Exception):
    """A GPU type the parser cannot read: logged, counted in skipped_rows."""


class RunpodCollector(OneAnswer):
    """RunPod's GPU types: per cloud, the price of one GPU on-demand and interruptible."""

    name = "runpod"
    default_endpoint: ClassVar[str] = DEFAULT_ENDPOINT
    path = PATH
    payload_key = PAYLOAD_KEY
    credential_variable = CREDENTIAL
    what = "GPU types"
    auth_hint = AUTH_HINT
    query = QUERY

    def rows(self, payloads: Payloads) -> list[Any]:
        return gpu_types(payloads)

    @property
    def regions(self) -> tuple[str, ...]:
        """None: the prices name no region, so every collection covers all of them (a
        configured `regions` would filter nothing)."""
        return ()

    def parse(self, payloads: Payloads, *, observed_at: datetime) -> ParseResult:
        types = gpu_types(payloads)
        result = ParseResult()
        for entry in types:
            try:
                records = _records(entry)
            except _Skip as why:
                ident = kit.obj(entry).get("id")
                self.log.warning("%s: GPU type %r skipped: %s", self.name, str(ident)[:60], why)
                result.skipped_rows += 1
                if isinstance(ident, str) and len(ident) <= 100:  # unconfirmed, not withdrawn
                    result.unreadable.update(f"{cloud[0]}/{ident}" for cloud in CLOUDS)
                continue
            result.records.extend(record for record, _ in records)
            result.facts.update((r.instance_type, source) for r, source in records)
        if types and result.skipped_rows == len(types):
            raise PayloadShapeError(
                self.name, f"none of the {len(types)} GPU types could be read: changed shape?"
            )
        return result


def gpu_types(payloads: Payloads) -> list[Any]:
    """The answer's GPU types; a GraphQL error or a changed shape raises PayloadShapeError."""
    body = kit.obj(payloads.get(PAYLOAD_KEY))
    found = kit.obj(body.get("data")).get("gpuTypes")
    if isinstance(found, list):
        return found
    errors = body.get("errors")
    if isinstance(errors, list) and errors:
        message = kit.obj(errors[0]).get("message")
        raise PayloadShapeError(
            RunpodCollector.name, f"the answer is an error: {repr(message)[:200]}"
        )
    raise PayloadShapeError(RunpodCollector.name, f"{PAYLOAD_KEY}: answer has no data.gpuTypes")


def _records(entry: Any) -> list[tuple[PriceRecord, str]]:
    """The type's records per cloud, each with where its GPU facts came from."""
    row = kit.obj(entry)
    ident = row.get("id")
    if not isinstance(ident, str) or not ident.strip() or len(ident) > 100:
        raise _Skip("no id")
    if ident == NOT_A_GPU:
        return []
    said = _gpu(row)
    records = []
    for cloud, sold, on_demand, spot, stock in CLOUDS:
        if row.get(sold) is not True:
            continue  # not offered in this cloud: its prices, if any, are no offer
        available = _available(row, stock)
        instance_type = f"{cloud}/{ident}"
        # The answer's own facts; a user's [gpus.instance_types."<cloud>/<id>"] entry over them.
        found = gpus.resolve(RunpodCollector.name, instance_type, said)
        gpu, source = (said, "api") if found is None else (found.gpu, found.source)
        kinds: tuple[tuple[PriceKind, str], ...] = (("on_demand", on_demand), ("spot", spot))
        for kind, field in kinds:
            price = _price(row.get(field))
            if price is not None:
                offer = kit.Offer(kind, CURRENCY, price)
                record = kit.record(
                    RunpodCollector.name, None, instance_type, gpu, offer, available=available
                )
                records.append((record, source))
    return records


def _gpu(row: dict[str, Any]) -> gpus.InstanceGpu:
    """One GPU: the model from `displayName`, its memory from `memoryInGb` (one GPU's)."""
    memory = kit.size(row.get("memoryInGb"))
    if memory is None:
        raise _Skip(f"memoryInGb is {str(row.get('memoryInGb'))[:40]!r}")
    name: Any = row.get("displayName")  # anything, in a hostile answer: no model then
    model = gpus.stored_model(RunpodCollector.name, name)
    return gpus.InstanceGpu(model, 1, memory)


def _price(value: Any) -> Decimal | None:
    """A per-GPU hourly price; 0 (or none) means not offered: no record, never a zero price."""
    number = kit.exact(value)
    return money(number) if number is not None and number > 0 else None


def _available(row: dict[str, Any], key: str) -> bool | None:
    """Stock of one GPU now: a status ("High", "Medium", "Low") is some; a null status, or no
    lowest price at all, is none; None where the answer does not say."""
    if key not in row:
        return None
    stock = row[key]
    if stock is None:
        return False
    if not isinstance(stock, dict) or "stockStatus" not in stock:
        return None
    return stock["stockStatus"] is not None
