"""Per-provider price collectors, registered by their one name.

The registry maps a provider name to the module and class that collect it. Modules are imported
only when their provider runs, so `gpu-tracker collect --provider azure` never pays for boto3.
"""

from __future__ import annotations

import importlib

from collectors.base import Collector

# One name per provider, used everywhere: module, registry key, config section, fixtures folder
# and the `provider` column.
REGISTRY: dict[str, str] = {
    "aws": "collectors.aws:AwsCollector",
    "azure": "collectors.azure:AzureCollector",
}


def collector_class(name: str) -> type[Collector]:
    """The collector class registered for `name` (imports its module on first use)."""
    try:
        target = REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown provider {name!r}; known: {', '.join(sorted(REGISTRY))}") from None
    module_name, _, class_name = target.partition(":")
    cls: type[Collector] = getattr(importlib.import_module(module_name), class_name)
    return cls
