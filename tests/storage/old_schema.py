"""The schema as the migrations before the views moved to `storage.views` built it: a frozen
copy, never edited, so a test can make a store exactly as an older release left it and watch
today's `migrate()` upgrade it."""

from __future__ import annotations

from typing import Any

OLD_MIGRATIONS: list[tuple[int, str, list[str]]] = [
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
            """
            CREATE VIEW prices AS
            SELECT provider, region, zone, instance_type, price_kind, term_months,
                   payment_option, offering_class, currency,
                   CAST(price_per_hour AS DOUBLE) AS price_per_hour,
                   CAST(upfront_total AS DOUBLE) AS upfront_total,
                   round(CAST(price_per_hour AS DOUBLE) / gpu_count, 6) AS price_per_gpu_hour,
                   gpu_model, gpu_count, gpu_memory_gib, vcpus, memory_gib,
                   valid_from, valid_to, last_seen
            FROM price_intervals
            """,
            # stale: the provider's last successful collection is older than twice its interval
            # (the interval the last run was scheduled with; 1 h when none was recorded), or
            # that collection did not confirm this price (its region is no longer collected).
            """
            CREATE VIEW latest_prices AS
            WITH last_ok AS (
                SELECT provider, max(finished_at) AS finished_at,
                       max(observed_at) AS observed_at
                FROM runs WHERE status = 'ok' GROUP BY provider
            ), intervals AS (
                SELECT provider, arg_max(interval_seconds, run_id) AS interval_seconds
                FROM runs WHERE interval_seconds IS NOT NULL GROUP BY provider
            )
            SELECT p.*,
                   coalesce(
                       epoch(now()) - epoch(l.finished_at)
                           > 2 * coalesce(i.interval_seconds, 3600)
                       OR p.last_seen < l.observed_at,
                       true
                   ) AS stale
            FROM prices p
            LEFT JOIN last_ok l USING (provider)
            LEFT JOIN intervals i USING (provider)
            WHERE p.valid_to IS NULL
            """,
            """
            CREATE VIEW collection_runs AS
            SELECT run_id, provider, started_at, finished_at, status, records, changed, error
            FROM runs
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
            """
            CREATE VIEW exchange_rates AS
            SELECT currency, as_of, CAST(usd_per_unit AS DOUBLE) AS usd_per_unit, source
            FROM fx_rates
            """,
            # The rate of an interval is the newest one dated on or before the interval's end
            # (today for a current price), the date taken in UTC whatever the reader's time
            # zone; when every rate is dated later, the oldest one. USD needs none; a currency
            # with no rate gets NULL, never a guess.
            """
            CREATE OR REPLACE VIEW prices AS
            WITH rated AS (
                SELECT p.*,
                       CASE WHEN p.currency = 'USD' THEN 1 ELSE coalesce(
                           (SELECT arg_max(f.usd_per_unit, f.as_of) FROM fx_rates f
                            WHERE f.currency = p.currency
                              AND f.as_of <= CAST(
                                  timezone('UTC', coalesce(p.valid_to, now())) AS DATE)),
                           (SELECT arg_min(f.usd_per_unit, f.as_of) FROM fx_rates f
                            WHERE f.currency = p.currency)) END AS usd_rate
                FROM price_intervals p
            )
            SELECT provider, region, zone, instance_type, price_kind, term_months,
                   payment_option, offering_class, currency,
                   CAST(price_per_hour AS DOUBLE) AS price_per_hour,
                   CAST(upfront_total AS DOUBLE) AS upfront_total,
                   round(CAST(price_per_hour AS DOUBLE) / gpu_count, 6) AS price_per_gpu_hour,
                   gpu_model, gpu_count, gpu_memory_gib, vcpus, memory_gib,
                   valid_from, valid_to, last_seen, available,
                   round(CAST(price_per_hour * usd_rate AS DOUBLE), 6) AS price_per_hour_usd,
                   round(CAST(price_per_hour * usd_rate AS DOUBLE) / gpu_count, 6)
                       AS price_per_gpu_hour_usd
            FROM rated
            """,
            # Unchanged but for the new columns of `prices` (a view's * is fixed when created).
            """
            CREATE OR REPLACE VIEW latest_prices AS
            WITH last_ok AS (
                SELECT provider, max(finished_at) AS finished_at,
                       max(observed_at) AS observed_at
                FROM runs WHERE status = 'ok' GROUP BY provider
            ), intervals AS (
                SELECT provider, arg_max(interval_seconds, run_id) AS interval_seconds
                FROM runs WHERE interval_seconds IS NOT NULL GROUP BY provider
            )
            SELECT p.*,
                   coalesce(
                       epoch(now()) - epoch(l.finished_at)
                           > 2 * coalesce(i.interval_seconds, 3600)
                       OR p.last_seen < l.observed_at,
                       true
                   ) AS stale
            FROM prices p
            LEFT JOIN last_ok l USING (provider)
            LEFT JOIN intervals i USING (provider)
            WHERE p.valid_to IS NULL
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
            """
            CREATE VIEW alert_events AS
            SELECT rule, subject, fired_at, value, threshold, channel, status, detail,
                   event_id, attempts, next_attempt_at, last_error, sent_at
            FROM alert_event_log
            """,
        ],
    ),
]


def build(con: Any, upto: int = 3) -> None:
    """Apply the frozen migrations up to version `upto` the way the old `migrate()` did."""
    con.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        " version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, applied_at TIMESTAMPTZ NOT NULL)"
    )
    for version, name, statements in OLD_MIGRATIONS:
        if version > upto:
            break
        con.execute("BEGIN TRANSACTION")
        for statement in statements:
            con.execute(statement)
        con.execute("INSERT INTO schema_migrations VALUES (?, ?, now())", [version, name])
        con.execute("COMMIT")
