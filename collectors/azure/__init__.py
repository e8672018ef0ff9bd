"""Azure: the Retail Prices API. `collector` fetches, `parse` turns rows into records."""

from collectors.azure.collector import AzureCollector

__all__ = ["AzureCollector"]
