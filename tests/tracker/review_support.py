"""A store with half a year of history for the review tests, written through the real store and
the real alert runs.

Prices per GPU-hour (instance price / GPUs). AWS p4d.24xlarge (8x A100) are the real figures
(tests/alerts/test_evaluate.py): on-demand 32.7726 before the mid-2025 cut, 21.957642 after;
spot 9.8328 (invented, before) and 8.0468 in use1-az1; 3-year All Upfront 8.159056 and 1-year
No Upfront 13.921094 effective. Everything else is invented:

| offer                                  | 6mo+1h ago | 4mo ago | now-1h (tencent: now-20m) |
|----------------------------------------|------------|---------|---------------------------|
| aws p4d on-demand                      | 32.7726    | same    | 21.957642                 |
| aws p4d spot use1-az1                  | 9.8328     | same    | 8.0468                    |
| aws p4d reserved 3y all-upfront        | 8.159056   | same    | same                      |
| aws p4d reserved 1y no-upfront         | 13.921094  | same    | same                      |
| aws p5.48xlarge (8x H100) on-demand    | 98.32      | same    | 55.04                     |
| aws p5.48xlarge reserved 3y all-upfront| 43.00      | same    | 22.016                    |
| aws p3.2xlarge (1x V100) on-demand     | 3.06       | same    | withdrawn                 |
| aws g6.xlarge (1x L4) on-demand        | -          | -       | 0.8048                    |
| lambdalabs gpu_1x_a100 on-demand       | 1.29       | 1.19    | 1.10                      |
| lambdalabs gpu_1x_h100_pcie on-demand  | -          | -       | 2.49                      |
| lambdalabs gpu_1x_h100_sxm5 on-demand  | -          | -       | 1.99, sold out            |
| paperspace gpu-h100x1-80gb on-demand   | -          | -       | 1.50, stale               |
| tencent GT4.41XLARGE948 (8x A100) spot | 64.00 CNY  | same    | 56.00 CNY                 |

With `fx`, CNY is 7.2 per USD: 64.00 / 8 / 7.2 = 1.111111 and 56.00 / 8 / 7.2 = 0.972222 USD.
The store holds the GPU table's FP16 TFLOPS, as the tracker's writes keep it (A100 312, H100
989.4, L4 121, V100 125), for the PFLOP-per-dollar figures.

Alerts: `spot-under-2` (A100 spot <= 2.00 USD, console) fires right after the first collection
(before the review's six months); `cheap-a100-spot` (<= 1.10 USD, console and slack) fires for
aws spot (1.00585) 40 minutes before now and for the tencent one (0.972222, with `fx`) 10
minutes before now: two alerts, four rows.
"""

from __future__ import annotations

import atexit
import dataclasses
import io
import shutil
import tempfile
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

from alerts.console import ConsoleNotifier
from alerts.notify import Unavailable
from collectors.base import PriceRecord
from collectors.gpus import GPU_MODELS, form_factor_rules
from storage.connection import connect, transaction
from storage.fx import FxRate, replace_gpu_facts
from storage.store import Store
from tests.alerts.support import Bench, offer, rules
from tracker.config.daemon import Since
from tracker.config.lazy import gpu_facts
from tracker.review.build import look_back

NOW = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
MIN = timedelta(minutes=1)
# What every collection of the tracker writes: the table's models, variants, boards and rules.
GPU_FACTS = gpu_facts(GPU_MODELS, form_factor_rules())
CNY = FxRate.per_usd("CNY", datetime(2026, 1, 1).date(), Decimal("7.2"), "test")
SPOT_UNDER_2 = {"name": "spot-under-2", "kind": "spot_price_below", "threshold": 2.0,
                "currency": "USD", "gpu_model": "A100", "channels": ["console"]}  # fmt: skip
CHEAP = {"name": "cheap-a100-spot", "kind": "spot_price_below", "threshold": 1.10,
         "currency": "USD", "gpu_model": "A100", "channels": ["console", "slack"]}  # fmt: skip


def _aws(od: str, spot: str, p5: str, p5_3y: str, *, p3: bool, g6: bool) -> list[PriceRecord]:
    records = [
        offer(od),
        offer(spot, kind="spot", zone="use1-az1"),
        offer("8.159056", kind="reserved", term=36, payment="all_upfront"),
        offer("13.921094", kind="reserved", term=12, payment="no_upfront"),
        offer(p5, itype="p5.48xlarge"),
        offer(p5_3y, itype="p5.48xlarge", kind="reserved", term=36, payment="all_upfront"),
    ]
    if p3:
        records.append(offer("3.06", itype="p3.2xlarge", gpu=("V100", 1, 16)))
    if g6:
        records.append(offer("0.8048", itype="g6.xlarge", gpu=("L4", 1, 24)))
    return records


