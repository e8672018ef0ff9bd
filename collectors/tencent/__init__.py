"""Tencent Cloud: the CVM price API. `collector` fetches, `parse` turns answers into records."""

from collectors.tencent.collector import TencentCollector

__all__ = ["TencentCollector"]
