"""Config's defaults that are built when first read, not when a Config is made.

The [alerts] and [gpus] defaults live in modules most commands never need: `sql` with no such
tables would import them only to build an empty default (docs/performance.md, "Start-up
against DuckDB's own"). A `Lazy` field reads like any other: the same value, equality and repr.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

if TYPE_CHECKING:
    from alerts.settings import AlertSettings
    from collectors.gpus import FormRule, GpuModel, Overrides
    from storage.fx import GpuFacts
    from tracker.config.workloads import Workloads

T = TypeVar("T")


class Lazy(Generic[T]):
    """A frozen dataclass field's default, made by `factory` the first time the field is read.

    The dataclass takes the descriptor itself as the field's default; a value given to the
    constructor is stored as it is."""

    def __init__(self, factory: Callable[[], T]) -> None:
        self._factory = factory
        self._slot = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self._slot = f"_lazy_{name}"

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> Lazy[T]: ...
    @overload
    def __get__(self, obj: object, owner: type | None = None) -> T: ...
    def __get__(self, obj: object | None, owner: type | None = None) -> T | Lazy[T]:
        if obj is None:
            return self  # the class's attribute: the dataclass's default for the field
        values = obj.__dict__
        if self._slot not in values:
            values[self._slot] = self._factory()
        value: T = values[self._slot]
        return value

    def __set__(self, obj: object, value: T | Lazy[T]) -> None:
        if value is not self:  # the default stays unbuilt until read
            obj.__dict__[self._slot] = value


def with_changes(obj: T, **changes: Any) -> T:
    """`dataclasses.replace` without reading every field: a default not yet built stays so."""
    new = copy.copy(obj)
    for name, value in changes.items():
        object.__setattr__(new, name, value)
    return new


def given(obj: object, name: str) -> bool:
    """Whether the Lazy field `name` of `obj` holds a value: given to its constructor, or its
    default once read. False: nothing has needed it yet."""
    return f"_lazy_{name}" in vars(obj)


def alerts() -> AlertSettings:
    from alerts.settings import AlertSettings

    return AlertSettings()


def gpus() -> Overrides:
    from collectors.gpus import Overrides

    return Overrides()


def workloads() -> Workloads:
    from tracker.config.workloads import bundled

    return bundled()


def gpu_facts(models: Mapping[str, GpuModel], rules: Sequence[FormRule] = ()) -> GpuFacts:
    """A row per model (the lowest of its figures), one per memory variant and one per board
    with its own FP16 figure (H100 NVL, H100 PCIe), with the rules that read a type's board."""
    from storage.fx import FormRule as StoredRule
    from storage.fx import GpuFact, GpuFacts

    return GpuFacts(
        tuple(
            fact
            for m in models.values()
            for fact in (
                GpuFact(m.name, m.unstated()[0]),
                *(
                    GpuFact(m.name, v.fp16_tflops, v.memory_gib)
                    for v in m.variants
                    if v.fp16_tflops is not None
                ),
                *(
                    GpuFact(m.name, f.fp16_tflops, form_factor=f.name)
                    for f in m.form_factors
                    if f.fp16_tflops is not None
                ),
            )
        ),
        tuple(StoredRule(r.provider, r.pattern, r.form_factor) for r in rules),
    )
