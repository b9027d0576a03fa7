"""JSON that cannot take the process down: nesting depth is bounded before parsing.

CPython's and Pyodide's `json` parse nested arrays and objects recursively; a 12 KB body of
`[` 6,000 deep exhausts Pyodide's stack and kills the isolate for every user. So every JSON
document from outside (request bodies, LLM replies) is measured first, in C-speed passes:
strings are removed, every byte but brackets is deleted, and innermost bracket pairs are peeled
off `MAX_JSON_DEPTH` times. Anything left is deeper than allowed (or unbalanced, which the
parser would reject anyway).
"""

from __future__ import annotations

import json
import re
from typing import Any

#: Deeper than any document this service reads (entity metadata is 3 levels).
MAX_JSON_DEPTH = 64
#: The largest integer JSON numbers keep exactly in JavaScript, KV metadata and D1 (2^53).
MAX_SAFE_INTEGER = 2**53

_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_INNERMOST = re.compile(rb"\[\]|\{\}|\[\}|\{\]")


class JsonTooDeep(ValueError):
    """The document nests deeper than `MAX_JSON_DEPTH`."""


def check_depth(raw: bytes | str, max_depth: int = MAX_JSON_DEPTH) -> None:
    """Raise `JsonTooDeep` when `raw` nests more than `max_depth` arrays/objects."""
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    if data.count(b"[") + data.count(b"{") <= max_depth:
        return
    brackets = _STRING.sub(b"", data).translate(None, _NOT_BRACKETS)
    for _ in range(max_depth):
        if not brackets:
            return
        brackets, peeled = _INNERMOST.subn(b"", brackets)
        if not peeled:
            break
    if brackets:
        raise JsonTooDeep(f"JSON nests deeper than {max_depth} levels")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def loads(raw: bytes | str, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """`json.loads` after the depth check; NaN and Infinity are rejected (JSON has neither)."""
    check_depth(raw, max_depth)
    return json.loads(raw, parse_constant=_reject_constant)
