"""Schema migrations, recorded in `schema_migrations` and applied in order, once each; then the
views (`storage.views`) recreated wherever their definitions changed.

The tables are internal and change here, with a new migration, never by editing an applied
one. The views are the public SQL surface (docs/sql.md) and live in `storage.views` only: the
migrations of older releases created them too, and `migrate()` replaces those with the current
definitions (a store made by any release ends with the same views as a fresh one).
"""

from __future__ import annotations

from typing import Any

import duckdb

from storage import views
from storage.connection import transaction

_BOOKKEEPING = (
    "CREATE TABLE IF NOT EXISTS schema_migrations ("
    " version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, applied_at TIMESTAMPTZ NOT NULL)"
)

# Migration 12: the intervals of GCP's N1-attached GPUs priced alone, and their columns.
_ATTACHED = (
    "provider = 'gcp' AND instance_type IN"
    " ('nvidia-tesla-t4', 'nvidia-tesla-v100', 'nvidia-tesla-p100', 'nvidia-tesla-p4')"
)
_ATTACHED_COLUMNS = """offer_key, provider, region, zone, instance_type, price_kind, term_months,
    payment_option, offering_class, currency, price_per_hour, upfront_total, gpu_model,
    gpu_count, gpu_memory_gib, vcpus, memory_gib, valid_from, valid_to, last_seen, run_id,
    available"""

