"""Alibaba Cloud: the ECS price APIs. `collector` fetches, `parse` turns answers into records."""

from collectors.alibaba.collector import AlibabaCollector

__all__ = ["AlibabaCollector"]
