"""Oracle Cloud's two public documents to price records: pure, no I/O.

The price list prices part numbers ("B98415": "GPU Per Hour", 10 USD), the Cost Estimator's
shapes say which part a shape is billed by and how many GPUs it has. A GPU shape's hourly
price is its GPU part's price x its GPU count: the product's `qty` (112 for BM.GPU.H100.8) is
the shape's OCPU count and never a multiplier. Spot is half of it (Oracle: "Preemptible
capacity costs 50% less than on-demand capacity"), for shapes with `allowPreemptible` only.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from collectors import gpus, kit
from collectors.base import ParseResult, Payloads, PriceRecord, money
from collectors.common import PayloadShapeError

PROVIDER = "oci"
PRICES = "prices"  # payload keys: "prices/page-<n>" and "shapes"
SHAPES = "shapes"
CURRENCY = "USD"
PAY_AS_YOU_GO = "PAY_AS_YOU_GO"  # other price models are not list prices per hour
SPOT_SHARE = Decimal("0.5")  # docs.oracle.com .../Compute/Concepts/preemptible.htm
# A x86 OCPU is one physical core, two vCPUs. `processorType` is unreliable on GPU shapes
# (gpuhunt: the A10 and A100 shapes are said to be ARM, and are not), so it is not read.
VCPUS_PER_OCPU = 2
# Display suffixes the estimator puts after a shape's name: "BM.GPU.GB200.4 (NVL72)".
_SUFFIX = re.compile(r"\s*\(.*\)\s*$")
_SHAPE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9.\-]{0,80}")

Log = logging.LoggerAdapter[Any]


class _Skip(Exception):
    """A shape the parser cannot price: logged, counted in skipped_rows, not stored."""


class _Unplaced(Exception):
    """A GPU shape whose GPU cannot be placed: reported in unknown_instance_types."""


@dataclass(frozen=True)
class _Shape:
    name: str
    per_gpu: Decimal  # the GPU part's price per GPU-hour
    gpu: gpus.InstanceGpu
    source: str  # where the GPU facts came from: "api", "table" or "config"
    host: kit.Host
    preemptible: bool
    note: str | None = None  # the estimator contradicting the GPU table, in words


def items(payloads: Payloads, key: str) -> list[Any]:
    """The `items` of one answer; a changed overall shape fails the run loudly."""
    body = payloads.get(key)
    found = body.get("items") if isinstance(body, dict) else None
    if not isinstance(found, list):
        raise PayloadShapeError(PROVIDER, f"{key}: answer has no items list")
    return found


def parse(payloads: Payloads, regions: tuple[str, ...], log: Log) -> ParseResult:
    """One on-demand record per GPU shape on sale per region, and one spot where preemptible."""
    keys = sorted((k for k in payloads if k.startswith(f"{PRICES}/")), key=_page_number)
    if not keys:
        raise PayloadShapeError(PROVIDER, "no price list in the answers")
    parts: dict[str, Decimal | str] = {}
    for key in keys:
        parts.update(_parts(items(payloads, key)))
    result = ParseResult()
    seen: set[str] = set()
    unknown: list[str] = []
    examined = 0
    for index, raw in enumerate(items(payloads, SHAPES)):
        if not _is_gpu_shape(raw) or not _on_sale(raw):
            continue
        examined += 1
        shape = _read(index, raw, parts, result, log)
        if shape is None:
            continue
        if shape.name in seen:
            log.warning("%s: shape %s listed twice; the second skipped", PROVIDER, shape.name)
            result.skipped_rows += 1
            continue
        seen.add(shape.name)
        if not gpus.known(shape.gpu.gpu_model):
            unknown.append(shape.name)
        result.records.extend(rec for region in regions for rec in _records(shape, region))
        result.facts[shape.name] = shape.source
    if examined and result.skipped_rows == examined:
        raise PayloadShapeError(
            PROVIDER, f"none of the {examined} GPU shapes could be priced: changed shape?"
        )
    if unknown:  # the run summary names them by itself
        log.warning(
            "%s: GPU not in the GPU table, stored under the shape's name for it: %s",
            PROVIDER,
            ", ".join(unknown),
        )
    return result


def _page_number(key: str) -> int:
    number = key.rpartition("page-")[2]
    if not number.isdigit():
        raise PayloadShapeError(PROVIDER, f"unexpected payload key {key!r}")
    return int(number)


def _parts(entries: list[Any]) -> dict[str, Decimal | str]:
    """Part number -> its USD pay-as-you-go price per metric unit, or why there is none."""
    found: dict[str, Decimal | str] = {}
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("partNumber"), str):
            continue  # a part without a number prices no shape
        metric = entry.get("metricName")
        if not isinstance(metric, str) or "GPU" not in metric.upper():
            found[entry["partNumber"]] = f"billed by {_short(metric)}, not per GPU"
            continue
        found[entry["partNumber"]] = _usd_price(entry.get("currencyCodeLocalizations"))
    return found


def _usd_price(localizations: Any) -> Decimal | str:
    """The USD entry's one pay-as-you-go price, chosen by currency code (never the first)."""
    usd = [
        loc
        for loc in (localizations if isinstance(localizations, list) else [])
        if isinstance(loc, dict) and loc.get("currencyCode") == CURRENCY
    ]
    if len(usd) != 1 or not isinstance(usd[0].get("prices"), list):
        return "no USD price"
    payg = [p for p in usd[0]["prices"] if isinstance(p, dict) and p.get("model") == PAY_AS_YOU_GO]
    if len(payg) != 1:
        return f"{len(payg)} pay-as-you-go prices (tiered or none), no one hourly price"
    value = kit.exact(payg[0].get("value"))
    if value is None or value <= 0:
        return f"price {_short(payg[0].get('value'))}"  # never a zero or negative price
    return value


