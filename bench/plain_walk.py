"""Baseline for bench_collect: a plain `requests` walk that only fetches and parses the pages."""

from __future__ import annotations

import sys

import requests


def main(url: str) -> None:
    items = 0
    next_url: str | None = url
    params: dict[str, str] | None = {"api-version": "2023-01-01-preview"}
    with requests.Session() as session:
        while next_url:
            page = session.get(next_url, params=params, timeout=30).json()
            items += len(page["Items"])
            next_url, params = page.get("NextPageLink"), None
    print(items)


if __name__ == "__main__":
    main(sys.argv[1])
