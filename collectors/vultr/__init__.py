"""Vultr: the public plans. `collector` fetches, `parse` makes a record per plan and location."""

from collectors.vultr.collector import VultrCollector

__all__ = ["VultrCollector"]
