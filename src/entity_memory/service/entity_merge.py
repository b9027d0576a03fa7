"""Edits and merges that name the version they saw: optimistic concurrency for the
inspector (and any client that reads, changes and writes back).

An edit re-sends an entity as the page loaded it; without a check it would silently undo a
write made since (an agent's newer value, recorded as a contradiction). A write may name the
version it saw of each entity (`ExpectedVersion`: 0 for "must not exist"); the writer
compares them under its lock, and a stale one is refused (`VersionConflict`, 409), nothing
written.

A merge of two entities of one type is one write in the user's writer: both are read, their
versions checked, the kept one written with the other's name, aliases and the facts it lacks,
and the other deleted, all under the writer's lock. Two opposite merges at once (A into B,
B into A) are serialised: the second finds its kept entity gone and is refused (404), so
one of them always remains. The kept entity's version is written under a session id that says what
was merged in (`MERGE_SESSION_PREFIX` + the other's id); no other write may use that prefix
(`ReservedSession`), so a page can trust it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict

from entity_memory.domain.keys import MAX_ID_LENGTH, entity_key, validate_id, validate_type
from entity_memory.domain.kinds import registered_input_adapter
from entity_memory.domain.models import MAX_ALIASES, BaseEntity, EntityInputBase
from entity_memory.domain.text import normalize_name
from entity_memory.service.batch_upsert import UpsertStore, upsert_batch
from entity_memory.service.entity_removal import remove_entity
from entity_memory.storage.store import EntityStore

#: The session id prefix of a merge's write: `inspector-merge.<the merged entity's id>`.
MERGE_SESSION_PREFIX = "inspector-merge."
#: Characters of a hash that stands in for the end of an id too long to follow the prefix.
_ID_HASH_CHARS = 12
#: Metadata of an entity that is its record, not a fact to carry over in a merge.
_RECORD_METADATA = frozenset({"history", "provenance"})


class ExpectedVersion(BaseModel):
    """The version of an entity a write was based on (0: the entity must not exist yet)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: str
    id: str
    version: int


class VersionConflict(Exception):
    """An entity is no longer at the version the write was based on."""

    def __init__(self, entity_type: str, entity_id: str, expected: int, current: int) -> None:
        super().__init__(
            f"{entity_type} {entity_id!r} is at version {current}, not {expected}: it changed"
            " since it was read; read it again and redo the change"
        )
        self.entity_type, self.entity_id = entity_type, entity_id
        self.expected, self.current = expected, current


class NoSuchEntity(LookupError):
    def __init__(self, entity_type: str, entity_id: str) -> None:
        super().__init__(f"no {entity_type} {entity_id!r}")


class ReservedSession(ValueError):
    """A session id under the merge prefix, sent by a write that is not a merge."""

    def __init__(self, session_id: str) -> None:
        super().__init__(
            f"session ids starting with {MERGE_SESSION_PREFIX!r} are written by merges only"
            f" (got {session_id!r})"
        )


class InvalidMerge(ValueError):
    pass


def refuse_reserved(session_id: str) -> None:
    if session_id.startswith(MERGE_SESSION_PREFIX):
        raise ReservedSession(session_id)


def merge_session_id(other_id: str) -> str:
    """The merge's session id: the prefix and the merged entity's id, or, for an id too long
    to follow the prefix within an id's length, its start and a hash of the whole."""
    session = MERGE_SESSION_PREFIX + other_id
    if len(session) <= MAX_ID_LENGTH:
        return session
    digest = hashlib.sha256(other_id.encode()).hexdigest()[:_ID_HASH_CHARS]
    room = MAX_ID_LENGTH - len(MERGE_SESSION_PREFIX) - len(digest) - 1
    return f"{MERGE_SESSION_PREFIX}{other_id[:room]}+{digest}"


async def check_versions(
    store: UpsertStore, user_id: str, expected: Sequence[ExpectedVersion]
) -> None:
    """Raise `VersionConflict` for the first entity not at the version expected of it."""
    if not expected:
        return
    keys = [entity_key(user_id, e.type, validate_id(e.id, "entity")) for e in expected]
    found = await store.get_many(keys)
    for key, want in zip(keys, expected, strict=True):
        entity = found.get(key)
        current = 0 if entity is None else entity.version
        if current != want.version:
            raise VersionConflict(want.type, want.id, want.version, current)


@dataclass
class Merged:
    entity: BaseEntity
    other: BaseEntity
    session_id: str
    #: The other's name and aliases that did not fit the kept entity's `MAX_ALIASES`.
    dropped_aliases: list[str]


async def merge_into(
    store: EntityStore,
    user_id: str,
    entity_type: str,
    keep: ExpectedVersion,
    other: ExpectedVersion,
) -> Merged:
    """Merge `other` into `keep` (both of `entity_type`, each at the version given), then
    delete `other`. Run inside the user's writer: nothing can write between the reads and
    the writes."""
    validate_type(entity_type)
    if keep.id == other.id:
        raise InvalidMerge("an entity cannot be merged into itself")
    keys = [entity_key(user_id, entity_type, validate_id(e.id, "entity")) for e in (keep, other)]
    found = await store.get_many(keys)
    kept, gone = found[keys[0]], found[keys[1]]
    # A missing entity is not found whatever version the page named: "at version 0, not 3"
    # would send the client to re-read something that is gone.
    if kept is None or gone is None:
        raise NoSuchEntity(entity_type, keep.id if kept is None else other.id)
    for entity, want in ((kept, keep), (gone, other)):
        if entity.version != want.version:
            raise VersionConflict(entity_type, want.id, want.version, entity.version)
    item, dropped = merged_input(kept, gone)
    session_id = merge_session_id(gone.id)
    [result] = await upsert_batch(store, user_id, [item], session_id)
    await remove_entity(store, user_id, entity_type, gone.id)
    return Merged(result.entity, gone, session_id, dropped)


def merged_input(keep: BaseEntity, other: BaseEntity) -> tuple[EntityInputBase, list[str]]:
    """The write that makes `keep` hold `other` too: its name and aliases as aliases (after
    the kept entity's own, which stay: the names it is already found by), its facts where
    `keep` has none, the higher importance. Aliases past `MAX_ALIASES` are left out, the
    other's name first in line, and returned."""
    doc = keep.to_json_dict()
    theirs = other.to_json_dict()
    meta: dict[str, Any] = {}
    for source in (theirs, doc):
        for key, value in (source.get("metadata") or {}).items():
            if key not in _RECORD_METADATA and value is not None:
                meta[key] = value
    seen = {normalize_name(keep.name), *(normalize_name(a) for a in keep.aliases)}
    offered: list[str] = []
    for alias in [other.name, *other.aliases]:
        norm = normalize_name(alias)
        if norm and norm not in seen:
            seen.add(norm)
            offered.append(alias)
    room = max(0, MAX_ALIASES - len(keep.aliases))
    item = {
        "type": keep.type,
        "id": keep.id,
        "name": keep.name,
        "content": keep.content or other.content,
        "importance": max(keep.importance, other.importance),
        "aliases": offered[:room],
        "metadata": meta,
    }
    return registered_input_adapter.validate_python(item), offered[room:]  # type: ignore[return-value]
