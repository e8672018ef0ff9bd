"""Huawei Cloud: ECS GPU flavors priced by BSS. `collector` fetches, `parse` turns answers into
records, `sdk` holds the official SDK's calls."""

from collectors.huawei.collector import HuaweiCollector

__all__ = ["HuaweiCollector"]
