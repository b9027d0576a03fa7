"""The service's id rule, checked before any URL is built: the one validator the client, the
CLI and the MCP server share.

An id goes into a URL path segment. `.` and `..` there are dot segments, which every URL
parser resolves: `delete(".", "..")` would build `/entities/./..`, sent as `DELETE
/v1/users/<user>`, the user's erasure. The service refuses such ids too (its domain/keys.py
holds the same rule; this package must not import the server), but only what reaches it.
"""

from __future__ import annotations

import re

#: User, entity, session and job ids: 1 to 128 ASCII letters, digits and `. _ @ + -`, not only
#: dots (so never a dot segment, and nothing percent-encoding could turn into one).
ID_PATTERN = re.compile(r"[A-Za-z0-9._@+-]{1,128}")
ENTITY_TYPES = ("campaign", "metric", "decision", "pain_point", "preference")


def id_problem(value: object, kind: str = "entity") -> str | None:
    """Why `value` is not an id the service accepts, or None when it is."""
    if not isinstance(value, str) or not ID_PATTERN.fullmatch(value) or set(value) == {"."}:
        return (
            f"invalid {kind} id {value!r}: 1 to 128 ASCII letters, digits and . _ @ + -"
            " (not only dots)"
        )
    return None


def type_problem(value: object) -> str | None:
    """Why `value` is not one of the five entity types, or None when it is."""
    if value not in ENTITY_TYPES:
        return f"unknown entity type {value!r}; expected one of {', '.join(ENTITY_TYPES)}"
    return None


def has_dot_segment(path: str) -> bool:
    """Whether a URL path holds a `.` or `..` segment (the last check before sending)."""
    return any(segment in (".", "..") for segment in path.split("/"))
