"""A failed run that the store could not take when it ended (another process held the file past
the write's wait) is kept and recorded by the next write that gets in: never lost."""

from __future__ import annotations

import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from collectors.common import StoreError
from storage.query import query
from storage.store import Store
from tests.storage.test_fx_availability import LAMBDA, T0

_HOLD = "import duckdb, sys; c = duckdb.connect(sys.argv[1]); print('held', flush=True); input()"


def test_a_run_the_store_could_not_take_is_recorded_by_the_next_write(tmp_path: Path) -> None:
    store = Store(tmp_path / "p.duckdb", lock_wait_s=0.2)
    store.write_run("lambdalabs", [LAMBDA], started_at=T0, observed_at=T0, regions=None)
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(store.path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        failed_at = T0 + timedelta(hours=1)
        with pytest.raises(StoreError, match="locked by another process"):
            store.record_run("azure", "failed", started_at=failed_at, error="HTTP 503")
        assert len(store.backlog.runs) == 1
    finally:
        holder.communicate("\n", timeout=60)
    later = T0 + timedelta(hours=2)
    store.write_run("lambdalabs", [LAMBDA], started_at=later, observed_at=later, regions=None)
    assert store.backlog.runs == []
    rows = query(
        store.path,
        "SELECT provider, status, started_at, error FROM collection_runs ORDER BY started_at",
    ).rows
    assert [(r[0], r[1], r[2], r[3]) for r in rows] == [
        ("lambdalabs", "ok", T0, None),
        ("azure", "failed", failed_at, "HTTP 503"),
        ("lambdalabs", "ok", later, None),
    ]
