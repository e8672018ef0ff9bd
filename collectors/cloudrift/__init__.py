"""CloudRift: the public instance-type list. `collector` fetches, `parse` makes the records."""

from collectors.cloudrift.collector import CloudriftCollector

__all__ = ["CloudriftCollector"]
