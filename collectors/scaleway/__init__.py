"""Scaleway: the collector (`collector`, the catalog's pages) and its pure parser (`parse`)."""

from collectors.scaleway.collector import ScalewayCollector

__all__ = ["ScalewayCollector"]
