"""Migration 12: the GPUs Google attaches to N1 machines, which earlier versions stored priced
alone (a GPU-hour with no host), leave the price history for `gcp_attached_gpus`, values
unchanged; nothing else in the store moves."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from collectors.base import PriceRecord
from storage import migrations, views
from storage.connection import connect
from storage.migrations import runner
from storage.store import Store
from tests.storage import old_schema

T0 = datetime(2026, 6, 1, 6, 0, tzinfo=UTC)
H = timedelta(hours=1)
# (provider, instance_type, price kind, term, price, valid_from, valid_to)
ROWS = [
    ("gcp", "nvidia-tesla-t4", "on_demand", None, "0.35", T0, T0 + 5 * H),
    ("gcp", "nvidia-tesla-t4", "on_demand", None, "0.36", T0 + 5 * H, None),
    ("gcp", "nvidia-tesla-t4", "reserved", 36, "0.16", T0, None),
    ("gcp", "nvidia-tesla-v100", "spot", None, "0.992", T0, None),
    ("gcp", "nvidia-tesla-p100", "on_demand", None, "1.46", T0, None),
    ("gcp", "nvidia-tesla-p4", "on_demand", None, "0.6", T0, None),
    # stay: a GCP machine, and another provider's type of the same name
    ("gcp", "a2-highgpu-1g", "on_demand", None, "3.673385", T0, None),
    ("aws", "nvidia-tesla-t4", "on_demand", None, "0.5", T0, None),
]
MOVED = 6
SHARED = """provider, region, zone, instance_type, price_kind, term_months, payment_option,
    offering_class, currency, price_per_hour, upfront_total, price_per_gpu_hour, gpu_model,
    gpu_count, gpu_memory_gib, valid_from, valid_to, last_seen"""


def insert(con: Any) -> None:
    """The rows as the change-only merge of an earlier version left them."""
    sql = (
        "INSERT INTO price_intervals (offer_key, provider, region, zone, instance_type,"
        " price_kind, term_months, payment_option, offering_class, currency, price_per_hour,"
        " upfront_total, gpu_model, gpu_count, gpu_memory_gib, vcpus, memory_gib, valid_from,"
        " valid_to, last_seen, run_id)"
        " VALUES ($key, $provider, 'us-central1', NULL, $type, $kind, $term, NULL, NULL, 'USD',"
        " $price, $upfront, 'T4', 1, 16, NULL, NULL, $start, $end, $seen, 1)"
    )
    for provider, itype, kind, term, price, start, end in ROWS:
        con.execute(
            sql,
            {
                "key": f"{provider}|us-central1||{itype}|{kind}|{term or ''}|||USD",
                "provider": provider,
                "type": itype,
                "kind": kind,
                "term": term,
                "price": Decimal(price),
                "upfront": None if term is None else Decimal(0),
                "start": start,
                "end": end,
                "seen": end or T0 + 6 * H,
            },
        )


def rows(con: Any, view: str, where: str = "true") -> list[tuple[Any, ...]]:
    return con.execute(f"SELECT {SHARED} FROM {view} WHERE {where} ORDER BY ALL").fetchall()


def test_a_store_of_the_last_release_moves_the_gpus_priced_alone(tmp_path: Path) -> None:
    with connect(tmp_path / "old.duckdb", read_only=False) as con:
        old_schema.build(con)
        insert(con)
        alone = "provider = 'gcp' AND instance_type LIKE 'nvidia-tesla-%'"
        before_moved = rows(con, "prices", alone)
        before_kept = rows(con, "prices", f"NOT ({alone})")
        assert len(before_moved) == MOVED and len(before_kept) == len(ROWS) - MOVED
        assert 12 in migrations.migrate(con)
        # every value as the old `prices` showed it, now in the view of its own
        assert rows(con, "gcp_attached_gpus") == before_moved
        assert rows(con, "prices", alone) == []
        assert rows(con, "prices") == before_kept
        # the T4's per-GPU price as it was: 0.36 a GPU-hour, one GPU, open
        assert con.execute(
            "SELECT price_per_hour, price_per_gpu_hour, valid_to FROM gcp_attached_gpus"
            " WHERE instance_type = 'nvidia-tesla-t4' AND price_kind = 'on_demand'"
            " ORDER BY valid_from"
        ).fetchall() == [(0.35, 0.35, T0 + 5 * H), (0.36, 0.36, None)]
        # the internal table keeps what the view does not show: the offer key and the run
        keys = con.execute(
            "SELECT offer_key, run_id FROM gcp_attached_gpu_intervals ORDER BY offer_key LIMIT 1"
        ).fetchall()
        assert keys == [("gcp|us-central1||nvidia-tesla-p100|on_demand||||USD", 1)]


def test_a_store_written_by_the_last_collector_upgrades(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store the real writes made before migration 12 existed: the upgrade moves its T4
    history, and the latest prices keep the machines and lose the GPU alone."""
    before = [m for m in migrations.MIGRATIONS if m[0] != 12]
    monkeypatch.setattr(runner, "MIGRATIONS", before)
    monkeypatch.setattr(runner, "_VERSIONS", [v for v, _, _ in before])
    monkeypatch.setattr(
        views, "VIEWS", tuple(v for v in views.VIEWS if v[0] != "gcp_attached_gpus")
    )
    monkeypatch.setattr(views, "DIGEST", "the views before migration 12")
    store = Store(tmp_path / "prices.duckdb")
    t4 = record("nvidia-tesla-t4", "0.35", vcpus=None, memory_gib=None)
    machine = record("n1-standard-8+nvidia-tesla-t4x1", "0.729998")
    store.write_run("gcp", [t4, machine], started_at=T0, observed_at=T0, regions=None)
    monkeypatch.undo()
    assert store.migrate() == [12]
    assert store.migrate() == []  # once
    with connect(store.path, read_only=True) as con:
        latest = con.execute("SELECT instance_type, price_per_gpu_hour FROM latest_prices")
        assert latest.fetchall() == [("n1-standard-8+nvidia-tesla-t4x1", 0.729998)]
        moved = con.execute(
            "SELECT instance_type, price_per_hour, gpu_model, valid_from, valid_to, last_seen"
            " FROM gcp_attached_gpus"
        ).fetchall()
    assert moved == [("nvidia-tesla-t4", 0.35, "T4", T0, None, T0)]


def test_a_fresh_store_has_the_view_and_no_row(tmp_path: Path) -> None:
    with connect(tmp_path / "new.duckdb", read_only=False) as con:
        migrations.migrate(con)
        assert con.execute("SELECT count(*) FROM gcp_attached_gpus").fetchall() == [(0,)]


def record(instance_type: str, price: str, **host: Any) -> PriceRecord:
    fields: dict[str, Any] = {
        "provider": "gcp",
        "region": "us-central1",
        "zone": None,
        "instance_type": instance_type,
        "price_kind": "on_demand",
        "term_months": None,
        "payment_option": None,
        "offering_class": None,
        "currency": "USD",
        "price_per_hour": Decimal(price),
        "upfront_total": None,
        "gpu_model": "T4",
        "gpu_count": 1.0,
        "gpu_memory_gib": 16.0,
        "vcpus": 8.0,
        "memory_gib": 30.0,
    }
    return PriceRecord(**{**fields, **host})
