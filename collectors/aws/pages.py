"""AWS API answers as payloads: every page of a paginated boto3 call, kept as JSON.

`Pages.walk` follows a paginator to its last page, turning botocore's errors into the
collector's own (a FetchError naming the call, the subject and the page; a PayloadShapeError for
an answer of another shape) and the parsed pages into JSON-able payloads (timestamps as ISO
8601 strings), reporting progress after every page. `pages_of` reads them back by kind.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError
from botocore.parsers import ResponseParserError

from collectors.base import Payloads
from collectors.common import FetchError, PayloadShapeError

# boto3 method -> (API name for messages, the list each page carries).
CALLS = {
    "get_products": ("GetProducts", "PriceList"),
    "describe_spot_price_history": ("DescribeSpotPriceHistory", "SpotPriceHistory"),
    "describe_instance_types": ("DescribeInstanceTypes", "InstanceTypes"),
}
# ResponseParserError (a garbled answer) is not a BotoCoreError.
BOTO_ERRORS = (BotoCoreError, ClientError, ResponseParserError)


class Pages:
    """Follows every page of paginated calls into one payloads dict, reporting progress."""

    def __init__(self, progress: Callable[[int, int], None]) -> None:
        self.payloads: Payloads = {}
        self.items = 0
        self._progress = progress

    def walk(self, client: Any, method: str, prefix: str, query: dict[str, Any]) -> None:
        api, result_key = CALLS[method]
        subject = prefix.split("/", 1)[1]
        pages = iter(client.get_paginator(method).paginate(**query))
        for number in itertools.count(1):
            try:
                page = next(pages, None)
            except BOTO_ERRORS as exc:
                raise FetchError("aws", f"{api} {subject} page {number}: {exc}") from exc
            except (RecursionError, AttributeError, TypeError) as exc:
                # botocore's parser and paginator meet an answer of another shape (a list,
                # null, JSON nested too deeply) with these, not with an error of their own.
                raise PayloadShapeError(
                    "aws", f"{api} {subject} page {number}: the answer is not in the API's shape"
                ) from exc
            if page is None:
                return
            if not isinstance(page, dict):
                raise PayloadShapeError("aws", f"{api} {subject} page {number}: not an object")
            page.pop("ResponseMetadata", None)
            self.payloads[f"{prefix}/page-{number}"] = _jsonable(page)
            found = page.get(result_key)
            self.items += len(found) if isinstance(found, list) else 0
            self._progress(len(self.payloads), self.items)


def _jsonable(value: Any) -> Any:
    """boto3 parses timestamps into datetimes; payloads keep them as ISO-8601 strings."""
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    return value.isoformat() if isinstance(value, datetime) else value


def pages_of(payloads: Payloads, kind: str) -> Iterator[tuple[str, Any]]:
    for key, page in payloads.items():
        if key == "source" or key.startswith("public/"):  # see collectors.aws.source
            continue
        if key.split("/")[0] not in ("pricing", "spot", "types") or key.count("/") != 2:
            raise PayloadShapeError("aws", f"{key}: not a pricing/..., spot/... or types/... page")
        if key.startswith(kind + "/"):
            yield key, page