# Each migration: (version, name, statements). Append only.
MIGRATIONS: list[tuple[int, str, list[str]]] = [
    (
        1,
        "price history, runs, public views",
        [
            "CREATE SEQUENCE run_ids START 1",
            """
            CREATE TABLE runs (
                run_id BIGINT PRIMARY KEY,
                provider VARCHAR NOT NULL,
                started_at TIMESTAMPTZ NOT NULL,
                finished_at TIMESTAMPTZ,
                status VARCHAR NOT NULL CHECK (status IN ('ok', 'failed', 'skipped')),
                records INTEGER NOT NULL DEFAULT 0,
                changed INTEGER NOT NULL DEFAULT 0,
                error VARCHAR,
                interval_seconds INTEGER,
                observed_at TIMESTAMPTZ
            )
            """,
            # No primary key or index on purpose: DuckDB's ART indexes slow bulk inserts and the
            # change-only merge joins on offer_key with hash joins anyway. offer_key is the
            # offer's identity as one string, so NULL-able parts (zone, term) compare as values.
            """
            CREATE TABLE price_intervals (
                offer_key VARCHAR NOT NULL,
                provider VARCHAR NOT NULL,
                region VARCHAR NOT NULL,
                zone VARCHAR,
                instance_type VARCHAR NOT NULL,
                price_kind VARCHAR NOT NULL,
                term_months INTEGER,
                payment_option VARCHAR,
                offering_class VARCHAR,
                currency VARCHAR NOT NULL,
                price_per_hour DECIMAL(18, 6) NOT NULL,
                upfront_total DECIMAL(18, 6),
                gpu_model VARCHAR NOT NULL,
                gpu_count DOUBLE NOT NULL,
                gpu_memory_gib DOUBLE NOT NULL,
                vcpus DOUBLE,
                memory_gib DOUBLE,
                valid_from TIMESTAMPTZ NOT NULL,
                valid_to TIMESTAMPTZ,
                last_seen TIMESTAMPTZ NOT NULL,
                run_id BIGINT NOT NULL
            )
            """,
        ],
    ),
    (
        2,
        "availability, dated FX rates, USD columns",
        [
            # NULL where the provider does not say whether it has capacity.
            "ALTER TABLE price_intervals ADD COLUMN available BOOLEAN",
            # USD per one unit of `currency`, as configured in [fx] (the store keeps what the
            # config said, so a query months later shows the rate a price was converted at).
            """
            CREATE TABLE fx_rates (
                currency VARCHAR NOT NULL,
                as_of DATE NOT NULL,
                usd_per_unit DECIMAL(18, 9) NOT NULL CHECK (usd_per_unit > 0),
                source VARCHAR,
                PRIMARY KEY (currency, as_of)
            )
            """,
        ],
    ),
    (
        3,
        "alert events and per-rule state",
        [
            "CREATE SEQUENCE alert_event_ids START 1",
            # One row per alert per channel, written as 'pending' before it is sent: a send
            # that fails stays pending (attempts, next_attempt_at) until it succeeds or runs
            # out of attempts ('failed'). last_error is redacted: never a webhook URL.
            """
            CREATE TABLE alert_event_log (
                event_id BIGINT PRIMARY KEY,
                rule VARCHAR NOT NULL,
                subject VARCHAR NOT NULL,
                fired_at TIMESTAMPTZ NOT NULL,
                value DOUBLE,
                threshold DOUBLE,
                channel VARCHAR NOT NULL,
                status VARCHAR NOT NULL CHECK (status IN ('sent', 'failed', 'pending')),
                detail VARCHAR NOT NULL,
                facts VARCHAR NOT NULL,
                attempts INTEGER NOT NULL DEFAULT 0,
                next_attempt_at TIMESTAMPTZ NOT NULL,
                last_error VARCHAR,
                sent_at TIMESTAMPTZ
            )
            """,
            # Edge triggering: a rule fires for a subject when its condition starts to hold
            # (active false -> true) and re-arms when it clears. last_value: the value it last
            # fired at (a new_low fires again only below it).
            """
            CREATE TABLE alert_state (
                rule VARCHAR NOT NULL,
                subject VARCHAR NOT NULL,
                active BOOLEAN NOT NULL,
                since TIMESTAMPTZ,
                last_fired_at TIMESTAMPTZ,
                last_value DOUBLE,
                PRIMARY KEY (rule, subject)
            )
            """,
        ],
    ),
    (
        4,
        "prices skipped by the store's validation, per run and reason",
        [
            # A table of its own rather than columns of `runs`: the reasons are a list.
            """
            CREATE TABLE run_skips (
                run_id BIGINT NOT NULL,
                reason VARCHAR NOT NULL,
                rows INTEGER NOT NULL CHECK (rows > 0),
                PRIMARY KEY (run_id, reason)
            )
            """,
        ],
    ),
    (
        5,
        "GPU throughput for the FLOPs-per-dollar columns",
        [
            # Replaced from the tracker's GPU table on every write, like fx_rates from [fx]:
            # the store keeps what it was told, the views join it by model.
            """
            CREATE TABLE gpu_facts (
                gpu_model VARCHAR PRIMARY KEY,
                fp16_tflops DOUBLE CHECK (fp16_tflops > 0)
            )
            """,
        ],
    ),
    (
        6,
        "spot interruption bands (AWS Spot Advisor)",
        [
            # Replaced per provider by each collection that brings them; no history: the
            # Advisor publishes the trailing month's band, not a series.
            """
            CREATE TABLE interruption_bands (
                provider VARCHAR NOT NULL,
                region VARCHAR NOT NULL,
                instance_type VARCHAR NOT NULL,
                band VARCHAR NOT NULL,
                band_low DECIMAL(6, 4) NOT NULL CHECK (band_low >= 0),
                band_high DECIMAL(6, 4) NOT NULL CHECK (band_high <= 1 AND band_high >= band_low),
                savings_pct INTEGER,
                as_of TIMESTAMPTZ NOT NULL
            )
            """,
        ],
    ),
    (
        7,
        "prices without a region or a known GPU model",
        [
            # docs/sql.md: RunPod prices name no region, a Vultr plan sold out everywhere lists
            # none; an offer whose GPU count is known but whose model is not is stored with
            # gpu_model NULL and named in the run summary, never dropped.
            "ALTER TABLE price_intervals ALTER COLUMN region DROP NOT NULL",
            "ALTER TABLE price_intervals ALTER COLUMN gpu_model DROP NOT NULL",
        ],
    ),
    (
        8,
        "a marketplace's offer counts per group",
        [
            # Change-only like the prices: a count that did not change extends last_seen.
            """
            CREATE TABLE market_depth_intervals (
                provider VARCHAR NOT NULL,
                region VARCHAR,
                instance_type VARCHAR NOT NULL,
                offers INTEGER NOT NULL CHECK (offers > 0),
                valid_from TIMESTAMPTZ NOT NULL,
                valid_to TIMESTAMPTZ,
                last_seen TIMESTAMPTZ NOT NULL,
                run_id BIGINT NOT NULL
            )
            """,
        ],
    ),
    (
        9,
        "the computed columns of the prices view, stored",
        [
            # The `prices` view's computed columns of an interval (NULL: not derived), stored
            # by the writes and read back by the view with a plain scan (storage.views.DERIVE).
            # The views' recreation, which follows, fills them for the history already stored.
            *(
                f"ALTER TABLE price_intervals ADD COLUMN {column} DOUBLE"
                for column in (
                    "price_per_gpu_hour",
                    "price_per_hour_usd",
                    "price_per_gpu_hour_usd",
                    "gpu_tflops_fp16",
                    "pflop_per_usd",
                )
            ),
        ],
    ),
    (
        10,
        "GPU throughput per memory variant",
        [
            # A row with gpu_memory_gib NULL holds the model's figures (any memory); a row with
            # a memory, a variant's own (H100 NVL 94 GB): the views take the variant's row where
            # an interval's per-GPU memory matches it, else the model's. Rebuilt rather than
            # altered: the old primary key on gpu_model alone cannot hold a model's variants.
            "CREATE TABLE gpu_facts_by_model AS SELECT gpu_model, fp16_tflops FROM gpu_facts",
            "DROP TABLE gpu_facts",
            """
            CREATE TABLE gpu_facts (
                gpu_model VARCHAR NOT NULL,
                gpu_memory_gib DOUBLE CHECK (gpu_memory_gib > 0),
                fp16_tflops DOUBLE CHECK (fp16_tflops > 0)
            )
            """,
            "INSERT INTO gpu_facts SELECT gpu_model, NULL, fp16_tflops FROM gpu_facts_by_model",
            "DROP TABLE gpu_facts_by_model",
        ],
    ),
    (
        11,
        "GPU instance types seen without facts",
        [
            # A type an answer listed but no one gave a GPU count for, so none of its prices
            # could be stored (`gpu-tracker gpus --unknown`). Written with each run; a row is
            # deleted once a run of its provider prices the type. `reason` leaves room for other
            # kinds of missing facts; today it is always 'no GPU count'.
            """
            CREATE TABLE unknown_gpu_types (
                provider VARCHAR NOT NULL,
                instance_type VARCHAR NOT NULL,
                reason VARCHAR NOT NULL,
                first_seen TIMESTAMPTZ NOT NULL,
                last_seen TIMESTAMPTZ NOT NULL,
                run_id BIGINT NOT NULL,
                PRIMARY KEY (provider, instance_type)
            )
            """,
        ],
    ),
    (
        12,
        "GCP's GPUs attached to N1 machines out of the price history",
        [
            # docs/gpus.md: every row of `prices` is something a user can rent whole. Earlier
            # releases stored the GPUs Google attaches to N1 machines priced alone, per GPU
            # (instance_type = the accelerator name); they are now priced with their hosts under
            # other keys, and these intervals, values unchanged, are kept in a table of their
            # own behind the view `gcp_attached_gpus`. Nothing writes to it any more.
            """
            CREATE TABLE gcp_attached_gpu_intervals (
                offer_key VARCHAR NOT NULL,
                provider VARCHAR NOT NULL,
                region VARCHAR,
                zone VARCHAR,
                instance_type VARCHAR NOT NULL,
                price_kind VARCHAR NOT NULL,
                term_months INTEGER,
                payment_option VARCHAR,
                offering_class VARCHAR,
                currency VARCHAR NOT NULL,
                price_per_hour DECIMAL(18, 6) NOT NULL,
                upfront_total DECIMAL(18, 6),
                gpu_model VARCHAR,
                gpu_count DOUBLE NOT NULL,
                gpu_memory_gib DOUBLE NOT NULL,
                vcpus DOUBLE,
                memory_gib DOUBLE,
                valid_from TIMESTAMPTZ NOT NULL,
                valid_to TIMESTAMPTZ,
                last_seen TIMESTAMPTZ NOT NULL,
                run_id BIGINT NOT NULL,
                available BOOLEAN
            )
            """,
            f"""
            INSERT INTO gcp_attached_gpu_intervals
            SELECT {_ATTACHED_COLUMNS} FROM price_intervals WHERE {_ATTACHED}
            """,
            f"DELETE FROM price_intervals WHERE {_ATTACHED}",
        ],
    ),
]

