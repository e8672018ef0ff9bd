"""The export's side of the store: what each Parquet file of an export would hold now (a
fingerprint per file group), and the groups that changed written as Parquet by DuckDB itself.

A group is one partition of `prices` (provider, month of `valid_from` in UTC) split in two:
its closed intervals (`valid_to` set: they never change again) and its open ones (the current
prices, whose `last_seen` moves with every collection that confirms them). So a collection
that confirms a price rewrites the small file of open intervals, never the partition's history.
`collection_runs` is one more group. Fingerprints cover every column of every row (the `prices`
view as it reads now, `last_seen` and the USD columns included), and the columns' names and
types: any change a reader could see makes a group change.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from collectors.common import StoreError

# Bumped when the layout or the way files are written changes: every group is then rewritten.
LAYOUT = 1
RUNS = "runs"
# Types every engine reads the same (Spark, BigQuery, Athena, DuckDB, Polars), as docs/export.md
# lists them. DuckDB writes TIMESTAMPTZ as Parquet TIMESTAMP(isAdjustedToUTC=true, MICROS), the
# form Spark and BigQuery accept (never nanoseconds, never INT96).
PORTABLE_TYPES = {
    "VARCHAR",
    "BOOLEAN",
    "INTEGER",
    "BIGINT",
    "DOUBLE",
    "TIMESTAMP WITH TIME ZONE",
}
_MONTH = "strftime(valid_from, '%Y-%m')"
_PART = "CASE WHEN valid_to IS NULL THEN 'open' ELSE 'closed' END"


@dataclass(frozen=True, order=True)
class Group:
    """One set of files of an export: a partition's closed or open intervals, or the runs."""

    provider: str
    month: str
    part: str  # 'closed' | 'open' | 'runs'

    @property
    def directory(self) -> str:
        """Where its files go, relative to the export's root."""
        if self.part == RUNS:
            return RUNS
        return f"provider={self.provider}/month={self.month}"

    @property
    def key(self) -> str:
        return f"{self.directory}/{self.part}"


RUNS_GROUP = Group("", "", RUNS)


def fingerprints(con: Any) -> dict[Group, tuple[int, str]]:
    """Every group the store holds now: its rows and the fingerprint of its content."""
    columns = _columns(con, "prices")
    schema = _schema_digest(columns)
    hashed = ", ".join(_quote(name) for name, _ in columns)
    rows = con.execute(
        f"SELECT provider, {_MONTH} AS month, {_PART} AS part, count(*), "
        f"CAST(sum(hash({hashed})) AS VARCHAR) FROM prices GROUP BY ALL"
    ).fetchall()
    found = {Group(p, m, part): (n, f"{schema}:{n}:{h}") for p, m, part, n, h in rows}
    run_columns = _columns(con, "collection_runs")
    hashed = ", ".join(_quote(name) for name, _ in run_columns)
    n, h = con.execute(
        f"SELECT count(*), CAST(sum(hash({hashed})) AS VARCHAR) FROM collection_runs"
    ).fetchall()[0]
    found[RUNS_GROUP] = (n, f"{_schema_digest(run_columns)}:{n}:{h}")
    return found


def stage(con: Any, groups: list[Group], directory: Path) -> dict[Group, list[Path]]:
    """Write `groups` as Parquet under `directory` (a local staging folder), one or more files
    each; the files of each group, in name order. Partition columns are not repeated inside
    the files: readers take `provider` and `month` from the path."""
    wanted = [g for g in groups if g.part != RUNS]
    staged: dict[Group, list[Path]] = {}
    if wanted:
        _copy_prices(con, wanted, directory / "prices")
        for group in wanted:
            folder = directory / "prices" / group.directory / f"part={group.part}"
            staged[group] = sorted(folder.glob("*.tmp"))
    if RUNS_GROUP in groups:
        target = directory / "runs.tmp"
        con.execute(f"COPY (SELECT * FROM collection_runs) TO '{_path(target)}' (FORMAT parquet)")
        staged[RUNS_GROUP] = [target]
    return staged


def _copy_prices(con: Any, groups: list[Group], directory: Path) -> None:
    columns = _columns(con, "prices")
    names = ", ".join(_quote(name) for name, _ in columns)
    source = f"SELECT {names}, {_MONTH} AS month, {_PART} AS part FROM prices"
    con.register(
        "export_groups",
        pa.table(
            {
                "provider": [g.provider for g in groups],
                "month": [g.month for g in groups],
                "part": [g.part for g in groups],
            }
        ),
    )
    con.execute(
        f"COPY (SELECT * FROM ({source}) SEMI JOIN export_groups USING (provider, month, part))"
        f" TO '{_path(directory)}' (FORMAT parquet, PARTITION_BY (provider, month, part), "
        "FILENAME_PATTERN 'data_{i}', FILE_EXTENSION 'tmp')"
    )
    # Only once the COPY worked: after a failed one (a full disk) the transaction is aborted,
    # and DuckDB would answer this with "Current transaction is aborted", hiding the cause.
    # The registration ends with the connection anyway.
    con.unregister("export_groups")


def _columns(con: Any, view: str) -> list[tuple[str, str]]:
    described = con.execute(f"DESCRIBE {view}").fetchall()
    columns = [(str(row[0]), str(row[1])) for row in described]
    odd = [f"{name} {kind}" for name, kind in columns if kind not in PORTABLE_TYPES]
    if odd:  # a view change brought a type not every engine reads: say so, do not export it
        raise StoreError(f"cannot export {view}: columns of types other engines misread: {odd}")
    return columns


def _schema_digest(columns: list[tuple[str, str]]) -> str:
    text = repr((LAYOUT, columns))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _path(path: Path) -> str:
    return str(path).replace("'", "''")
