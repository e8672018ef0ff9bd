"""The change-only price history: one provider's collection merged in one transaction.

A price confirmed again extends `last_seen`; a changed price closes the open interval and opens
a new one; an offer missing from a collection that covered its region is closed; a provider's
own timestamp (spot history) starts its interval. Everything is set-based SQL over an Arrow
table of the run's records: no row-by-row statements.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from operator import attrgetter
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from collectors.base import PriceRecord, StoreError
from storage.connection import connect, scalar
from storage.fx import FxRate, replace_rates
from storage.migrations import migrate

DEFAULT_PATH = Path("prices.duckdb")

_MONEY = pa.decimal128(18, 6)
_TS = pa.timestamp("us", tz="UTC")
ARROW_SCHEMA = pa.schema(
    [
        ("provider", pa.string()),
        ("region", pa.string()),
        ("zone", pa.string()),
        ("instance_type", pa.string()),
        ("price_kind", pa.string()),
        ("term_months", pa.int32()),
        ("payment_option", pa.string()),
        ("offering_class", pa.string()),
        ("currency", pa.string()),
        ("price_per_hour", _MONEY),
        ("upfront_total", _MONEY),
        ("gpu_model", pa.string()),
        ("gpu_count", pa.float64()),
        ("gpu_memory_gib", pa.float64()),
        ("vcpus", pa.float64()),
        ("memory_gib", pa.float64()),
        ("effective_at", _TS),
        ("available", pa.bool_()),
    ]
)
_COLUMNS = [f.name for f in ARROW_SCHEMA]
_FIELDS = attrgetter(*_COLUMNS)

# The offer's identity as one string: NULL parts become '' so they compare as values.
_OFFER_KEY = """concat_ws('|', provider, region, coalesce(zone, ''), instance_type, price_kind,
    coalesce(CAST(term_months AS VARCHAR), ''), coalesce(payment_option, ''),
    coalesce(offering_class, ''), currency)"""

# Incoming price points (no provider timestamp = observed now).
_STAGE_INCOMING = f"""
CREATE TEMP TABLE incoming AS
SELECT *, {_OFFER_KEY} AS offer_key, coalesce(effective_at, $observed) AS ts FROM batch
"""

# Two prices for one offer at one moment would be a collector bug: refuse rather than guess.
_DUPLICATE_POINTS = """
SELECT count(*) - count(DISTINCT (offer_key, ts)) FROM incoming
"""

# An offer whose intervals are all closed (withdrawn) and that comes back with a provider
# timestamp from before the last one ended (AWS spot history: "this price since <earlier>")
# would overlap history already recorded. Its return is dated from that end instead, with the
# newest of the points at or before it; points after it stand as they are.
# (Staged after open_now: only offers without an open interval are looked up, few of them.)
_STAGE_CLOSED = """
CREATE TEMP TABLE closed_end AS
WITH coming_back AS (
    SELECT DISTINCT offer_key FROM incoming ANTI JOIN open_now USING (offer_key)
)
SELECT p.offer_key, max(p.valid_to) AS last_end
FROM price_intervals p SEMI JOIN coming_back r ON p.offer_key = r.offer_key
WHERE p.provider = $provider
GROUP BY p.offer_key
"""

_DROP_SUPERSEDED = """
DELETE FROM incoming i USING closed_end c
WHERE i.offer_key = c.offer_key AND i.ts < c.last_end
  AND EXISTS (SELECT 1 FROM incoming j
              WHERE j.offer_key = i.offer_key AND j.ts > i.ts AND j.ts <= c.last_end)
