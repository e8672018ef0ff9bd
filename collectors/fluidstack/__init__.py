"""Fluidstack: `collector` fetches the available configurations, `parse` prices them."""

from collectors.fluidstack.collector import FluidstackCollector

__all__ = ["FluidstackCollector"]
