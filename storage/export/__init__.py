"""The history as Parquet for other engines (`gpu-tracker export`): `prices` hive-partitioned
`provider=<provider>/month=<YYYY-MM>/` by the month of `valid_from`, `collection_runs` under
`runs/`, written incrementally to a local directory or an object store.

`partitions` owns the SQL (fingerprints, the Parquet files DuckDB writes), `target` the
filesystems and the atomic moves, `incremental` one export from start to end.
"""

from storage.export.incremental import Report, export
from storage.export.target import Target, open_target

__all__ = ["Report", "Target", "export", "open_target"]
