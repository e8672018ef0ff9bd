"""The migrations are numbered 1, 2, 3, ... in the order they apply, and a store any earlier
main left, whatever it had applied, reaches the current schema in one `migrate()`: the release
before the GPU table became data (version 9), and the mains in between, one of which applied
11 before 10 existed (migration 11 landed first)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from storage import migrations
from storage.connection import connect, transaction
from storage.fx import GpuFact, replace_gpu_facts
from storage.migrations import runner
from tests.storage import old_schema

NOW = datetime(2026, 12, 1, 6, 0, tzinfo=UTC)
LATEST = [version for version, _, _ in migrations.MIGRATIONS]
# (provider, instance type, model, GPUs, GiB per GPU, USD an hour)
INTERVALS = [
    ("azure", "Standard_NC40ads_H100_v5", "H100", 1, 94, "6.98"),
    ("azure", "Standard_ND96isr_H100_v5", "H100", 8, 80, "98.32"),
    ("gcp", "nvidia-tesla-t4", "T4", 1, 16, "0.35"),
    ("gcp", "a2-highgpu-1g", "A100", 1, 40, "3.673385"),
]


def test_the_migrations_are_numbered_one_by_one_in_order() -> None:
    # `migrate()` applies them in list order and calls a store current when its versions equal
    # this list: a gap or a swap would leave every store migrating again before each write.
    # (16, the transfer prices' table, is numbered apart and may land after 17.)
    assert sorted(set(LATEST)) == LATEST and set(range(1, LATEST[-1] + 1)) - set(LATEST) <= {16}
    names = [name for _, name, _ in migrations.MIGRATIONS]
    assert len(set(names)) == len(names) and all(names)


def store_at(path: Path, versions: list[int]) -> None:
    """A store as a main that had applied `versions` left it: that release's tables (the
    migrations are append-only, so their statements are those it ran), one interval per
    INTERVALS row, its GPU facts, and a type seen without facts where 11 was in."""
    with connect(path, read_only=False) as con:
        old_schema.build(con, 3)
        for version, name, statements in migrations.MIGRATIONS:
            if version > 3 and version in versions:
                with transaction(con):
                    runner._apply(con, version, name, statements)
        with transaction(con):
            for provider, itype, model, count, gib, price in INTERVALS:
                con.execute(
                    "INSERT INTO price_intervals (offer_key, provider, region, instance_type,"
                    " price_kind, currency, price_per_hour, gpu_model, gpu_count,"
                    " gpu_memory_gib, valid_from, last_seen, run_id)"
                    " VALUES (?, ?, 'r', ?, 'on_demand', 'USD', ?, ?, ?, ?, ?, ?, 1)",
                    [f"{provider}|{itype}", provider, itype, price, model, count, gib, NOW, NOW],
                )
            facts = "('H100', NULL, 989.4)" if 10 in versions else "('H100', 989.4)"
            con.execute(f"INSERT INTO gpu_facts VALUES {facts}")
            if 11 in versions:
                con.execute(
                    "INSERT INTO unknown_gpu_types VALUES ('aws', 'g9.xlarge', 'no GPU count',"
                    " ?, ?, 1)",
                    [NOW, NOW],
                )


@pytest.mark.parametrize(
    "applied",
    [
        pytest.param(list(range(1, 10)), id="release-9"),
        pytest.param([*range(1, 10), 11], id="main-with-11-before-10"),
        pytest.param(list(range(1, 11)), id="main-10"),
        pytest.param(list(range(1, 12)), id="main-11"),
    ],
)
def test_a_store_of_an_earlier_main_reaches_the_current_schema(
    tmp_path: Path, applied: list[int]
) -> None:
    path = tmp_path / "prices.duckdb"
    store_at(path, applied)
    with connect(path, read_only=False) as con:
        assert migrations.migrate(con) == [v for v in LATEST if v not in applied]
        assert migrations.migrate(con) == []
        versions = con.execute("SELECT list(version ORDER BY version) FROM schema_migrations")
        assert versions.fetchall() == [(LATEST,)]
        with transaction(con):  # as the next write does: the table's rows, the NVL's own
            replace_gpu_facts(con, [GpuFact("H100", 989.4), GpuFact("H100", 835.5, 94)])
        prices = con.execute(
            "SELECT instance_type, price_per_hour, gpu_count, gpu_memory_gib, gpu_tflops_fp16"
            " FROM prices ORDER BY instance_type"
        ).fetchall()
        moved = con.execute("SELECT instance_type, price_per_hour FROM gcp_attached_gpus")
        moved_rows = moved.fetchall()
        unknown = con.execute("SELECT instance_type FROM unknown_gpu_types").fetchall()
    # every other interval as it was; GCP's GPU alone out of `prices`, in its own view
    assert prices == [
        ("Standard_NC40ads_H100_v5", 6.98, 1, 94, 835.5),
        ("Standard_ND96isr_H100_v5", 98.32, 8, 80, 989.4),
        ("a2-highgpu-1g", 3.673385, 1, 40, None),
    ]
    assert moved_rows == [("nvidia-tesla-t4", 0.35)]
    assert unknown == ([("g9.xlarge",)] if 11 in applied else [])
