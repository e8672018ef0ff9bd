"""Paperspace (DigitalOcean GPU Droplets). `collector` fetches, `parse` reads the sizes."""

from collectors.paperspace.collector import PaperspaceCollector

__all__ = ["PaperspaceCollector"]
