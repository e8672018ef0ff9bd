"""The views are defined once (`storage.views`) and the migrations only build tables: a store an
older release made (its migrations still created the views, `latest_prices` twice) and a fresh
one end with the same views, column for column and value for value; a changed definition
reaches a store that has nothing left to migrate."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from storage import migrations, views
from storage.connection import connect, transaction
from storage.fx import GpuFact, replace_gpu_facts
from tests.storage import old_schema

NOW = datetime.now(UTC).replace(microsecond=0)  # `latest_prices.stale` reads the real clock
H = timedelta(hours=1)
OLD_PUBLIC = ("alert_events", "collection_runs", "exchange_rates", "latest_prices", "prices")
NEW_PUBLIC = ("gcp_attached_gpus", "market_depth", "spot_interruption", "transfer_prices")
PUBLIC = tuple(sorted((*OLD_PUBLIC, *NEW_PUBLIC)))
_KEY = "{}|us-east-1||{}|on_demand||||{}"


def fill(con: Any) -> None:
    """A little of everything the views read: an interval closed and one open, USD and CNY
    (with a rate), an ok run and a failed one, an alert event."""
    interval = (
        "INSERT INTO price_intervals (offer_key, provider, region, zone, instance_type,"
        " price_kind, term_months, payment_option, offering_class, currency, price_per_hour,"
        " upfront_total, gpu_model, gpu_count, gpu_memory_gib, vcpus, memory_gib, valid_from,"
        " valid_to, last_seen, run_id, available)"
        " VALUES ($key, $provider, 'us-east-1', NULL, $type,"
        " 'on_demand', NULL, NULL, NULL, $currency, $price, NULL, 'H100', 8, 80, 96, 1024,"
        " $start, $end, $seen, 1, $available)"
    )
    for provider, kind, currency, price, start, end, available in [
        ("lambdalabs", "gpu_8x_h100", "USD", 31.92, NOW - 3 * H, NOW - 2 * H, None),
        ("lambdalabs", "gpu_8x_h100", "USD", 29.5, NOW - 2 * H, None, True),
        ("tencent", "GT4.41XLARGE948", "CNY", 180.0, NOW - 3 * H, None, False),
    ]:
        con.execute(
            interval,
            {
                "key": _KEY.format(provider, kind, currency),
                "provider": provider,
                "type": kind,
                "currency": currency,
                "price": price,
                "start": start,
                "end": end,
                "seen": NOW - H,
                "available": available,
            },
        )
    runs = (
        "INSERT INTO runs (run_id, provider, started_at, finished_at, status, records, changed,"
        " error, interval_seconds, observed_at)"
        " VALUES (nextval('run_ids'), ?, ?, ?, ?, 1, 1, ?, 3600, ?)"
    )
    con.execute(runs, ["lambdalabs", NOW - H, NOW - H, "ok", None, NOW - H])
    con.execute(runs, ["tencent", NOW - H, NOW - H, "failed", "HTTP 503", None])
    con.execute("INSERT INTO fx_rates VALUES ('CNY', ?, 0.14, 'config')", [NOW.date()])
    con.execute(
        "INSERT INTO alert_event_log VALUES (nextval('alert_event_ids'), 'cheap', 'lambdalabs',"
        " ?, 29.5, 30, 'slack', 'sent', 'H100 at 29.50', '{}', 1, ?, NULL, ?)",
        [NOW, NOW, NOW],
    )


def snapshot(con: Any) -> dict[str, tuple[list[Any], list[Any]]]:
    """Per public view: its columns with their types, and its rows."""
    names = [
        row[0]
        for row in con.execute(
            "SELECT view_name FROM duckdb_views() WHERE NOT internal ORDER BY view_name"
        ).fetchall()
    ]
    return {
        name: (
            con.execute(f"DESCRIBE {name}").fetchall(),
            con.execute(f"SELECT * FROM {name} ORDER BY ALL").fetchall(),
        )
        for name in names
    }


def kept(view: tuple[list[Any], list[Any]], names: list[str]) -> tuple[list[Any], list[Any]]:
    """A view's columns called `names` (name and type) and their values: what an older release
    showed, wherever later columns were added. Not the NULL-ability DESCRIBE infers, which a
    view's subqueries hide."""
    columns, rows = view
    at = [i for name in names for i, c in enumerate(columns) if c[0] == name]
    return [columns[i][:2] for i in at], [tuple(row[i] for i in at) for row in rows]


def test_a_fresh_store_has_every_public_view(tmp_path: Path) -> None:
    with connect(tmp_path / "new.duckdb", read_only=False) as con:
        assert migrations.migrate(con) == [v for v, _, _ in migrations.MIGRATIONS]
        assert tuple(snapshot(con)) == PUBLIC
        assert views.stored_digest(con) == views.DIGEST


