"""`gpu-tracker gpus` through the real CLI: the models and per-type entries the tracker knows (the
user's [gpus] entries among them), and, on a real store, the types seen without facts with the
config entry that gives them; that entry, filled in, prices the type at the next collection."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from collectors import gpus as gpu_table
from collectors.azure.collector import AzureCollector
from collectors.base import PriceRecord, ProviderSettings
from collectors.common import ConfigError
from storage.query import query
from storage.store import Store
from tracker import config as config_mod
from tracker.cli import cli
from tracker.collecting import pipeline
from tracker.collecting.isolation import Fetched
from tracker.config.store import StoreSettings

T0 = datetime(2026, 11, 30, 6, 0, tzinfo=UTC)
USER_MODEL = """
[gpus.models.MI300A]
vendor = "amd"
fp16_tflops = 2500.0
memory_gib = [128]
source = "vendor page"
"""


@pytest.fixture(autouse=True)
def _no_overrides() -> Iterator[None]:
    yield
    gpu_table.install(None)  # a collector built here installs the config's entries


def run(config: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["--config", str(config), *args])
    return result.exit_code, result.stdout, result.stderr


def write_config(tmp_path: Path, more: str = "") -> Path:
    path = tmp_path / "config.toml"
    path.write_text('[storage]\npath = "prices.duckdb"\n' + more)
    return path


def offer(itype: str, region: str, **kw: Any) -> PriceRecord:
    fields: dict[str, Any] = {
        "provider": "azure",
        "region": region,
        "zone": None,
        "instance_type": itype,
        "price_kind": "on_demand",
        "term_months": None,
        "payment_option": None,
        "offering_class": None,
        "currency": "USD",
        "price_per_hour": Decimal("3.06"),
        "upfront_total": None,
        "gpu_model": "V100",
        "gpu_count": 1.0,
        "gpu_memory_gib": 16.0,
    }
    return PriceRecord(**{**fields, **kw})


@pytest.fixture
def seen(tmp_path: Path) -> Path:
    """A store with an offer whose GPU model nobody knows (two regions, seen twice), one stored
    under the provider's own name for a GPU the table lacks (an invented B400) and a type seen
    with no GPU count (not stored), beside a known one."""
    store = Store(tmp_path / "prices.duckdb")
    unnamed = {"gpu_model": None, "gpu_count": 4.0, "gpu_memory_gib": 48.0}
    for at in (T0 - timedelta(hours=1), T0):
        store.write_run(
            "azure",
            [
                offer("Standard_NC6s_v3", "eastus"),
                offer("Standard_NX4_v9", "eastus", **unnamed),
                offer("Standard_NX4_v9", "westus", **unnamed),
                offer("Standard_ND_B400_v7", "eastus", gpu_model="B400", gpu_count=8.0),
            ],
            started_at=at,
            observed_at=at,
            regions=None,
            unknown={"Standard_ND40rs_v2"},
        )
    return write_config(tmp_path)


def test_the_models_include_the_users_own_and_need_no_store(tmp_path: Path) -> None:
    config = write_config(tmp_path, USER_MODEL)
    code, out, err = run(config, "gpus", "--format", "json")
    assert code == 0, err
    rows = {(r["model"], r["variant"], r["form_factor"]): r for r in json.loads(out)}
    assert rows["MI300A", None, None] == {
        "model": "MI300A",
        "variant": None,
        "form_factor": None,
        "vendor": "amd",
        "memory_gib": [128.0],
        "fp16_tflops": 2500.0,
        "fp32_tflops": None,
        "source": "vendor page",
        "aliases": [],
        "origin": "config",
    }
    assert rows["A100", None, None]["origin"] == "table"
    assert rows["A100", None, None]["memory_gib"] == [40.0, 80.0]
    # A variant with figures of its own is a row of its own (the H100 NVL's 94 GB).
    nvl = rows["H100", "H100 NVL", None]
    assert (nvl["memory_gib"], nvl["fp16_tflops"], nvl["fp32_tflops"]) == ([94.0], 835.5, 60.0)
    # So is each board; the model's row has the lowest figures, where nothing says the board.
    assert (
        rows["H100", None, "SXM"]["fp16_tflops"],
        rows["H100", None, "PCIe"]["fp16_tflops"],
    ) == (
        989.4,
        756.0,
    )
    assert rows["H100", None, None]["fp16_tflops"] == 756.0
    assert not (tmp_path / "prices.duckdb").exists()

    code, out, _ = run(config, "gpus")
    assert code == 0
    line = next(line for line in out.splitlines() if "MI300A" in line)
    assert "2500" in line and "config" in line and "vendor page" in line


def test_the_types_of_a_provider_with_the_users_entries(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        '[gpus.instance_types."Standard_NC8ads_A10_v4"]\nprovider = "azure"\ngpu_model = "A10"\n'
        "gpu_count = 1\ngpu_memory_gib = 24\n"
        '[gpus.instance_types."Standard_NC6s_v3"]\nvcpus = 7\n',
    )
    code, out, err = run(config, "gpus", "--provider", "Azure", "--format", "json")
    assert code == 0, err
    rows = {r["instance_type"]: r for r in json.loads(out)}
    assert {r["provider"] for r in rows.values()} == {"azure"}
    assert rows["Standard_NC8ads_A10_v4"] == {
        "provider": "azure",
        "instance_type": "Standard_NC8ads_A10_v4",
        "gpu_model": "A10",
        "gpu_count": 1.0,
        "gpu_memory_gib": 24.0,
        "vcpus": None,
        "memory_gib": None,
        "origin": "config",
    }
    # The user's vCPUs over the table's entry; the rest is the table's.
    assert rows["Standard_NC6s_v3"] == {
        **rows["Standard_NC6s_v3"],
        "vcpus": 7.0,
        "origin": "config",
    }
    assert (rows["Standard_NC6s_v3"]["gpu_model"], rows["Standard_NC6s_v3"]["memory_gib"]) == (
        "V100",
        112.0,
    )
    assert rows["Standard_NC24ads_A100_v4"]["origin"] == "table"

    code, out, _ = run(config, "gpus", "--types", "--format", "csv")
    assert code == 0
    assert out.splitlines()[0] == (
        "provider,instance_type,gpu_model,gpu_count,gpu_memory_gib,vcpus,memory_gib,origin"
    )
    assert "azure,Standard_NC8ads_A10_v4,A10,1,24,,,config" in out.splitlines()


def test_unknown_lists_an_unnamed_offer_and_a_type_not_stored(seen: Path) -> None:
    code, out, err = run(seen, "gpus", "--unknown", "--format", "json")
    assert code == 0, err
    not_stored, named, unnamed = json.loads(out)  # by provider and type
    assert unnamed == {
        "provider": "azure",
        "instance_type": "Standard_NX4_v9",
        "reason": "GPU model unknown",
        "stored": True,
        "gpu_model": None,
        "gpu_count": 4.0,
        "gpu_memory_gib": 48.0,
        "regions": ["eastus", "westus"],
        "first_seen": "2026-11-30T05:00:00+00:00",
        "last_seen": "2026-11-30T06:00:00+00:00",
        "configured": False,
        "snippet": '[gpus.instance_types."Standard_NX4_v9"]\n'
        'provider = "azure"\n'
        'gpu_model = "?"  # one `gpu-tracker gpus` lists, or add [gpus.models.<name>]\n'
        "gpu_count = 4\n"
        "gpu_memory_gib = 48  # of ONE GPU",
    }
    assert not_stored == {
        **not_stored,
        "instance_type": "Standard_ND40rs_v2",
        "reason": "no GPU count",
        "stored": False,
        "gpu_count": None,
        "regions": [],
        "first_seen": "2026-11-30T05:00:00+00:00",
        "last_seen": "2026-11-30T06:00:00+00:00",
    }
    assert "gpu_count = ?\ngpu_memory_gib = ?" in not_stored["snippet"]
    # The GPU the table lacks, stored under its own name: the entry to add is the model's.
    assert named == {
        **named,
        "instance_type": "Standard_ND_B400_v7",
        "reason": "GPU not in the GPU table",
        "stored": True,
        "gpu_model": "B400",
        "gpu_count": 8.0,
        "configured": False,
        "snippet": '[gpus.models."B400"]\n'
        "fp16_tflops = ?  # dense FP16/BF16 of ONE GPU, from its datasheet\n"
        "memory_gib = [16]\n"
        'source = "?"  # the datasheet',
    }

    # Its offer answers to its own name, as any model's.
    code, out, err = run(seen, "latest", "--gpu", "B400", "--format", "json")
    assert code == 0, err
    assert [(r["instance_type"], r["gpu_model"]) for r in json.loads(out)] == [
        ("Standard_ND_B400_v7", "B400")
    ]

    code, out, _ = run(seen, "gpus", "--unknown")
    assert code == 0
    assert "Standard_NX4_v9" in out and "eastus, westus" in out
    assert unnamed["snippet"] in out and not_stored["snippet"] in out

    code, out, _ = run(seen, "gpus", "--unknown", "--provider", "aws", "--format", "json")
    assert (code, json.loads(out)) == (0, [])


def test_check_fails_until_every_type_has_an_entry(seen: Path, tmp_path: Path) -> None:
    code, _, err = run(seen, "gpus", "--check")
    assert code == 1
    assert "3 GPU instance types without facts have no [gpus] entry yet" in err

    entries = (
        '[gpus.instance_types."Standard_NX4_v9"]\ngpu_model = "L40S"\n'
        '[gpus.instance_types."Standard_ND40rs_v2"]\nprovider = "azure"\ngpu_model = "V100"\n'
        "gpu_count = 8\ngpu_memory_gib = 32\n"
        '[gpus.models.B400]\nvendor = "nvidia"\nfp16_tflops = 5000\nmemory_gib = [16]\n'
        'source = "a test"\n'
    )
    seen.write_text(seen.read_text() + entries)
    code, out, err = run(seen, "gpus", "--check", "--format", "json")
    assert code == 0, err
    # The model's entry known, its offer is no longer one without facts.
    assert [row["configured"] for row in json.loads(out)] == [True, True]
    code, out, _ = run(seen, "gpus", "--check")
    assert code == 0
    assert "Every one has a [gpus] entry" in out and "[gpus.instance_types." not in out


def test_an_entry_without_its_count_does_not_count_as_one(seen: Path) -> None:
    seen.write_text(
        seen.read_text() + '[gpus.instance_types."Standard_ND40rs_v2"]\ngpu_model = "V100"\n'
    )
    code, out, _ = run(seen, "gpus", "--unknown", "--format", "json")
    assert code == 0
    assert [row["configured"] for row in json.loads(out)] == [False, False, False]


def test_no_store_and_a_damaged_one_say_so_in_one_line(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    code, out, err = run(config, "gpus", "--unknown")
    assert (code, out) == (1, "")
    assert err.startswith("error: no price store at ") and err.count("\n") == 1

    (tmp_path / "prices.duckdb").write_bytes(b"not a store" * 1000)
    code, _, err = run(config, "gpus", "--unknown")
    assert code == 2 and "is damaged" in err and err.count("\n") == 1


def test_the_read_stops_at_query_timeout(seen: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    load = config_mod.load

    def at_once(*args: Any, **kwargs: Any) -> config_mod.Config:
        return replace(load(*args, **kwargs), store=StoreSettings(0, 120))

    monkeypatch.setattr(config_mod, "load", at_once)
    code, _, err = run(seen, "gpus", "--unknown")
    assert code == 1
    assert err.strip() == (
        "error: query stopped after 0 s (gpus timeout; raise it with [storage] query_timeout)"
    )


def test_types_and_unknown_together_is_a_usage_error(tmp_path: Path) -> None:
    code, _, err = run(write_config(tmp_path), "gpus", "--types", "--unknown")
    assert code == 2 and "either --types or --unknown" in err


# A Retail Prices row for a SKU only an entry of the user's knows (NC A10 v4), beside one the
# GPU table knows. Prices for eastus: NC6s v3 Azure's own, NC8ads A10 v4 the invented one of
# tests/fixtures/azure/traps.json.
def _row(sku: str, meter: str, price: float) -> dict[str, Any]:
    return {
        "currencyCode": "USD",
        "retailPrice": price,
        "unitPrice": price,
        "armRegionName": "eastus",
        "location": "US East",
        "effectiveStartDate": "2024-05-01T00:00:00Z",
        "meterName": meter,
        "productName": f"Virtual Machines {meter} Series",
        "skuName": meter,
        "serviceName": "Virtual Machines",
        "unitOfMeasure": "1 Hour",
        "type": "Consumption",
        "armSkuName": sku,
    }


PAGES = {
    "page-1": {
        "BillingCurrency": "USD",
        "Items": [
            _row("Standard_NC6s_v3", "NC6s v3", 3.06),
            _row("Standard_NC8ads_A10_v4", "NC8ads A10 v4", 0.93),
        ],
        "NextPageLink": None,
        "Count": 2,
    }
}


def _replayed(name: str, settings: ProviderSettings, observed_at: datetime) -> Fetched:
    """The Azure collector, built from the config's settings as every collection builds it,
    parsing the rows above instead of asking the API."""
    parsed = AzureCollector(settings).parse(PAGES, observed_at=observed_at)
    return Fetched(parsed, ("eastus",))


def _collect(config: Path, at: datetime) -> None:
    loaded = config_mod.load(config)
    (outcome,) = pipeline.collect(loaded, ("azure",), env={}, fetcher=_replayed, now=at)
    assert outcome.status == "ok", outcome.error


def test_the_entry_filled_in_prices_the_type_at_the_next_collection(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    _collect(config, T0)
    code, out, err = run(config, "gpus", "--unknown", "--format", "json")
    assert code == 0, err
    (found,) = json.loads(out)
    assert (found["instance_type"], found["stored"]) == ("Standard_NC8ads_A10_v4", False)

    # Left as printed, the entry is refused: nothing is guessed.
    config.write_text(config.read_text() + "\n" + found["snippet"] + "\n")
    with pytest.raises(ConfigError):
        config_mod.load(config)

    filled = (
        found["snippet"]
        .replace('gpu_model = "?"', 'gpu_model = "A10"')
        .replace("gpu_count = ?", "gpu_count = 1")
        .replace("gpu_memory_gib = ?", "gpu_memory_gib = 24")
    )
    config.write_text('[storage]\npath = "prices.duckdb"\n\n' + filled + "\n")
    _collect(config, T0 + timedelta(hours=1))

    priced = query(
        tmp_path / "prices.duckdb",
        "SELECT gpu_model, gpu_count, gpu_memory_gib, price_per_hour, price_per_gpu_hour"
        " FROM latest_prices WHERE instance_type = 'Standard_NC8ads_A10_v4'",
    )
    # 0.93 USD/h for 1 GPU: 0.93 per GPU-hour.
    assert priced.rows == [("A10", 1.0, 24.0, 0.93, 0.93)]
    code, out, _ = run(config, "gpus", "--unknown", "--format", "json")
    assert (code, json.loads(out)) == (0, [])