def _is_gpu_shape(raw: Any) -> bool:
    if not isinstance(raw, dict):
        return True  # not understood: examined, so that it is counted as skipped
    sub = kit.obj(raw.get("subType")).get("value")
    return sub == "gpu" or ("gpuQty" in raw and raw["gpuQty"] not in (0, None))


def _on_sale(raw: Any) -> bool:
    """Hidden shapes and those not ACTIVE are listed but not for sale (both peers skip them)."""
    return not isinstance(raw, dict) or (
        raw.get("hidden") is not True and raw.get("status") in (None, "ACTIVE")
    )


def _read(
    index: int, raw: Any, parts: dict[str, Decimal | str], result: ParseResult, log: Log
) -> _Shape | None:
    name = _name(raw.get("name")) if isinstance(raw, dict) else None
    where = name or f"shape {index}"
    try:
        if name is None:
            raise _Skip("no shape name")
        shape = _shape(name, raw, parts)
        if shape.note:
            log.warning("%s: %s: %s", PROVIDER, name, shape.note)
        return shape
    except _Skip as why:
        log.warning("%s: %s skipped: %s", PROVIDER, where, why)
        result.skipped_rows += 1
        if name is not None:
            result.unreadable.add(name)  # unconfirmed, not withdrawn
    except _Unplaced as why:
        log.warning("%s: %s: %s; its prices are not stored", PROVIDER, where, why)
        result.unknown_instance_types.add(where)
    return None


def _name(value: Any) -> str | None:
    """The shape's name without display suffixes; None where it is not a shape name."""
    if not isinstance(value, str):
        return None
    name = _SUFFIX.sub("", value).strip()
    return name if _SHAPE_NAME.fullmatch(name) else None


def _shape(name: str, raw: dict[str, Any], parts: dict[str, Decimal | str]) -> _Shape:
    product, per_gpu = _gpu_part(raw.get("products"), parts)
    count = kit.exact(raw.get("gpuQty"))
    if count is None or count <= 0 or count != count.to_integral_value() or count > 64:
        raise _Skip(f"gpuQty is {_short(raw.get('gpuQty'))}")
    found, note = _gpu(name, int(count), raw.get("gpuMemoryQty"))
    gpu = found.gpu  # the host size: the user's entry where it says one, else the estimator's
    ocpus = kit.size(product.get("qty"))
    host = (
        gpu.vcpus if gpu.vcpus is not None else None if ocpus is None else ocpus * VCPUS_PER_OCPU,
        gpu.memory_gib if gpu.memory_gib is not None else kit.size(raw.get("bundleMemoryQty")),
    )
    preemptible = raw.get("allowPreemptible") is True
    return _Shape(name, per_gpu, gpu, found.source, host, preemptible, note)