def test_a_store_of_the_last_release_keeps_its_view_columns_and_values(tmp_path: Path) -> None:
    with connect(tmp_path / "old.duckdb", read_only=False) as con:
        old_schema.build(con)
        fill(con)
        before = snapshot(con)
        # Only the later migrations (run_skips, gpu_facts, bands, NULL-able region, ...) and
        # the views.
        assert migrations.migrate(con) == [v for v, _, _ in migrations.MIGRATIONS if v >= 4]
        with transaction(con):  # as the next write does
            replace_gpu_facts(con, [GpuFact("H100", 989.4)])
        after = snapshot(con)
        assert views.stored_digest(con) == views.DIGEST
    assert tuple(before) == OLD_PUBLIC
    names = {name: [c[0] for c in columns] for name, (columns, _) in before.items()}
    assert {name: kept(after[name], names[name]) for name in before} == {
        name: kept(view, names[name]) for name, view in before.items()
    }
    # FLOPs per dollar: 8 H100 at 989.4 TFLOPS for 29.50 USD an hour, 8 x 989.4 x 3.6 / 29.5 =
    # 965.9 PFLOP per dollar; for 180 CNY at 0.14 USD, 25.20 USD: 1,130.7.
    for view in ("prices", "latest_prices"):
        added = kept(after[view], ["gpu_tflops_fp16", "pflop_per_usd"])
        assert added[0] == [("gpu_tflops_fp16", "DOUBLE"), ("pflop_per_usd", "DOUBLE")]
        assert {round(pflop, 1) for _, pflop in added[1]} >= {965.9, 1130.7}
    # Columns added since: a run of the last release skipped no price.
    assert after["collection_runs"][0][-3:] == [
        ("prices_skipped", "INTEGER", "YES", None, None, None),
        ("skip_reasons", "VARCHAR", "YES", None, None, None),
        ("raw", "VARCHAR", "YES", None, None, None),
    ]
    # ... nor kept its raw answers (none were, before this release).
    assert [row[-3:] for row in after["collection_runs"][1]] == [(0, None, None), (0, None, None)]
    assert len(after["latest_prices"][1]) == 2 and len(after["prices"][1]) == 3


@pytest.mark.parametrize("upto", [1, 2, 3])
def test_an_old_store_ends_with_the_views_of_a_fresh_one(tmp_path: Path, upto: int) -> None:
    with connect(tmp_path / "old.duckdb", read_only=False) as con:
        old_schema.build(con, upto)
        assert migrations.migrate(con) == [v for v, _, _ in migrations.MIGRATIONS if v > upto]
        fill(con)
        upgraded = snapshot(con)
    with connect(tmp_path / "new.duckdb", read_only=False) as con:
        migrations.migrate(con)
        fill(con)
        fresh = snapshot(con)
    assert tuple(fresh) == PUBLIC
    assert upgraded == fresh


def test_the_migrations_create_no_view(tmp_path: Path) -> None:
    statements = [s for _, _, batch in migrations.MIGRATIONS for s in batch]
    assert not [s for s in statements if "VIEW" in s.upper()]


def test_a_changed_view_reaches_a_store_with_nothing_to_migrate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "p.duckdb"
    with connect(path, read_only=False) as con:
        migrations.migrate(con)
    changed = tuple(
        (name, select.replace("       raw\n", "       raw, interval_seconds\n"))
        if name == "collection_runs"
        else (name, select)
        for name, select in views.VIEWS
    )
    monkeypatch.setattr(views, "VIEWS", changed)
    monkeypatch.setattr(views, "DIGEST", "a newer release")
    with connect(path, read_only=False) as con:
        assert migrations.migrate(con) == []
        columns = [row[0] for row in con.execute("DESCRIBE collection_runs").fetchall()]
        assert columns[-1] == "interval_seconds"
        assert views.stored_digest(con) == "a newer release"


def test_a_dry_run_sees_the_views_and_leaves_nothing_behind(tmp_path: Path) -> None:
    path = tmp_path / "p.duckdb"
    with connect(path, read_only=False) as con:
        old_schema.build(con, 1)
        con.execute("BEGIN TRANSACTION")
        migrations.migrate_uncommitted(con)
        assert "available" in [row[0] for row in con.execute("DESCRIBE prices").fetchall()]
        con.execute("ROLLBACK")
        assert "available" not in [row[0] for row in con.execute("DESCRIBE prices").fetchall()]
        assert con.execute("SELECT max(version) FROM schema_migrations").fetchall() == [(1,)]
