"""Verda (formerly DataCrunch): `collector` fetches with an OAuth2 token, `parse` prices."""

from collectors.verda.collector import VerdaCollector

__all__ = ["VerdaCollector"]