def _gpu_part(products: Any, parts: dict[str, Decimal | str]) -> tuple[dict[str, Any], Decimal]:
    """The one product billed per GPU-hour, and its price."""
    listed = [p for p in (products if isinstance(products, list) else []) if isinstance(p, dict)]
    if not listed:
        raise _Skip(f"products is {_short(products)}")
    numbered = [p for p in listed if isinstance(p.get("partNumber"), str)]
    known = [(p, parts[p["partNumber"]]) for p in numbered if p["partNumber"] in parts]
    priced = [(p, price) for p, price in known if isinstance(price, Decimal)]
    if len(priced) == 1:
        return priced[0]
    if len(priced) > 1:
        raise _Skip(f"{len(priced)} parts billed per GPU")
    if known:  # the parts are in the list, but none priced per GPU: never x OCPUs
        raise _Skip("; ".join(f"part {p['partNumber']}: {why}" for p, why in known))
    numbers = ", ".join(_short(p.get("partNumber")) for p in listed)
    raise _Skip(f"no price for its part number {numbers}")


def _gpu(name: str, count: int, memory: Any) -> tuple[gpus.Resolved, str | None]:
    """The estimator's count (the price is per GPU x this count), the model from the shape's
    name, the per-GPU memory from `gpuMemoryQty`: the shape's total for most shapes, per GPU for
    some, so where the GPU table knows the shape its entry decides the reading (and stands in
    for a memory that fits neither: the estimator's is known to be wrong for some shapes). With
    what the estimator contradicts in the table, in words."""
    # "BM.GPU.H100.8" names its GPU after "GPU."; the older "VM.GPU3.1" in the family.
    tokens = name.split(".")
    token = tokens[2] if len(tokens) > 3 and tokens[1] == "GPU" else tokens[1:2] or [""]
    # A GPU the table does not know keeps the shape's own name for it ("BM.GPU.X9.8": X9).
    named = token[0] if isinstance(token, list) else token
    model = gpus.canonical_model(PROVIDER, named)
    if model is None and isinstance(token, str):
        model = gpus.stored_model(PROVIDER, named)
    stated = kit.size(memory)
    known = gpus.bundled(PROVIDER, name)
    if known is None:
        # A GPU the table does not know is still stored, its count being known
        # (docs/sql.md); its memory by the estimator's usual rule, the shape's total.
        said = None if stated is None else gpus.InstanceGpu(model, count, stated / count)
        found = gpus.resolve(PROVIDER, name, said)
        if found is None:
            raise _Unplaced(f"gpuMemoryQty is {_short(memory)}")
        return found, None
    per_gpu, note = known.gpu_memory_gib, None
    if (known.gpu_model, known.gpu_count) != (model or known.gpu_model, count) or stated not in (
        per_gpu * count,
        per_gpu,
    ):
        note = (
            f"the estimator says {count} x {model} {_short(memory)} GB, the GPU table "
            f"{known.gpu_count:g} x {known.gpu_model} {per_gpu:g} GB each; stored as "
            f"{count} x {known.gpu_model} {per_gpu:g} GB"
        )
    found = gpus.resolve(PROVIDER, name, gpus.InstanceGpu(known.gpu_model, count, per_gpu))
    assert found is not None  # a count and a memory were given
    return gpus.Resolved(found.gpu, "table" if found.source == "api" else found.source), note


def _records(shape: _Shape, region: str) -> list[PriceRecord]:
    hourly = shape.per_gpu * Decimal(int(shape.gpu.gpu_count))
    offers = [kit.Offer("on_demand", CURRENCY, money(hourly))]
    if shape.preemptible:
        offers.append(kit.Offer("spot", CURRENCY, money(hourly * SPOT_SHARE)))
    # The documents say nothing about capacity: available stays None.
    return [
        kit.record(PROVIDER, region, shape.name, shape.gpu, offer, host=shape.host)
        for offer in offers
    ]


def _short(value: Any) -> str:
    """A value for a log line: a hostile answer may put a megabyte where a number goes."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