_VERSIONS = [version for version, _, _ in MIGRATIONS]
_STATE = (
    "SELECT (SELECT list(version ORDER BY version) FROM schema_migrations),"
    " (SELECT min(digest) FROM schema_views)"
)


def migrate(con: Any) -> list[int]:
    """Apply every migration not yet recorded, each in its own transaction, then bring the views
    up to date in one more; return the versions applied. Call it outside a transaction."""
    if _up_to_date(con):
        return []
    applied = []
    for version, name, statements in _pending(con):
        with transaction(con):
            _apply(con, version, name, statements)
        applied.append(version)
    if applied or views.stored_digest(con) != views.DIGEST:
        with transaction(con):
            views.create_views(con)
    return applied


def migrate_uncommitted(con: Any) -> None:
    """Apply every pending migration and the views inside the caller's open transaction,
    unrecorded unless the caller commits: a dry run sees the current schema on an old store
    and rolls it all back."""
    pending = _pending(con)
    for version, name, statements in pending:
        _apply(con, version, name, statements)
    if pending or views.stored_digest(con) != views.DIGEST:
        views.create_views(con)


def _up_to_date(con: Any) -> bool:
    """Whether every migration and the current views are in, in one statement: it runs before
    every write."""
    try:
        versions, digest = con.execute(_STATE).fetchall()[0]
    except duckdb.CatalogException:  # a new store, or one from before `schema_views`
        return False
    return bool(versions == _VERSIONS and digest == views.DIGEST)


def _pending(con: Any) -> list[tuple[int, str, list[str]]]:
    con.execute(_BOOKKEEPING)
    done = {row[0] for row in con.execute("SELECT version FROM schema_migrations").fetchall()}
    return [m for m in MIGRATIONS if m[0] not in done]


def _apply(con: Any, version: int, name: str, statements: list[str]) -> None:
    for statement in statements:
        con.execute(statement)
    con.execute("INSERT INTO schema_migrations VALUES (?, ?, now())", [version, name])
