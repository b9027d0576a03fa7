"""Requests refused on their shape, before auth or any route: a Host header that names no
host, an id segment that hides a slash, and a dot segment however it is encoded.

Both would otherwise fail later and less clearly: a bad Host makes the request's URL
unparseable wherever it is rebuilt (a 503 and a traceback per request), and `a%2Fb` is decoded
to `a/b` before routing, so it matches no route (a generic 404 instead of `invalid_id`).
A segment that is `.` or `..` once decoded, once or twice (`%2e%2e`, `%252e%252e`), is never
an id: a client that resolves it (as URL parsers do) addresses a parent path instead, and
`DELETE .../entities/./..` is the user's erasure.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

from starlette.datastructures import Headers

from entity_memory.domain.keys import InvalidId, validate_id

#: A Host header: a DNS-style name (letters, digits, `-`, `_`, `~`, dot-separated), an IPv4
#: address, or a bracketed IPv6 literal; optionally a port. No userinfo, path, spaces or `%`.
_HOST = re.compile(
    r"(?:[A-Za-z0-9_~-]+(?:\.[A-Za-z0-9_~-]+)*\.?|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?",
    re.ASCII,
)
#: Which id each segment of a `/v1/users/...` path is, by (segment after the user, position).
_ID_SEGMENTS = {("entities", 3): "entity", ("sessions", 2): "session", ("jobs", 2): "job"}
#: Decodings a dot segment is looked for under (a client or proxy may decode twice).
_DECODINGS = 3


def host_problem(headers: Headers) -> str | None:
    """Why the request's Host header is unusable, or None (an absent Host is HTTP/1.0's)."""
    hosts = headers.getlist("host")
    if not hosts:
        return None
    if len(hosts) > 1:
        return "more than one Host header"
    if not _HOST.fullmatch(hosts[0]):
        return f"Host header {hosts[0][:100]!r} is not a host[:port]"
    return None


def is_dot_segment(segment: str) -> bool:
    """Whether a path segment is `.` or `..` once percent-decoded up to three times."""
    for _ in range(_DECODINGS):
        if segment in (".", ".."):
            return True
        if "%" not in segment:
            return False
        segment = unquote(segment)
    return segment in (".", "..")


def check_path_ids(raw_path: str) -> None:
    """Raise `InvalidId` for a dot segment anywhere under `/v1`, and for an id segment of a
    user path that decodes to one with a slash (or any other character an id may not hold);
    other segments are the router's."""
    parts = raw_path.split("/")
    if parts[:2] != ["", "v1"]:
        return
    for position, segment in enumerate(parts[2:]):
        if is_dot_segment(segment):
            kind = _kind(parts[3:], position - 1) if parts[2] == "users" else None
            raise InvalidId(kind or "path", segment, "a dot segment is not an id")
    if parts[2] != "users" or len(parts) < 4:
        return
    segments = parts[3:]
    for position, segment in enumerate(segments):
        if "%" not in segment:
            continue
        kind = _kind(segments, position)
        if kind is not None:
            validate_id(unquote(segment), kind)


def _kind(segments: list[str], position: int) -> str | None:
    """Which id `segments[position]` of a `/v1/users/...` path is (None: not an id)."""
    if position == 0:
        return "user"
    if position < 0 or len(segments) < 2:
        return None
    return _ID_SEGMENTS.get((segments[1], position))
