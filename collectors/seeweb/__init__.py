"""Seeweb: `collector` fetches the Cloud Server plans, `parse` prices the GPU ones."""

from collectors.seeweb.collector import SeewebCollector

__all__ = ["SeewebCollector"]
