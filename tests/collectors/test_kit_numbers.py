"""The kit's number readers on what a hostile answer sends: never an exception, never a number
no API means (the probe's `1e308` and 30-digit integers failed whole providers)."""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

import pytest

from collectors import kit
from collectors.base import money


@pytest.mark.parametrize(
    "value",
    [
        1e308,
        -1e308,
        10**30,
        "1e308",
        "1" * 30,
        "9" * 5000,
        math.nan,
        math.inf,
        "NaN",
        "-Infinity",
        "sNaN",
        "abc",
        "",
        True,
        None,
        [],
        {},
        10**15,
    ],
)
def test_exact_refuses_what_is_no_number_an_api_means(value: Any) -> None:
    assert kit.exact(value, kit.NUMBERS_OR_TEXT) is None


@pytest.mark.parametrize(
    ("value", "expected"),
    [(27.197, "27.197"), ("0.0000001", "1E-7"), (10**15 - 1, "999999999999999"), (" 3 ", "3")],
)
def test_exact_keeps_what_the_api_wrote(value: Any, expected: str) -> None:
    assert kit.exact(value, kit.NUMBERS_OR_TEXT) == Decimal(expected)


def test_money_rounds_to_six_places_half_even() -> None:
    assert money(Decimal("0.0000005")) == Decimal("0.000000")
    assert money(Decimal("0.0000015")) == Decimal("0.000002")
    assert money(Decimal("1e-9")) == 0  # the store's validation refuses it: zero after rounding


def test_money_never_raises_on_an_amount_too_large_to_round() -> None:
    # 1e30 cannot be quantized to six places within Decimal's 28 digits: returned as it is,
    # for the store's validation to refuse, instead of decimal.InvalidOperation out of a parser.
    assert money(Decimal("1e30")) == Decimal("1e30")
    assert money(10**40) == 10**40


@pytest.mark.parametrize(
    ("value", "expected"),
    [(8, 8), (0, 0), (8.0, 8), (1.5, None), (-1, None), ("8", None), (True, None), (1e308, None)],
)
def test_count_is_whole_and_not_negative(value: Any, expected: int | None) -> None:
    assert kit.count(value) == expected


def test_count_reads_text_only_when_asked() -> None:
    assert kit.count("2", kit.NUMBERS_OR_TEXT) == 2 and kit.count("2") is None


@pytest.mark.parametrize("value", ["", "a b", "gpu\n", "x\x00", "n" * 101, 7, None, ["a"]])
def test_name_refuses_what_no_api_names(value: Any) -> None:
    assert kit.name(value) is None


def test_name_keeps_a_plain_one() -> None:
    assert kit.name("gpu-h100-sxm.8x") == "gpu-h100-sxm.8x" and kit.name("n" * 100) == "n" * 100