"""

_DATE_FROM_CLOSED = """
UPDATE incoming i SET ts = c.last_end
FROM closed_end c WHERE i.offer_key = c.offer_key AND i.ts < c.last_end
"""

# The open interval of every offer this run saw.
_STAGE_OPEN = """
CREATE TEMP TABLE open_now AS
SELECT p.offer_key, p.price_per_hour, p.upfront_total, p.available, p.valid_from
FROM price_intervals p SEMI JOIN incoming i ON p.offer_key = i.offer_key
WHERE p.provider = $provider AND p.valid_to IS NULL
"""

_META = """provider, region, zone, instance_type, price_kind, term_months, payment_option,
    offering_class, currency, gpu_model, gpu_count, gpu_memory_gib, vcpus, memory_gib"""

# What a change is: the price, the upfront part, or the provider's word on capacity.
_STATE = "(price_per_hour, upfront_total, available)"

# The sequence of prices per offer: the open interval first, then incoming points after it.
# Points at or before the open interval's start are history already recorded, except when the
# newest of them contradicts the open price: then the change is dated to this observation.
# Consecutive equal prices collapse; each kept point ends where the next one starts.
_STAGE_SEQUENCE = f"""
CREATE TEMP TABLE sequence AS
WITH points AS (
    SELECT offer_key, price_per_hour, upfront_total, available, valid_from AS ts, true AS existing,
           {", ".join(f"NULL AS {c.strip()}" for c in _META.split(","))}
    FROM open_now
    UNION ALL
    SELECT i.offer_key, i.price_per_hour, i.upfront_total, i.available, i.ts, false, {_META}
    FROM incoming i LEFT JOIN open_now o USING (offer_key)
    WHERE o.valid_from IS NULL OR i.ts > o.valid_from
    UNION ALL
    SELECT l.offer_key, l.price_per_hour, l.upfront_total, l.available, $observed, false, {_META}
    FROM (SELECT DISTINCT ON (offer_key) * FROM incoming SEMI JOIN open_now USING (offer_key)
          ORDER BY offer_key, ts DESC) l
    JOIN open_now o USING (offer_key)
    WHERE l.ts <= o.valid_from
      AND (l.price_per_hour, l.upfront_total, l.available)
          IS DISTINCT FROM (o.price_per_hour, o.upfront_total, o.available)
      AND NOT EXISTS (
          SELECT 1 FROM incoming n WHERE n.offer_key = l.offer_key AND n.ts > o.valid_from)
), marked AS (
    SELECT *, existing OR {_STATE} IS DISTINCT FROM lag({_STATE}) OVER (
        PARTITION BY offer_key ORDER BY ts, existing DESC
    ) AS keep
    FROM points
)
SELECT * EXCLUDE (keep),
       lead(ts) OVER (PARTITION BY offer_key ORDER BY ts, existing DESC) AS next_ts
FROM marked WHERE keep
"""

_EXTEND_OR_CLOSE = """
UPDATE price_intervals AS p
SET valid_to = s.next_ts,
    last_seen = CASE WHEN s.next_ts IS NULL THEN $observed ELSE p.last_seen END
FROM sequence s
WHERE s.existing AND p.offer_key = s.offer_key AND p.provider = $provider AND p.valid_to IS NULL
"""

_INSERT_NEW = """
INSERT INTO price_intervals BY NAME
SELECT offer_key, provider, region, zone, instance_type, price_kind, term_months,
       payment_option, offering_class, currency, price_per_hour, upfront_total,
       gpu_model, gpu_count, gpu_memory_gib, vcpus, memory_gib, available,
       ts AS valid_from, next_ts AS valid_to, $observed AS last_seen, $run_id AS run_id
FROM sequence
WHERE NOT existing
"""

_CLOSE_WITHDRAWN = """
UPDATE price_intervals AS p
SET valid_to = $observed
WHERE p.provider = $provider AND p.valid_to IS NULL
  AND ($all_regions OR list_contains($regions, p.region))
  AND NOT list_contains($keep_open, p.instance_type)
  AND NOT EXISTS (SELECT 1 FROM incoming i WHERE i.offer_key = p.offer_key)
"""


@dataclass(frozen=True)
class RunResult:
    run_id: int
    records: int
    changed: int  # intervals opened plus offers withdrawn


def to_arrow(records: Sequence[PriceRecord]) -> pa.Table:
    """The records as an Arrow table in the store's column order and types."""
    if not records:
        return ARROW_SCHEMA.empty_table()
    columns = zip(*map(_FIELDS, records), strict=True)
    return pa.table(dict(zip(_COLUMNS, map(list, columns), strict=True)), schema=ARROW_SCHEMA)


