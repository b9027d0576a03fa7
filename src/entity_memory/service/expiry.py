"""Expiry: index entries whose entity KV has let go (its TTL ran out).

KV expires entity documents by itself, but the index is one document the writer owns: an
expired entity's entry stays there until someone drops it. Context requests notice (the
chosen entity is missing); inside the user's writer they are dropped at once, outside it they
are reported to the writer (`ReportExpired`), which checks each again against KV itself.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from entity_memory.domain.keys import Ref, entity_key
from entity_memory.domain.kind import kind_of
from entity_memory.domain.models import EntityIndex, IndexEntry, RankEntry
from entity_memory.storage.store import EntityStore

#: Hands (user id, [(type, id), ...]) of entities found expired to whoever owns the index.
ReportExpired = Callable[[str, list[tuple[str, str]]], Awaitable[None]]

Entry = TypeVar("Entry", bound=RankEntry)


def expired_entries(store: EntityStore, entries: Sequence[Entry], missing: set[Ref]) -> list[Entry]:
    """The entries among `missing` (not found in KV) whose TTL has run out.

    An entry missing before its TTL ran out is left alone: that is a write this KV location
    has not seen yet (eventual consistency) or a concurrent delete, not an expiry.
    """
    if not missing:
        return []
    now = store.clock()
    return [
        e
        for e in entries
        if (e.type, e.id) in missing
        and e.updated_at + kind_of(e.type).ttl_seconds(store.settings) * 1000 <= now
    ]


async def remove_expired(
    store: EntityStore, user_id: str, index: EntityIndex, expired: Sequence[IndexEntry]
) -> None:
    """Forget these expired entries' index entries, and note each expiry in the ledger once
    (an expiry the ledger already holds as the entity's last change is not written again)."""
    now = store.clock()
    ledger = store.ledger
    if ledger is not None:
        latest = await ledger.latest(user_id, [(e.type, e.id) for e in expired])
        statements = [
            ledger.removal_statement(user_id, e.type, e.id, e.version, "expired", now)
            for e in expired
            if latest.get((e.type, e.id), (0, ""))[1] != "expired"
        ]
        await ledger.write(statements)
    gone = {(e.type, e.id) for e in expired}
    kept = [e for e in index.entries if (e.type, e.id) not in gone]
    await store.write_index(user_id, index.model_copy(update={"entries": kept}))


async def drop_expired(store: EntityStore, user_id: str, refs: Sequence[Ref]) -> int:
    """Forget the index entries among `refs` whose entity KV no longer holds and whose TTL
    has run out (what a context request reported); the number dropped. Each is checked
    again here, so a stale or repeated report changes nothing. Asked of KV itself: inside
    the writer, a document it once read from KV is trusted for a while, and may have expired
    in KV since."""
    keys = {ref: entity_key(user_id, *ref) for ref in dict.fromkeys(refs)}
    found = await store.replica_documents(list(keys.values()))
    return await forget_expired(
        store, user_id, {ref for ref, key in keys.items() if found.get(key) is None}
    )


async def forget_expired(store: EntityStore, user_id: str, missing: set[Ref]) -> int:
    """Drop the entries among `missing` (found absent from KV) whose TTL has run out, from
    the index as its owner holds it; the number dropped."""
    index = await store.read_index(user_id)
    expired = expired_entries(store, index.entries, missing)
    if expired:
        await remove_expired(store, user_id, index, expired)
    return len(expired)
