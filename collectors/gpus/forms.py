"""Form factors: one GPU model sold as boards of different power and clocks (the H100 SXM's 989.4
dense FP16 TFLOPS, the PCIe card's 756, the NVL's 835.5), and the rules that read which one an
instance type has from its name.

A model's `[models.<name>.form_factors.<SXM|PCIe|NVL>]` entries give each board's figures. The
rules (`[form_factors.<provider>]` of the table: a regular expression over the instance type ->
the form factor) say which board a type has, where the provider's own type or GPU name says it
(`gpu_1x_h100_pcie`, Vast.ai's "1x H100 SXM", AWS p5). Where no rule matches, the model's
lowest figures apply: the tracker never overstates compute (docs/gpus.md, "Form factors").

The expressions are read by Python here and by DuckDB in the store's views (RE2): they keep to
what both read alike (`^ $ . \\d [] | (?i) (?:)`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from collectors.common import ConfigError, no_unknown, shown, text
from collectors.gpus.values import number, table

# The boards the table tells apart: SXM (SXM2 to SXM6 modules on an HGX board), a PCIe card, and
# the NVL (a pair of PCIe cards bridged by NVLink, with its own clocks and memory).
FORM_FACTORS = ("SXM", "PCIe", "NVL")
# A key of [form_factors] whose rules apply to every provider: the form factor spelled out.
ANY_PROVIDER = "*"
_KEYS = {"fp16_tflops", "fp32_tflops", "source"}
_TFLOPS = (0.1, 1_000_000.0)


@dataclass(frozen=True, slots=True)
class FormFactor:
    """One board of a model with figures of its own (dense FP16/BF16 tensor, FP32 vector)."""

    name: str
    fp16_tflops: float | None = None
    fp32_tflops: float | None = None
    source: str | None = None


@dataclass(frozen=True, slots=True)
class FormRule:
    """An instance type of `provider` (None: any) whose name matches `pattern` has `form_factor`."""

    provider: str | None
    pattern: str
    form_factor: str


def parse_forms(raw: Any, prefix: str, base: Iterable[FormFactor] = ()) -> tuple[FormFactor, ...]:
    """A model's [..form_factors] table; with `base` (the bundled entries a user corrects), the
    keys not given keep the base's values."""
    forms = {f.name: f for f in base}
    for name, entry in table(raw, prefix.rstrip(".")).items():
        where = f"{prefix}{name}."
        form_factor(name, where.rstrip("."))
        entry = table(entry, where.rstrip("."))
        no_unknown(entry, _KEYS, where)
        old = forms.get(name, FormFactor(name))
        forms[name] = FormFactor(
            name,
            number(entry["fp16_tflops"], where + "fp16_tflops", _TFLOPS)
            if "fp16_tflops" in entry
            else old.fp16_tflops,
            number(entry["fp32_tflops"], where + "fp32_tflops", _TFLOPS)
            if "fp32_tflops" in entry
            else old.fp32_tflops,
            text(entry["source"], where + "source") if "source" in entry else old.source,
        )
    return tuple(forms[n] for n in FORM_FACTORS if n in forms)


def form_factor(value: Any, key: str) -> str:
    """A form factor's name, one of FORM_FACTORS, else a ConfigError naming `key`."""
    if value not in FORM_FACTORS:
        raise ConfigError(f"{key}: expected one of {', '.join(FORM_FACTORS)}, got {shown(value)}")
    return str(value)


def parse_rules(raw: Mapping[str, Any], prefix: str = "form_factors.") -> tuple[FormRule, ...]:
    """The [form_factors] tables, in the order they apply: each provider's own rules (in the
    file's order), then the ones for any provider."""
    rules: list[FormRule] = []
    for provider, entries in table(raw, prefix.rstrip(".")).items():
        for pattern, value in table(entries, prefix + provider).items():
            where = f'{prefix}{provider}."{pattern}"'
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ConfigError(f"{where}: not a regular expression: {exc}") from None
            who = None if provider == ANY_PROVIDER else provider
            rules.append(FormRule(who, pattern, form_factor(value, where)))
    return tuple(sorted(rules, key=lambda r: r.provider is None))  # stable: file order kept


def own_rules(entries: Mapping[str, Any]) -> tuple[FormRule, ...]:
    """The rules of a user's [gpus.instance_types] entries that give a `form_factor`: each
    matches its type's whole name (of its provider, where the entry names one)."""
    return tuple(
        FormRule(entry.provider, f"^{_literal(name)}$", entry.form_factor)
        for name, entry in entries.items()
        if entry.form_factor is not None
    )


def _literal(name: str) -> str:
    """`name` as a regular expression that matches it alone, read alike by Python and RE2."""
    return "".join(f"\\{c}" if c in _SPECIAL else c for c in name)


_SPECIAL = set("\\.^$*+?()[]{}|")


def which(rules: Iterable[FormRule], provider: str, instance_type: str) -> str | None:
    """The form factor of a provider's instance type: the first rule that matches; None when
    none does (the model's lowest figures apply)."""
    for rule in rules:
        if rule.provider in (None, provider) and re.search(rule.pattern, instance_type):
            return rule.form_factor
    return None


def lowest(
    own: tuple[float | None, float | None], forms: Iterable[FormFactor]
) -> tuple[float | None, float | None]:
    """The lowest FP16 and FP32 figures of a model's own and its boards': what an offer whose
    facts say no form factor gets."""
    forms = tuple(forms)
    fp16 = [x for x in (own[0], *(f.fp16_tflops for f in forms)) if x is not None]
    fp32 = [x for x in (own[1], *(f.fp32_tflops for f in forms)) if x is not None]
    return (min(fp16) if fp16 else None, min(fp32) if fp32 else None)