class Store:
    """The DuckDB price store. Opens the file for each write and closes it at once."""

    def __init__(
        self,
        path: Path | str = DEFAULT_PATH,
        *,
        lock_wait_s: float = 30.0,
        fx_rates: Sequence[FxRate] | None = None,
    ) -> None:
        # A reader holds the file too while its query runs: a writer waits longer than a
        # reader would, so a slow `gpu-tracker sql` does not cost a collection.
        self.path = Path(path)
        self.lock_wait_s = lock_wait_s
        # The [fx] rates to keep in the store, synced with every write (None: leave them be).
        self.fx_rates = fx_rates

    def migrate(self) -> list[int]:
        with connect(self.path, read_only=False, wait_s=self.lock_wait_s) as con:
            return migrate(con)

    def write_run(
        self,
        provider: str,
        records: Sequence[PriceRecord],
        *,
        started_at: datetime,
        observed_at: datetime,
        regions: Sequence[str] | None,
        interval_seconds: int | None = None,
        keep_open: Collection[str] = (),
    ) -> RunResult:
        """Merge one provider's collection into the history: all of it lands, or none does.

        `regions` are the regions the collection covered (None: all of the provider's), so an
        offer is closed as withdrawn only where the collection looked for it. Offers of the
        instance types in `keep_open` (a row of theirs could not be read) are never closed as
        withdrawn: unconfirmed, they show as stale until a collection reads them again.
        """
        batch = to_arrow(records)
        params = {"provider": provider, "observed": observed_at}
        with connect(self.path, read_only=False, wait_s=self.lock_wait_s) as con:
            migrate(con)
            con.execute("BEGIN TRANSACTION")
            try:
                _refuse_out_of_order(con, provider, observed_at)
                run_id = int(scalar(con, "SELECT nextval('run_ids')"))
                con.register("batch", batch)
                changed = self._merge(con, params, run_id, regions, sorted(keep_open))
                if self.fx_rates is not None:
                    replace_rates(con, self.fx_rates)
                con.execute(
                    "INSERT INTO runs VALUES (?, ?, ?, now(), 'ok', ?, ?, NULL, ?, ?)",
                    [
                        run_id,
                        provider,
                        started_at,
                        len(records),
                        changed,
                        interval_seconds,
                        observed_at,
                    ],
                )
                con.execute("COMMIT")
            except (duckdb.Error, StoreError) as exc:
                con.execute("ROLLBACK")
                raise StoreError(f"{provider}: could not store the collection: {exc}") from exc
            finally:
                con.unregister("batch")
        return RunResult(run_id, len(records), changed)

    def _merge(
        self,
        con: Any,
        params: dict[str, Any],
        run_id: int,
        regions: Sequence[str] | None,
        keep_open: list[str],
    ) -> int:
        observed = {"observed": params["observed"]}
        con.execute(_STAGE_INCOMING, observed)
        duplicates = scalar(con, _DUPLICATE_POINTS)
        if duplicates:
            raise StoreError(
                f"{duplicates} records repeat an offer at the same moment with another price"
            )
        con.execute(_STAGE_OPEN, {"provider": params["provider"]})
        con.execute(_STAGE_CLOSED, {"provider": params["provider"]})
        if scalar(con, "SELECT count(*) FROM closed_end"):  # usually none: skip two statements
            con.execute(_DROP_SUPERSEDED)
            con.execute(_DATE_FROM_CLOSED)
        con.execute(_STAGE_SEQUENCE, observed)
        con.execute(_EXTEND_OR_CLOSE, params)
        opened = scalar(con, _INSERT_NEW, {**observed, "run_id": run_id})
        withdrawn = scalar(
            con,
            _CLOSE_WITHDRAWN,
            {
                **params,
                "all_regions": regions is None,
                "regions": list(regions or []),
                "keep_open": keep_open,
            },
        )
        for table in ("incoming", "closed_end", "open_now", "sequence"):
            con.execute(f"DROP TABLE {table}")
        return int(opened) + int(withdrawn)

    def open_offers(self, provider: str, regions: Sequence[str] | None) -> int:
        """How many offers of `provider` are current in `regions` (None: anywhere)."""
        if not self.path.exists():
            return 0
        # Read-write like every other connection of this process: DuckDB refuses two
        # configurations of one file in one process.
        with connect(self.path, read_only=False, wait_s=self.lock_wait_s) as con:
            migrate(con)
            return int(
                scalar(
                    con,
                    "SELECT count(*) FROM price_intervals WHERE provider = $provider"
                    " AND valid_to IS NULL AND ($all OR list_contains($regions, region))",
                    {"provider": provider, "all": regions is None, "regions": list(regions or [])},
                )
            )

    def record_run(
        self,
        provider: str,
        status: str,
        *,
        started_at: datetime,
        error: str | None = None,
        records: int = 0,
        interval_seconds: int | None = None,
    ) -> int:
        """Record a failed or skipped run (nothing of its prices is stored)."""
        with connect(self.path, read_only=False, wait_s=self.lock_wait_s) as con:
            migrate(con)
            run_id = int(scalar(con, "SELECT nextval('run_ids')"))
            con.execute(
                "INSERT INTO runs VALUES (?, ?, ?, now(), ?, ?, 0, ?, ?, NULL)",
                [run_id, provider, started_at, status, records, error, interval_seconds],
            )
        return run_id


def _refuse_out_of_order(con: Any, provider: str, observed_at: datetime) -> None:
    """Two collections of one provider that commit out of order (the daemon and a manual
    `collect` started side by side) would interleave their observations into overlapping
    intervals. The older one is refused: the newer one already holds fresher prices."""
    newest = scalar(
        con,
        "SELECT max(observed_at) FROM runs WHERE provider = $provider AND status = 'ok'",
        {"provider": provider},
    )
    if newest is not None and observed_at < newest:
        raise StoreError(
            f"a newer collection of {provider} (observed {newest:%Y-%m-%d %H:%M:%S} UTC) was"
            f" stored meanwhile; this one (observed {observed_at:%Y-%m-%d %H:%M:%S} UTC) is"
            " dropped so the history stays in order"
        )
