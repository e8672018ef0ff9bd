"""[storage] query_timeout and write_wait: defaults, bounds, and the write wait outlasting a
query; every error names the key."""

from __future__ import annotations

import pytest

from collectors.common import ConfigError
from tracker.config import from_dict


def test_defaults_let_a_writer_outlast_any_query() -> None:
    store = from_dict({}, source=None).store
    assert (store.query_timeout_s, store.write_wait_s) == (60, 120)


def test_both_keys_are_read() -> None:
    raw = {"storage": {"path": "p.duckdb", "query_timeout": "5m", "write_wait": "1h"}}
    store = from_dict(raw, source=None).store
    assert (store.query_timeout_s, store.write_wait_s) == (300, 3600)


@pytest.mark.parametrize(
    ("storage", "key", "words"),
    [
        ({"query_timeout": "soon"}, "storage.query_timeout", "not a duration"),
        ({"query_timeout": 60}, "storage.query_timeout", "not a duration"),
        ({"write_wait": "0s"}, "storage.write_wait", ""),
        ({"write_wait": "2d"}, "storage.write_wait", ""),
        ({"query_timeout": "2m", "write_wait": "2m"}, "storage.write_wait", "longer than"),
        ({"query_timeout": "10m"}, "storage.write_wait", "longer than"),
        ({"write_wiat": "2m"}, "storage.write_wiat", ""),
    ],
)
def test_bad_values_name_the_key(storage: dict[str, object], key: str, words: str) -> None:
    with pytest.raises(ConfigError) as raised:
        from_dict({"storage": storage}, source=None)
    assert key in str(raised.value) and words in str(raised.value)
