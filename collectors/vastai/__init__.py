"""Vast.ai: the marketplace search. `collector` fetches, `parse` keeps the offers."""

from collectors.vastai.collector import VastaiCollector

__all__ = ["VastaiCollector"]
