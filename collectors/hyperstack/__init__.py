"""Hyperstack: `collector` fetches the flavors and the pricebook, `parse` prices the flavors."""

from collectors.hyperstack.collector import HyperstackCollector

__all__ = ["HyperstackCollector"]
