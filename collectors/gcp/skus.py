"""Google Cloud: which Compute Engine SKU prices which part of a GPU machine, at what hourly rate.

The Cloud Billing catalog has no machine prices. It prices parts: a vCPU-hour and a GiB-hour of
each machine family's host, an hour of each GPU, a GiB-month of local SSD. `read_sku` reads one
SKU and says which part it prices, for which offer (on-demand, spot, 1- or 3-year commitment),
in which regions (its serviceRegions, never the place named in its description) and at what
rate per hour. Descriptions must equal a known one exactly, and the category must agree, so
the look-alike SKUs (A100 80GB vs 40GB, DWS, calendar mode, reservations, premiums, sole
tenancy, other families' commitments) feed nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from collectors import kit
from collectors.base import HOURS_PER_MONTH
from collectors.common import PriceKind

Offer = tuple[PriceKind, int | None]  # (price kind, term months)
ON_DEMAND: Offer = ("on_demand", None)
SPOT: Offer = ("spot", None)
COMMITMENTS: dict[str, Offer] = {"Commit1Yr": ("reserved", 12), "Commit3Yr": ("reserved", 36)}
OFFERS: tuple[Offer, ...] = (ON_DEMAND, SPOT, *COMMITMENTS.values())

# component, part, "<name> running in <geo>" (on-demand and spot), commitment name
# ("Commitment v1: <name> in <geo> for <n> Year"). The A3 Mega host is billed as "A3Plus";
# its GPU is "H100 80GB Plus" in the live catalog and "H100 80GB Mega" in older copies.
# Commitment names for A3/A3Plus/G2 hosts and local SSD follow the A2 ones ("A2 Cpu"): not
# verified live; when wrong they price nothing (no reserved price), never something else.
# N1, the oldest family, has the unqualified commitment names ("Commitment v1: Cpu in Americas
# for 1 Year"), and only its predefined shapes' rates: custom N1 shapes are billed apart.
# fmt: off
COMPONENTS: tuple[tuple[str, str, str, str], ...] = (
    ("a2-core",               "core", "A2 Instance Core",           "A2 Cpu"),
    ("a2-ram",                "ram",  "A2 Instance Ram",            "A2 Ram"),
    ("a3-core",               "core", "A3 Instance Core",           "A3 Cpu"),
    ("a3-ram",                "ram",  "A3 Instance Ram",            "A3 Ram"),
    ("a3plus-core",           "core", "A3Plus Instance Core",       "A3Plus Cpu"),
    ("a3plus-ram",            "ram",  "A3Plus Instance Ram",        "A3Plus Ram"),
    ("g2-core",               "core", "G2 Instance Core",           "G2 Cpu"),
    ("g2-ram",                "ram",  "G2 Instance Ram",            "G2 Ram"),
    ("n1-core",               "n1core", "N1 Predefined Instance Core", "Cpu"),
    ("n1-ram",                "n1ram",  "N1 Predefined Instance Ram",  "Ram"),
    ("nvidia-tesla-a100",     "gpu",  "Nvidia Tesla A100 GPU",      "Nvidia Tesla A100 GPU"),
    ("nvidia-a100-80gb",      "gpu",  "Nvidia Tesla A100 80GB GPU", "Nvidia Tesla A100 80GB GPU"),
    ("nvidia-h100-80gb",      "gpu",  "Nvidia H100 80GB GPU",       "Nvidia H100 80GB GPU"),
    ("nvidia-h100-mega-80gb", "gpu",  "Nvidia H100 80GB Plus GPU",  "Nvidia H100 80GB Plus GPU"),
    ("nvidia-h100-mega-80gb", "gpu",  "Nvidia H100 80GB Mega GPU",  "Nvidia H100 80GB Mega GPU"),
    ("nvidia-l4",             "gpu",  "Nvidia L4 GPU",              "Nvidia L4 GPU"),
    ("nvidia-tesla-t4",       "gpu",  "Nvidia Tesla T4 GPU",        "Nvidia Tesla T4 GPU"),
    ("nvidia-tesla-v100",     "gpu",  "Nvidia Tesla V100 GPU",      "Nvidia Tesla V100 GPU"),
    ("nvidia-tesla-p100",     "gpu",  "Nvidia Tesla P100 GPU",      "Nvidia Tesla P100 GPU"),
    ("nvidia-tesla-p4",       "gpu",  "Nvidia Tesla P4 GPU",        "Nvidia Tesla P4 GPU"),
    ("local-ssd",             "ssd",  "SSD backed Local Storage",   "Local SSD"),
)
# part -> (category.resourceFamily, category.resourceGroup, usageUnit -> hours in one unit).
# Local SSD is priced per GiB-month: a month is 730 h (docs/sql.md). Any other unit is refused.
# N1's hourly rates are filed under the group "N1Standard", its commitments under CPU and RAM.
PARTS: dict[str, tuple[str, str, dict[str, int]]] = {
    "core": ("Compute", "CPU", {"h": 1}),
    "ram":  ("Compute", "RAM", {"GiBy.h": 1}),
    "n1core": ("Compute", "N1Standard", {"h": 1}),
    "n1ram":  ("Compute", "N1Standard", {"GiBy.h": 1}),
    "gpu":  ("Compute", "GPU", {"h": 1}),
    "ssd":  ("Storage", "LocalSSD", {"GiBy.h": 1, "GiBy.mo": HOURS_PER_MONTH}),
}
# fmt: on
_COMMITTED_GROUP = {"n1core": "CPU", "n1ram": "RAM"}
_RUNNING = {name: (component, part) for component, part, name, _ in COMPONENTS}
_COMMITTED = {name: (component, part) for component, part, _, name in COMPONENTS}

# Spot is "Spot Preemptible <name> running in <geo>" or "<name> attached to Spot Preemptible
# VMs running in <geo>". Google files some of these (local SSD, some GPUs) under usageType
# OnDemand, so the words decide too: a spot SKU read as on-demand would undercut the real price.
# The place ends the description: capitalised words only ("Americas", "Northern Virginia",
# "Sao Paulo"), so a qualifier written after it ("... running in Americas on Sole Tenant
# Nodes", "... attached to Spot Preemptible VMs") makes the description unknown, not the place.
_GEO = r"(?P<geo>[A-Z][\w'.-]*(?: [A-Z][\w'.-]*)*)"
_RUNNING_FORM = re.compile(
    r"(?P<spot>Spot Preemptible )?(?P<name>.+?)(?P<attached> attached to Spot Preemptible VMs)?"
    rf" running in {_GEO}"
)
# "SSD backed Local Storage", "... in Paris", "... attached to Spot Preemptible VMs in Paris".
_SSD_FORM = re.compile(
    r"(?P<name>SSD backed Local Storage)(?P<attached> attached to Spot Preemptible VMs?)?"
    rf"(?: (?:running )?in {_GEO})?"
)
_COMMIT_FORM = re.compile(
    rf"Commitment v1: (?P<name>.+?) (?:running )?[Ii]n {_GEO} for (?P<years>\d+) Years?"
)
_SPOT_WORDS = "spot preemptible"
# SKUs of the families above that are another product: scheduling modes, reservations,
# surcharges, licensed workstations. Lower case, matched anywhere in the description.
OTHER_PRODUCTS = (
    "dws", "dynamic workload scheduler", "calendar mode", "flex", "reserved", "reservation",
    "sole tenancy", "sole tenant", "autopilot", "premium", "custom", "extended", "suspended",
    "virtual workstation", "confidential",
)  # fmt: skip
_NEVER = datetime.min.replace(tzinfo=UTC)
_RELATED = re.compile(
    r"(?:Spot Preemptible |Commitment v1: )?(?:A2|A3|A3Plus|G2|N1 Predefined) "
    r"|Commitment v1: (?:Cpu|Ram) "
)


@dataclass(frozen=True)
class SkuRate:
    """What one SKU prices: a component of machines, per unit-hour, in these regions."""

    component: str
    offer: Offer
    regions: tuple[str, ...]
    rate: Decimal  # per vCPU-hour, GiB-hour or GPU-hour
    currency: str
    sku_id: str


@dataclass(frozen=True)
class Skip:
    """A SKU of a GPU family that prices none of our components, and why."""

    reason: str
    oddity: bool = False  # not policy but a SKU we did not expect: worth a warning
    unknown_gpu: str | None = None  # a GPU the component table does not know


def read_sku(sku: dict[str, Any]) -> SkuRate | Skip | None:
    """The component this SKU prices, why it prices none, or None when it is not ours at all."""
    description, category = sku["description"], sku["category"]
    lowered = description.lower()
    related = category.get("resourceGroup") == "GPU" or _is_related(description)
    if not related:
        return None
    if any(word in lowered for word in OTHER_PRODUCTS):
        return Skip("other product")
    found = _component(description)
    if found is None:
        if category.get("resourceGroup") == "GPU":
            return Skip("unknown GPU", unknown_gpu=_product_name(description))
        return Skip("other product")
    component, part, spot_words, years = found
    offer = _offer(category.get("usageType"), spot_words, years)
    if isinstance(offer, Skip):
        return offer
    checked = _check_category(category, part, committed=years is not None) or _regions(sku)
    if isinstance(checked, Skip):
        return checked
    rate = _rate(sku, part)
    if isinstance(rate, Skip):
        return rate
    return SkuRate(component, offer, checked, rate[0], rate[1], str(sku.get("skuId", "?")))


def _is_related(description: str) -> bool:
    return (
        "Nvidia" in description
        or description.startswith(("SSD backed Local Storage", "Commitment v1: Local SSD "))
        or _RELATED.match(description) is not None
    )


def _component(description: str) -> tuple[str, str, bool, int | None] | None:
    """(component, part, spot wording, commitment years) when the description is a known one."""
    if commit := _COMMIT_FORM.fullmatch(description):
        known = _COMMITTED.get(commit["name"])
        return None if known is None else (*known, False, int(commit["years"]))
    form = _SSD_FORM.fullmatch(description) or _RUNNING_FORM.fullmatch(description)
    if form is None or form["name"] not in _RUNNING:
        return None
    # Spot wording anywhere counts: read as on-demand, a spot SKU would undercut the price.
    spot = bool(form.groupdict().get("spot") or form["attached"]) or (
        _SPOT_WORDS in description.lower()
    )
    return (*_RUNNING[form["name"]], spot, None)


def _offer(usage: Any, spot_words: bool, years: int | None) -> Offer | Skip:
    if not isinstance(usage, str):
        return Skip(f"usageType {str(usage)[:40]!r}", oddity=True)
    if usage in COMMITMENTS:
        offer = COMMITMENTS[usage]
        if years is None or spot_words:
            return Skip(f"usageType {usage} on a SKU that is not a commitment", oddity=True)
        if offer[1] != years * 12:
            return Skip(f"usageType {usage} on a {years}-year commitment", oddity=True)
        return offer
    if years is not None:
        if usage in ("OnDemand", "Preemptible"):
            return Skip(f"usageType {usage} on a commitment", oddity=True)
        return Skip("other commitment")  # 1-month, 5-year, flexible: not a term we store
    if usage == "Preemptible" or (usage == "OnDemand" and spot_words):
        return SPOT
    if usage == "OnDemand":
        return ON_DEMAND
    return Skip(f"usageType {usage!r}", oddity=True)


def _check_category(category: dict[str, Any], part: str, *, committed: bool) -> Skip | None:
    family, group, _ = PARTS[part]
    if committed:
        group = _COMMITTED_GROUP.get(part, group)
    have = (category.get("resourceFamily"), category.get("resourceGroup"))
    if have != (family, group):
        return Skip(f"category {have[0]}/{have[1]} is not {family}/{group}", oddity=True)
    return None


def _regions(sku: dict[str, Any]) -> tuple[str, ...] | Skip:
    regions = sku.get("serviceRegions")
    if (
        not regions
        or not isinstance(regions, list)
        or not all(isinstance(r, str) and r for r in regions)
    ):
        return Skip("no serviceRegions", oddity=True)
    return tuple(regions)


def _rate(sku: dict[str, Any], part: str) -> tuple[Decimal, str] | Skip:
    """The price per unit-hour of the SKU's current pricing, from its tier starting at 0."""
    infos = sku.get("pricingInfo")
    if not isinstance(infos, list) or not infos or not all(isinstance(i, dict) for i in infos):
        return Skip("no pricingInfo", oddity=True)
    # With startTime/endTime the catalog gives a history: the latest entry is in force.
    info = max(infos, key=lambda i: _when(i.get("effectiveTime")))
    expression = kit.obj(info.get("pricingExpression"))
    unit = expression.get("usageUnit")
    hours = PARTS[part][2].get(unit) if isinstance(unit, str) else None
    if hours is None:
        return Skip(f"usageUnit {unit!r} for a {part} price", oddity=True)
    # Tiers are by usage in the month; the tier from 0 is the list price of the first hour.
    # A later tier is a volume discount, and a 0 price in the first tier a free allowance:
    # neither is the price of this part.
    rates = expression.get("tieredRates")
    tiers = [t for t in rates if _start(t) == 0] if isinstance(rates, list) else []
    if len(tiers) != 1:
        return Skip(f"{len(tiers)} tiers start at 0", oddity=True)
    amount = _money(tiers[0].get("unitPrice"))
    if amount is None or amount[0] <= 0:
        return Skip("no price or a price <= 0", oddity=True)
    return amount[0] / hours, amount[1]


