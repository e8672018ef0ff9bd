"""A write the disk refused, in each wording DuckDB and the system use, said as one line; and
anything else (a lock, a damaged file) left alone."""

from __future__ import annotations

import errno

import duckdb
import pytest

from storage.writes.space import refused_write

WAL = "/data/prices.duckdb.wal"


@pytest.mark.parametrize(
    "error",
    [
        duckdb.TransactionException(
            f'TransactionContext Error: Failed to commit: Could not write file "{WAL}": '
            "No space left on device"
        ),
        duckdb.IOException(f'IO Error: Could not write file "{WAL}": No space left on device'),
        # An asynchronous write: the reason inside a JSON text, its quotes escaped.
        duckdb.IOException(
            "IO Error: Async write failed for range [offset=0, size=1860]: "
            '{"exception_type":"IO","exception_message":"Could not write file \\"'
            + WAL
            + '\\": No space left on device","errno":"28"}'
        ),
        OSError(errno.ENOSPC, "No space left on device", WAL),
    ],
)
def test_a_full_disk_is_named_with_its_file(error: BaseException) -> None:
    assert refused_write(error) == f"no space left on device writing {WAL}"


def test_the_first_error_is_found_behind_an_aborted_transaction() -> None:
    first = duckdb.IOException(f'IO Error: Could not write file "{WAL}": Disk quota exceeded')
    later = duckdb.TransactionException(
        "TransactionContext Error: Current transaction is aborted (please ROLLBACK)"
    )
    later.__context__ = first  # raised while handling the first, as a caller's cleanup would
    assert refused_write(later) == f"disk quota exceeded writing {WAL}"


@pytest.mark.parametrize(
    "error",
    [
        duckdb.IOException('IO Error: Could not set lock on file "/data/p.duckdb": Conflicting'),
        duckdb.IOException("IO Error: The file is not a valid DuckDB database file"),
        ValueError("no room for doubt"),
    ],
)
def test_other_errors_are_not_a_full_disk(error: BaseException) -> None:
    assert refused_write(error) is None
