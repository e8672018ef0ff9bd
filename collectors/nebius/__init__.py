"""Nebius AI Cloud: the collector (`collector`, through the official SDK), its pure parser
(`parse`) and the gRPC front its recording is replayed through (`loopback`)."""

from collectors.nebius.collector import NebiusCollector

__all__ = ["NebiusCollector"]
