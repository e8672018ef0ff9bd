"""A JSON document read piece by piece from a text stream, never held whole.

The Savings Plans offer files are JSON of hundreds of megabytes: one object with a `products`
list and a `terms.savingsPlan` list whose plans each list thousands of `rates`. `JsonStream`
walks the containers a caller names (`members` of an object, `items` of an array) and decodes
every value it is asked for whole, with the C decoder of the standard library (`raw_decode`),
so a rate costs one decoder call and the walk stays close to a plain `json.load` of the file.

`read(n)` gives what has arrived (at most n characters, "" at the end), so each piece is walked
as soon as it is in. A value that reaches past the text read so far is decoded again once at
least as much text again is in, so a long value costs no more than about twice its own
decoding. A single value larger than `MAX_VALUE` characters is not an offer file's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

CHUNK = 1 << 20  # characters per read
MAX_VALUE = 32 << 20  # no value walked comes near: a rate or a product is a few hundred
# A partial literal or number at the end of the text read fails this close to its end.
_TAIL = 64
_SPACE = re.compile(r"[ \t\n\r]*")
_COMMA = re.compile(r"[ \t\n\r]*,[ \t\n\r]*")
_DECODER = json.JSONDecoder()


class JsonShapeError(ValueError):
    """The text is not JSON, or not the shape the caller walks."""


class JsonStream:
    """Pull-style reader: `members()` / `items()` iterate a container, and the caller takes
    each member's or item's value with `value()`, `skip()` or a nested iteration."""

    def __init__(self, read: Callable[[int], str]) -> None:
        self._read = read
        self._text = ""
        self._at = 0
        self._ended = False
        self.consumed = 0  # characters read so far (for progress and tests)

    def members(self) -> Iterator[str]:
        """The keys of the object that starts here, in order; the caller reads each value."""
        self._expect("{")
        if self._peek() == "}":
            self._at += 1
            return
        while True:
            key = self.value()
            if not isinstance(key, str):
                raise JsonShapeError("an object key is not a string")
            self._expect(":")
            yield key
            if self._separator("}"):
                return

    def items(self) -> Iterator[None]:
        """Once per element of the array that starts here; the caller reads each element."""
        self._expect("[")
        if self._peek() == "]":
            self._at += 1
            return
        while True:
            yield None
            if self._separator("]"):
                return

    def values(self) -> Iterator[Any]:
        """Each element of the array that starts here, decoded. The walk over a Savings Plans
        file's rates: elements wholly in the text read are taken in a tight loop (one C call
        and one separator match each); one cut short by the end of the text goes the way of
        `items` and `value`."""
        self._expect("[")
        if self._peek() == "]":
            self._at += 1
            return
        scan: Callable[[str, int], tuple[Any, int]] = _DECODER.scan_once  # type: ignore[attr-defined]
        comma = _COMMA.match
        while True:
            self._peek()
            text, at = self._text, self._at
            # Stop one element short of the end: a number there may go on in the next piece.
            limit = len(text) - _TAIL
            while at < limit:
                try:
                    found, end = scan(text, at)
                except (StopIteration, json.JSONDecodeError):
                    break  # not JSON, or cut short: the careful way below tells which
                except RecursionError:
                    raise JsonShapeError("nested too deeply") from None
                after = comma(text, end)
                if after is None or after.end() >= limit:
                    break
                self._at = at = after.end()
                yield found
            yield self.value()
            if self._separator("]"):
                return

    def value(self) -> Any:
        """The whole value that starts here, decoded."""
        self._peek()
        while True:
            try:
                found, end = _DECODER.raw_decode(self._text, self._at)
            except json.JSONDecodeError as exc:
                if self._ended or not _cut_short(exc, len(self._text)):
                    raise JsonShapeError(f"not JSON: {exc.msg}") from None
                self._more()
                continue
            except RecursionError:
                raise JsonShapeError("nested too deeply") from None
            # A number at the end of the text read may go on in the next piece.
            if end == len(self._text) and not self._ended:
                self._more()
                continue
            self._at = end
            return found

    def skip(self) -> None:
        """Past the value that starts here (decoded, then dropped)."""
        self.value()

    def kind(self) -> str:
        """The first character of the value that starts here: '{', '[', '"', ..."""
        return self._peek()

    # -- the text -------------------------------------------------------------------------

    def _peek(self) -> str:
        while True:
            self._at = _SPACE.match(self._text, self._at).end()  # type: ignore[union-attr]
            if self._at < len(self._text):
                return self._text[self._at]
            if self._ended:
                raise JsonShapeError("the text ends inside the document")
            self._more()

    def _expect(self, char: str) -> None:
        if self._peek() != char:
            raise JsonShapeError(f"expected {char!r} at character {self.consumed + self._at}")
        self._at += 1

    def _separator(self, close: str) -> bool:
        """Past a ',' (False: another member follows) or the closing `close` (True)."""
        char = self._peek()
        self._at += 1
        if char == close:
            return True
        if char != ",":
            raise JsonShapeError(f"expected ',' or {close!r}, found {char!r}")
        return False

    def _more(self) -> None:
        """More text after what is kept: at least as much as the value cut short so far, so a
        long value is decoded again a few times at most, not once per piece."""
        kept = len(self._text) - self._at
        if kept > MAX_VALUE:
            raise JsonShapeError(f"a value longer than {MAX_VALUE} characters")
        pieces = [self._text[self._at :]]
        added = 0
        while not added or added < kept:
            piece = self._read(CHUNK)
            if not piece:
                self._ended = True
                break
            pieces.append(piece)
            added += len(piece)
        self.consumed += self._at
        self._text = "".join(pieces)
        self._at = 0


def _cut_short(error: json.JSONDecodeError, length: int) -> bool:
    """Whether the decoder failed because the text read so far stops inside the value (more
    text may complete it), not because the value is not JSON."""
    return error.msg.startswith("Unterminated string") or error.pos >= length - _TAIL
