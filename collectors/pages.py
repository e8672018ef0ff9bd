"""Page loops, declared: how a list answer names its next page, and how many pages are enough.

A collector says which paginator its API uses and asks for each page itself (its own request,
its own error names); `walk` does the loop, so the page cap is declared once per list rather
than written into every loop. In the spirit of dlt's paginators:

- `NextLink`: each page carries the next one's URL (Azure's `NextPageLink`, an ORDS `links`
  entry), followed as given.
- `Cursor`: each page carries a token the next request sends back (Vultr's `meta.links.next`,
  Alibaba's `NextToken`).
- `Offset`: each page says where the next one starts (Alibaba's `NextOffset`).

A position is what the next request needs (a URL, a token, an offset); the first request has
none (None), and a paginator that finds no next position ends the walk.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

import requests

from collectors.http import get_json

P = TypeVar("P")
P_co = TypeVar("P_co", covariant=True)
# (page, its number) -> the next position, None on the last page; raises on one not understood.
Reader = Callable[[Any, int], P | None]


class Paginator(Protocol[P_co]):
    def following(self, page: Any, number: int, position: Any) -> P_co | None:
        """The position of the page after `page` (number `number`, asked at `position`)."""
        ...


@dataclass(frozen=True)
class NextLink:
    """The next page's URL is in the page."""

    link: Reader[str]

    def following(self, page: Any, number: int, position: str | None) -> str | None:
        return self.link(page, number)


@dataclass(frozen=True)
class Cursor:
    """The next page's token is in the page; with `stuck`, the same token twice (a loop that
    would cut the list short) raises what `stuck` makes of the page number."""

    token: Reader[str]
    stuck: Callable[[int], Exception] | None = None

    def following(self, page: Any, number: int, position: str | None) -> str | None:
        token = self.token(page, number)
        if token is not None and token == position and self.stuck is not None:
            raise self.stuck(number)
        return token


@dataclass(frozen=True)
class Offset:
    """The next page's offset is in the page; an empty page, or an offset that does not move
    forward, is the last one."""

    offset: Reader[int]
    items: Callable[[Any], int]

    def following(self, page: Any, number: int, position: int | None) -> int | None:
        after = self.offset(page, number)
        if not self.items(page) or after is None or after <= (position or 0):
            return None
        return after


@dataclass(frozen=True)
class Cap(Generic[P]):
    """A list's paginator and its page cap: page `most + 1` is never asked; `too_many(most)` is
    the error raised instead (a next link or cursor that never ends must not hang the daemon).
    The error is given the cap, so its message cannot name another number."""

    paginator: Paginator[P]
    most: int
    too_many: Callable[[int], Exception]

    def walk(self, ask: Callable[[int, P | None], Any]) -> Iterator[tuple[int, Any]]:
        """(number, page) of every page, `ask(number, position)` fetching each."""
        position: P | None = None
        number = 0
        while True:
            number += 1
            if number > self.most:
                raise self.too_many(self.most)
            page = ask(number, position)
            yield number, page
            position = self.paginator.following(page, number, position)
            if position is None:
                return


def linked_json(
    session: requests.Session,
    provider: str,
    first: str,
    params: dict[str, Any],
    *,
    timeout: float,
    what: Callable[[int], str],
    auth_hint: str | None = None,
) -> Callable[[int, str | None], Any]:
    """The `ask` of a NextLink walk over a JSON API: page 1 at `first` with `params`, the others
    at their links as given (a link carries the query it needs)."""

    def ask(number: int, link: str | None) -> Any:
        return get_json(
            session,
            provider,
            link or first,
            timeout=timeout,
            what=what(number),
            auth_hint=auth_hint,
            params=None if link else params,
        )

    return ask
