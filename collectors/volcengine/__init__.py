"""Volcano Engine: ECS GPU spot prices. `collector` fetches, `parse` turns answers into records,
`sdk` holds the official SDK's calls."""

from collectors.volcengine.collector import VolcengineCollector

__all__ = ["VolcengineCollector"]
