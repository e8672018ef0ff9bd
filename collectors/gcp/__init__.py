"""Google Cloud: the Cloud Billing Catalog's SKUs priced into GPU machines.

`collector` fetches the SKUs (the registry's `GcpCollector`); `skus` reads a SKU into a rate;
`machines` sums the rates into machine prices.
"""

from collectors.gcp.collector import GcpCollector

__all__ = ["GcpCollector"]
