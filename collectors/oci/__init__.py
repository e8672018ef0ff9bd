"""Oracle Cloud: the public price list. `collector` fetches, `parse` prices the GPU shapes."""

from collectors.oci.collector import OciCollector

__all__ = ["OciCollector"]
