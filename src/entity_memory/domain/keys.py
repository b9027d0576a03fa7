"""The KV key layout and id validation, in one place.

Keys are `entity:<userId>:<type>:<id>` and `index:<userId>:entities` (SPEC). Every id that
reaches a key is checked here first: a `:` in an id would let one user address another user's
keys, so nothing builds a key without going through these functions.
"""

from __future__ import annotations

import hashlib
import re

from entity_memory.domain.kind import entity_types, is_kind
from entity_memory.domain.text import normalize_name

_ID_RE = re.compile(r"[A-Za-z0-9._@+-]{1,128}")
MAX_ID_LENGTH = 128


class InvalidId(ValueError):
    """An id that must not become part of a KV key."""

    def __init__(self, kind: str, value: object, reason: str) -> None:
        self.kind = kind
        self.value = value
        self.reason = reason
        super().__init__(f"invalid {kind} id {value!r}: {reason}")


class InvalidType(ValueError):
    def __init__(self, value: object) -> None:
        self.value = value
        super().__init__(
            f"unknown entity type {value!r}; expected one of {', '.join(entity_types())}"
        )


def validate_id(value: object, kind: str = "entity") -> str:
    """Return `value` if it is a safe id, else raise `InvalidId` saying why."""
    if not isinstance(value, str):
        raise InvalidId(kind, value, "must be a string")
    if not _ID_RE.fullmatch(value):
        if not value:
            reason = "must not be empty"
        elif len(value) > MAX_ID_LENGTH:
            reason = f"must be at most {MAX_ID_LENGTH} characters"
        else:
            reason = "may contain only ASCII letters, digits and . _ @ + -"
        raise InvalidId(kind, value, reason)
    if set(value) == {"."}:
        raise InvalidId(kind, value, "must not consist of dots only")
    return value


def validate_type(value: object) -> str:
    if not is_kind(value):
        raise InvalidType(value)
    return str(value)


def entity_key(user_id: str, entity_type: str, entity_id: str) -> str:
    return (
        f"entity:{validate_id(user_id, 'user')}:{validate_type(entity_type)}:"
        f"{validate_id(entity_id, 'entity')}"
    )


def entity_prefix(user_id: str) -> str:
    """Prefix of every entity key of one user (the trailing `:` keeps `ann` out of `anna`)."""
    return f"entity:{validate_id(user_id, 'user')}:"


def index_key(user_id: str) -> str:
    return f"index:{validate_id(user_id, 'user')}:entities"


def slug_for(name: str) -> str:
    """A stable id from a name: "Campaign Alpha" and "campaign  alpha" give `campaign-alpha`.

    Characters outside ASCII survive folding only as a hash suffix, so two names that differ
    only in non-Latin script never share a key, and the result always passes `validate_id`.
    """
    normalized = normalize_name(name)
    if not normalized:
        raise InvalidId("entity", name, "a name is needed to derive an id")
    ascii_part = "-".join(re.sub(r"[^a-z0-9]+", " ", normalized).split())
    needs_hash = not ascii_part or ascii_part.replace("-", " ") != normalized
    if len(ascii_part) > 100:
        ascii_part, needs_hash = ascii_part[:100].rstrip("-"), True
    if needs_hash:
        digest = hashlib.sha256(normalized.encode()).hexdigest()[:12]
        return f"{ascii_part}-{digest}" if ascii_part else f"h-{digest}"
    return ascii_part


#: An entity by (type, id): how the index, the writer's backlog and expiry refer to one.
Ref = tuple[str, str]
