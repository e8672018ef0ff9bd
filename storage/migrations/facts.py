"""The migrations of what the store is told around the prices: the GPUs' throughput, the spot
interruption bands, a marketplace's offer counts, the instance types seen without facts and the
transfer prices (`storage.migrations`; append only).
"""

from __future__ import annotations

# Each migration: (version, name, statements). Append only.
STEPS: list[tuple[int, str, list[str]]] = [
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
        15,
        "GPU throughput per form factor",
        [
            # A row with a form_factor holds a board's figures (H100 PCIe); the views take it
            # for an interval whose instance type a rule of gpu_form_factors says has that board
            # (docs/gpus.md, "Form factors"). Both replaced from the tracker's GPU table on every
            # write, like the other rows.
            "ALTER TABLE gpu_facts ADD COLUMN form_factor VARCHAR",
            """
            CREATE TABLE gpu_form_factors (
                provider VARCHAR,
                pattern VARCHAR NOT NULL,
                form_factor VARCHAR NOT NULL,
                position INTEGER NOT NULL
            )
            """,
        ],
    ),
    (
        16,
        "what moving data out costs, per tier",
        [
            # Change-only like the prices (docs/sql.md, `transfer_prices`): a tier confirmed
            # again extends last_seen, a new price or bound closes it and opens its successor.
            # region NULL: a provider's flat rate, the same in every region.
            """
            CREATE TABLE transfer_intervals (
                provider VARCHAR NOT NULL,
                region VARCHAR,
                direction VARCHAR NOT NULL CHECK (direction IN ('out_internet', 'out_region')),
                from_gib DOUBLE NOT NULL CHECK (from_gib >= 0),
                to_gib DOUBLE CHECK (to_gib > from_gib),
                currency VARCHAR NOT NULL,
                price_per_gib DECIMAL(18, 6) NOT NULL CHECK (price_per_gib >= 0),
                valid_from TIMESTAMPTZ NOT NULL,
                valid_to TIMESTAMPTZ,
                last_seen TIMESTAMPTZ NOT NULL,
                run_id BIGINT NOT NULL
            )
            """,
        ],
    ),
]
