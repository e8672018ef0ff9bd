"""The price history an earlier release stored keeps its meaning once today's collectors write
into the same store: every interval keeps its offer, facts and price, and every offer still
offered stays open, with no change recorded.

The store is the one the release before the GPU table became data (schema version 9) left
after `gpu-tracker demo --keep`, exported as text (tests/fixtures/store_v9, see its README).
Today's pipeline collects the demo's recordings into it, which migrates it (10, 11, 12) and
merges. The exceptions, each named by the issue: GCP's GPUs priced alone move out of the price
history (migration 12); the H100 NVL (94 GB) gets its own throughput, and so does every offer
whose board (form factor) gives another figure than the one stored (migration 15: an H100
PCIe, or an H100 whose type names no board, gets the PCIe's 756); sold-out types and newly
asked terms are new offers, which touch no stored one.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest

from collectors import gpus
from collectors.base import PriceRecord
from storage.connection import connect
from storage.migrations import MIGRATIONS
from storage.store import RunResult, Store
from tracker.collecting import pipeline
from tracker.collecting.demo import demo_setup

OLD_STORE = Path(__file__).parents[1] / "fixtures" / "store_v9"
# An offer's identity (the store's offer key, column by column) and what it says.
KEY = (
    "provider, region, zone, instance_type, price_kind, term_months, payment_option,"
    " offering_class, currency"
)
FACTS = "gpu_model, gpu_count, gpu_memory_gib, vcpus, memory_gib"
STORED = f"{KEY}, price_per_hour, upfront_total, {FACTS}, available, valid_from, valid_to, run_id"
# GCP's N1-attached GPUs the old release priced alone (migration 12 moves them).
ATTACHED = ("nvidia-tesla-t4", "nvidia-tesla-v100", "nvidia-tesla-p100", "nvidia-tesla-p4")
# Read back besides the stored columns: confirmed, and computed again by the upgrade.
COMPUTED = ("last_seen", "gpu_tflops_fp16", "pflop_per_usd")
H100_NVL_FP16 = 835.5  # NVIDIA H100 NVL datasheet, dense (the table's 94 GB variant)
H100_PCIE_FP16 = 756.0  # NVIDIA H100 PCIe, dense (the Hopper whitepaper)


class RecordingStore(Store):
    """The real store, keeping what each provider's parse handed it."""

    def __init__(self, path: Path, **kwargs: Any) -> None:
        super().__init__(path, **kwargs)
        self.records: list[PriceRecord] = []

    def write_run(self, provider: str, records: Sequence[PriceRecord], **kw: Any) -> RunResult:
        self.records.extend(records)
        return super().write_run(provider, records, **kw)


def load_old_store(path: Path) -> None:
    """The exported store back into a DuckDB file, as the old release left it."""
    with duckdb.connect(str(path)) as con:
        con.execute((OLD_STORE / "schema.sql").read_text())
        for table in sorted(OLD_STORE.glob("*.csv")):
            con.execute(
                f"COPY {table.stem} FROM '{table}' (FORMAT csv, HEADER, allow_quoted_nulls false)"
            )


def rows(con: Any, table: str, read: str = ", ".join(COMPUTED)) -> dict[tuple[Any, ...], Any]:
    """Every interval of a table by (offer, valid_from), its columns by name."""
    cursor = con.execute(f"SELECT {STORED}, {read} FROM {table}")
    names = [d[0] for d in cursor.description]
    found = {}
    for values in cursor.fetchall():
        row = dict(zip(names, values, strict=True))
        found[(*values[:9], row["valid_from"])] = row
    return found


@pytest.fixture(scope="module")
def upgraded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    path = tmp_path_factory.mktemp("v9") / "prices.duckdb"
    load_old_store(path)
    with connect(path, read_only=True) as con:
        before = rows(con, "price_intervals")
        last = con.execute("SELECT max(last_seen) FROM price_intervals").fetchall()[0][0]
    now = last + timedelta(hours=1)
    with demo_setup(path) as setup:
        config = setup.config
        store = RecordingStore(path, fx_rates=config.fx, gpu_facts=config.gpu_facts)
        outcomes = pipeline.collect(config, env=setup.env, store=store, now=now)
    assert [o.provider for o in outcomes if o.status != "ok"] == []
    with connect(path, read_only=True) as con:
        after = rows(con, "price_intervals")
        moved = rows(con, "gcp_attached_gpu_intervals", "last_seen")
        versions = con.execute("SELECT list(version ORDER BY version) FROM schema_migrations")
        applied = versions.fetchall()[0][0]
    return {
        "before": before,
        "after": after,
        "moved": moved,
        "now": now,
        "records": store.records,
        "versions": applied,
    }


