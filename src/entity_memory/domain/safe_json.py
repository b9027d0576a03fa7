"""JSON that cannot take the process down: nesting depth is bounded before parsing.

CPython's and Pyodide's `json` parse nested arrays and objects recursively; a 12 KB body of
`[` 6,000 deep exhausts Pyodide's stack and kills the isolate for every user. So every JSON
document from outside (request bodies, whatever their content type, and LLM replies) is
measured first, in time linear in its length, with no step that backtracks (a string regex
that backtracks took 11 s on 32 KB of `\\"` and would have taken hours on 1 MiB):

1. the bytes are read in the encoding `json.loads` would detect (UTF-16 and UTF-32 too, else a
   UTF-16 code unit holding a `"` byte would hide brackets from this check and not from it);
2. escapes are dropped (`\\\\` pairs first, then `\\"`), so every `"` left delimits a string,
   and splitting on `"` drops every string's content (an unterminated one runs to the end, as
   the parser would read it);
3. what is left is reduced to its brackets, and one regular expression of the bounded-depth
   Dyck language, with possessive repeats only, takes every balanced group nested at most
   `MAX_JSON_DEPTH` deep. Where it stops at an opening bracket (a group too deep, or never
   closed), that bracket counts as one level and the next pass allows one level less; more
   than `MAX_JSON_DEPTH` such levels is too deep. An unmatched closing bracket at the top is
   where the parser stops with an error, so nothing after it is parsed. Each byte is read
   once (a pass resumes where the last stopped); a pattern is compiled once per depth.

A document passes when no prefix the parser could reach nests deeper than the limit; one that
passes may still be invalid JSON (the parser says so, without recursing deeper).
"""

from __future__ import annotations

import json
import re
from functools import cache
from typing import Any

#: Deeper than any document this service reads (entity metadata is 3 levels).
MAX_JSON_DEPTH = 64
#: The largest integer JSON numbers keep exactly in JavaScript, KV metadata and D1 (2^53).
MAX_SAFE_INTEGER = 2**53

_OPEN, _CLOSE = b"(", b")"
#: `[` and `{` open, `]` and `}` close; every other byte is dropped.
_BRACKETS = bytes.maketrans(b"[{]}", _OPEN * 2 + _CLOSE * 2)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


class JsonTooDeep(ValueError):
    """The document nests deeper than `MAX_JSON_DEPTH`."""


@cache
def _balanced(depth: int) -> re.Pattern[bytes]:
    """Any run of balanced groups nested at most `depth` deep (possessive: linear time).
    Compiled once per depth, when a document first needs it."""
    pattern = b""
    for _ in range(depth):
        pattern = rb"(?:\(" + pattern + rb"\))*+"
    return re.compile(pattern)


def _utf8(data: bytes) -> bytes:
    """`data` as UTF-8, decoded the way `json.loads` decodes bytes."""
    encoding = json.detect_encoding(data)
    if encoding in ("utf-8", "utf-8-sig"):
        return data
    return data.decode(encoding, "replace").encode("utf-8", "surrogatepass")


def _brackets(data: bytes) -> bytes:
    """The brackets outside strings, as `(` and `)`."""
    unescaped = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    outside = b"".join(unescaped.split(b'"')[::2])
    return outside.translate(_BRACKETS, _NOT_BRACKETS)


def nesting_exceeds(raw: bytes | str, max_depth: int = MAX_JSON_DEPTH) -> bool:
    """Whether a parser reading `raw` as JSON could nest more than `max_depth` levels."""
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else _utf8(raw)
    if data.count(b"[") + data.count(b"{") <= max_depth:
        return False
    brackets = _brackets(data)
    position, depth = 0, 0
    while True:
        # Every balanced group that fits in the depth left, in one possessive pass.
        position = _balanced(max_depth - depth).match(brackets, position).end()
        if position == len(brackets):
            return False
        if brackets[position] == _CLOSE[0]:
            if depth == 0:
                return False  # an unmatched closing bracket: the parser stops there
            depth -= 1  # closes a level counted below (a group the pass could not take)
        else:
            depth += 1  # an opening whose group is too deep, or never closes
            if depth > max_depth:
                return True
        position += 1


def check_depth(raw: bytes | str, max_depth: int = MAX_JSON_DEPTH) -> None:
    """Raise `JsonTooDeep` when `raw` nests more than `max_depth` arrays/objects."""
    if nesting_exceeds(raw, max_depth):
        raise JsonTooDeep(f"JSON nests deeper than {max_depth} levels")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def loads(raw: bytes | str, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """`json.loads` after the depth check; NaN and Infinity are rejected (JSON has neither)."""
    check_depth(raw, max_depth)
    return json.loads(raw, parse_constant=_reject_constant)