def _lambda(a100: str, *, h100: bool) -> list[PriceRecord]:
    records = [_one("lambdalabs", "gpu_1x_a100", a100, ("A100", 1, 40))]
    if h100:
        sold_out = _one("lambdalabs", "gpu_1x_h100_sxm5", "1.99", ("H100", 1, 80))
        records += [
            _one("lambdalabs", "gpu_1x_h100_pcie", "2.49", ("H100", 1, 80)),
            dataclasses.replace(sold_out, available=False),
        ]
    return records


def _one(provider: str, itype: str, price: str, gpu: tuple[str, float, float]) -> PriceRecord:
    return offer(price, provider=provider, itype=itype, gpu=gpu)


def _tencent(price: str) -> list[PriceRecord]:
    return [
        offer(price, provider="tencent", region="ap-guangzhou", zone="ap-guangzhou-6",
              itype="GT4.41XLARGE948", kind="spot", currency="CNY", gpu=("A100", 8, 40))
    ]  # fmt: skip


# Built stores by (now, fx), with what their alert runs printed: written once per test
# process through the real store and alert runs (about a second each), then copied.
_BUILT: dict[tuple[datetime, bool], tuple[Path, str]] = {}


def scenario(path: Path, now: datetime = NOW, *, fx: bool = True) -> Bench:
    """The table above as a new store at `path`, `now` being the review's now. The first call
    for a (`now`, `fx`) writes it; later ones copy that file (the tests only read it or add
    to their own copy)."""
    if (now, fx) not in _BUILT:
        folder = Path(tempfile.mkdtemp(prefix="review-scenario-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        built = _build(folder / "prices.duckdb", now, fx=fx)
        _BUILT[now, fx] = (built.path, built.console.getvalue())
    master, printed = _BUILT[now, fx]
    shutil.copyfile(master, path)
    wal = Path(f"{master}.wal")  # none once every connection closed; copied if there is one
    if wal.exists():
        shutil.copyfile(wal, f"{path}.wal")
    return Bench(path, fx=[CNY] if fx else [], console=io.StringIO(printed))


# `then` counts prices confirmed within twice the interval (2 h here) before it, so a store built
# some minutes ago reviews at the wall clock exactly as one built now.
_LIVE_REUSE = timedelta(minutes=10)
_live: list[datetime] = []


def scenario_now(path: Path) -> Bench:
    """The scenario ending at about the real now (the CLI reviews at the wall clock): built at
    most once every ten minutes, then copied."""
    now = datetime.now(UTC)
    if not _live or now - _live[-1] > _LIVE_REUSE:
        _live.append(now)
    return scenario(path, _live[-1])


def _build(path: Path, now: datetime, *, fx: bool) -> Bench:
    bench = Bench(path, fx=[CNY] if fx else [])
    old, mid, new = look_back(now, Since(6, "mo")) - 60 * MIN, look_back(now, Since(4, "mo")), now
    for at, od, spot, p5, p5_3y, a100 in (
        (old, "32.7726", "9.8328", "98.32", "43.00", "1.29"),
        (mid, "32.7726", "9.8328", "98.32", "43.00", "1.19"),
    ):
        bench.collect(_aws(od, spot, p5, p5_3y, p3=True, g6=False), at, regions=None)
        bench.collect(_lambda(a100, h100=False), at, provider="lambdalabs", regions=None)
        bench.collect(_tencent("64.00"), at, provider="tencent", regions=None)
        if at == old:
            _alerts(bench, old + 10 * MIN)
    aws = _aws("21.957642", "8.0468", "55.04", "22.016", p3=False, g6=True)
    bench.collect(aws, new - 60 * MIN, regions=None)
    bench.collect(_lambda("1.10", h100=True), new - 60 * MIN, provider="lambdalabs", regions=None)
    stale = datetime.now(UTC) - timedelta(hours=3)  # over twice the 1 h interval: stale
    paperspace = [_one("paperspace", "gpu-h100x1-80gb", "1.50", ("H100", 1, 80))]
    bench.collect(paperspace, new - 60 * MIN, provider="paperspace", regions=None,
                  finished_at=stale)  # fmt: skip
    _alerts(bench, new - 40 * MIN)
    bench.collect(_tencent("56.00"), new - 20 * MIN, provider="tencent", regions=None)
    _alerts(bench, new - 10 * MIN)
    with connect(path, read_only=False) as con, transaction(con):
        replace_gpu_facts(con, GPU_FACTS)  # what every collection of the tracker writes
    return bench


def collect_every(
    bench: Bench, records: list[PriceRecord], at: datetime, provider: str, interval_s: int
) -> None:
    """One collection of `provider` (all its regions) scheduled every `interval_s`, as the
    daemon records it."""
    Store(bench.path, fx_rates=bench.fx).write_run(
        provider, records, started_at=at, observed_at=at, regions=None, interval_seconds=interval_s
    )


def _alerts(bench: Bench, at: datetime) -> None:
    notifiers = {"console": ConsoleNotifier(bench.console), "slack": Unavailable("slack", "off")}
    bench.check(rules(SPOT_UNDER_2, CHEAP, slack={}), at, notifiers)
