"""The migrations of the price history and its bookkeeping: the intervals, the collection runs,
the dated FX rates and the prices a run skipped (`storage.migrations`; append only).
"""

from __future__ import annotations

# Migration 12: the intervals of GCP's N1-attached GPUs priced alone, and their columns.
_ATTACHED = (
    "provider = 'gcp' AND instance_type IN"
    " ('nvidia-tesla-t4', 'nvidia-tesla-v100', 'nvidia-tesla-p100', 'nvidia-tesla-p4')"
)
_ATTACHED_COLUMNS = """offer_key, provider, region, zone, instance_type, price_kind, term_months,
    payment_option, offering_class, currency, price_per_hour, upfront_total, gpu_model,
    gpu_count, gpu_memory_gib, vcpus, memory_gib, valid_from, valid_to, last_seen, run_id,
    available"""


# Each migration: (version, name, statements). Append only; `storage.migrations.runner` orders
# them by version across the modules of this room.
STEPS: list[tuple[int, str, list[str]]] = [
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
        9,
        "the computed columns of the prices view, stored",
        [
            # The `prices` view's computed columns of an interval (NULL: not derived), stored
            # by the writes and read back by the view with a plain scan
            # (storage.writes.derived.DERIVE).
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
    (
        13,
        "held runs",
        [
            # docs/trust.md: an answer that would rewrite history is stored as a 'held' run.
            # DuckDB cannot change a CHECK in place: the table is rebuilt, every row kept.
            """
            CREATE TABLE runs_held (
                run_id BIGINT PRIMARY KEY,
                provider VARCHAR NOT NULL,
                started_at TIMESTAMPTZ NOT NULL,
                finished_at TIMESTAMPTZ,
                status VARCHAR NOT NULL CHECK (status IN ('ok', 'failed', 'skipped', 'held')),
                records INTEGER NOT NULL DEFAULT 0,
                changed INTEGER NOT NULL DEFAULT 0,
                error VARCHAR,
                interval_seconds INTEGER,
                observed_at TIMESTAMPTZ
            )
            """,
            "INSERT INTO runs_held SELECT * FROM runs",
            "DROP TABLE runs",
            "ALTER TABLE runs_held RENAME TO runs",
            # What held a run (storage.writes.suspect): its rule, and the open offers it was
            # compared with, so the next answer can be found to agree.
            """
            CREATE TABLE held_runs (
                run_id BIGINT PRIMARY KEY,
                rule VARCHAR NOT NULL,
                open_offers INTEGER NOT NULL,
                fingerprint VARCHAR NOT NULL
            )
            """,
        ],
    ),
    (
        14,
        "raw answers kept per run",
        [
            # docs/trust.md: the answers a run received, as kept in the raw folder (JSON list
            # of name, sha256, bytes), and the regions it covered (JSON list; NULL: all of the
            # provider's), which `gpu-tracker reparse` needs to judge withdrawals as it did.
            "ALTER TABLE runs ADD COLUMN raw VARCHAR",
            "ALTER TABLE runs ADD COLUMN covered VARCHAR",
        ],
    ),
    (
        17,
        "open intervals kept apart for the write",
        [
            # storage/writes/open_offers.py: one row per open interval of the history, where it
            # lies there and what a write compares; filled from the history by the first write
            # of each provider, which finds it does not match.
            """
            CREATE TABLE open_offers (
                row BIGINT,
                run_id BIGINT NOT NULL,
                offer_key VARCHAR NOT NULL,
                provider VARCHAR NOT NULL,
                valid_from TIMESTAMPTZ NOT NULL,
                price_per_hour DECIMAL(18, 6) NOT NULL,
                upfront_total DECIMAL(18, 6),
                available BOOLEAN,
                facts UBIGINT NOT NULL,
                region VARCHAR,
                zone VARCHAR,
                instance_type VARCHAR NOT NULL,
                price_kind VARCHAR NOT NULL
            )
            """,
        ],
    ),
]