def _money(price: Any) -> tuple[Decimal, str] | None:
    """google.type.Money: units (an int64, a string in JSON) + nanos / 1e9, exactly."""
    if not isinstance(price, dict) or not isinstance(price.get("currencyCode"), str):
        return None
    units, nanos = price.get("units", 0), price.get("nanos", 0)
    if isinstance(units, str) and re.fullmatch(r"-?\d+", units):
        units = int(units)
    if type(units) is not int or type(nanos) is not int or abs(nanos) > 999_999_999:
        return None
    if units * nanos < 0:  # the two carry one sign
        return None
    return Decimal(units) + Decimal(nanos).scaleb(-9), price["currencyCode"]


def _start(tier: Any) -> Decimal | None:
    value = tier.get("startUsageAmount", 0) if isinstance(tier, dict) else None
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        return None
    return Decimal(str(value))


def _when(stamp: Any) -> datetime:
    try:
        when = datetime.fromisoformat(str(stamp))
    except ValueError:
        return _NEVER
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def _product_name(description: str) -> str:
    """ "Spot Preemptible Nvidia H200 141GB GPU running in Americas" -> "Nvidia H200 141GB GPU"."""
    if commit := _COMMIT_FORM.fullmatch(description):
        return commit["name"]
    if form := _RUNNING_FORM.fullmatch(description):
        return form["name"]
    return description