def test_the_old_store_is_what_the_old_release_wrote(upgraded: dict[str, Any]) -> None:
    before = upgraded["before"]
    providers = {key[0] for key in before}
    assert len(before) == 383 and len(providers) == 11
    assert upgraded["versions"] == [version for version, _, _ in MIGRATIONS]


def test_every_interval_keeps_its_offer_facts_and_price(upgraded: dict[str, Any]) -> None:
    before, after, moved = upgraded["before"], upgraded["after"], upgraded["moved"]
    gone = {key for key in before if key not in after}
    assert gone == set(moved)
    assert {key[3] for key in gone} == {"nvidia-tesla-t4", "nvidia-tesla-v100"}
    for key, old in before.items():
        new = after.get(key) or moved[key]
        # every stored column, the interval's end included: no offer closed by the new run
        assert {c: new[c] for c in old if c not in COMPUTED} == {
            c: old[c] for c in old if c not in COMPUTED
        }, key


def test_every_offer_still_offered_is_confirmed_not_reopened(upgraded: dict[str, Any]) -> None:
    before, after, now = upgraded["before"], upgraded["after"], upgraded["now"]
    still_open = [key for key, row in before.items() if row["valid_to"] is None]
    kept = [key for key in still_open if key[3] not in ATTACHED]
    assert len(kept) == 352
    assert all(after[key]["last_seen"] == now for key in kept)
    # an offer the old release stored has no interval from the new run
    old_offers = {key[:9] for key in before}
    opened = [key for key, row in after.items() if row["valid_from"] == now]
    assert [key for key in opened if key[:9] in old_offers] == []


def test_what_the_new_parse_says_of_each_stored_offer(upgraded: dict[str, Any]) -> None:
    """The merge compares prices only: a fact said differently would slip past it into the
    next interval. So the parse itself must say what the old release stored."""
    stored = {key[:9]: row for key, row in upgraded["before"].items() if row["valid_to"] is None}
    said: set[tuple[Any, ...]] = set()
    for r in upgraded["records"]:
        key = tuple(getattr(r, column) for column in KEY.split(", "))
        old = stored.get(key)
        if old is None or (r.effective_at is not None and r.effective_at < old["valid_from"]):
            continue  # a new offer; or a point of spot history the old interval already holds
        said.add(key)
        facts = (r.gpu_model, r.gpu_count, r.gpu_memory_gib, r.vcpus, r.memory_gib)
        assert facts == tuple(old[c] for c in FACTS.split(", ")), key
        assert (r.price_per_hour, r.upfront_total, r.available) == (
            old["price_per_hour"],
            old["upfront_total"],
            old["available"],
        ), key
    # every stored offer still open, but GCP's GPUs priced alone
    assert len(said) == 352 and not {key[3] for key in said} & set(ATTACHED)


def test_only_what_the_board_or_memory_says_changes_throughput(upgraded: dict[str, Any]) -> None:
    """The old release priced every H100 at the SXM's 989.4 (the NVL's 94 GB too): now each
    interval takes its memory variant's or its board's figures, else the model's lowest."""
    before, after = upgraded["before"], upgraded["after"]
    changed = {
        key: (after[key]["gpu_tflops_fp16"], after[key]["pflop_per_usd"])
        for key, old in before.items()
        if key in after and after[key]["pflop_per_usd"] != old["pflop_per_usd"]
    }
    board = {key: gpus.form_factor(key[0], key[3]) for key in before}
    expected = {
        key: gpus.tflops(old["gpu_model"], old["gpu_memory_gib"], board[key])[0]
        for key, old in before.items()
        if key in after
    }
    assert sorted(changed) == sorted(
        k for k, t in expected.items() if t != before[k]["gpu_tflops_fp16"]
    )
    nvl = [
        key
        for key, old in before.items()
        if (old["gpu_model"], old["gpu_memory_gib"]) == ("H100", 94)
    ]
    pcie = [key for key in before if key[3] == "gpu_1x_h100_pcie"]
    assert len(nvl) == 4 and set(nvl) <= set(changed) and pcie and set(pcie) <= set(changed)
    assert {changed[key][0] for key in nvl} == {H100_NVL_FP16}
    assert {changed[key][0] for key in pcie} == {H100_PCIE_FP16}
    sxm = [key for key in before if key[3] in ("gpu_8x_h100_sxm5", "p5.48xlarge")]
    assert sxm and not set(sxm) & set(changed)  # the SXM's 989.4 stood and stands
    for key, (fp16, pflop) in changed.items():
        old = before[key]
        # PFLOP per dollar from the stored numbers: the new TFLOPS where the old ones stood,
        # x GPUs x 3,600 s / USD an hour
        assert old["gpu_tflops_fp16"] > fp16 == expected[key]  # never more than it was
        if old["currency"] == "USD":
            usd = float(old["price_per_hour"])
            assert pflop == pytest.approx(fp16 * old["gpu_count"] * 3.6 / usd)
