"""Reindex: rebuild a user's index from what KV holds, and backfill missing vectors.

Repairs what a lost index write or an expiry left behind. Entries still matching the old
index (same type, id and updatedAt) are kept as they are; only entities the index lost, and
entries an older version wrote (without `days`), are read, in bulk, to rebuild their ranking
keywords, links and days. The old index is the one readers see in KV
(`replica_index`), not the writer's own copy: that is what a lost write leaves wrong.
"""

from __future__ import annotations

from entity_memory.domain.index_entries import index_entry_for
from entity_memory.domain.keys import entity_key, entity_prefix
from entity_memory.domain.links import link_entries
from entity_memory.domain.models import EntityIndex, IndexEntry
from entity_memory.storage.index_vectors import drop_vectors
from entity_memory.storage.kv import MAX_BULK_GET_KEYS
from entity_memory.storage.store import EntityStore


async def reindex(store: EntityStore, user_id: str) -> dict[str, int]:
    """Rebuild the index from the user's entity keys; what changed, counted."""
    previous = await store.replica_index(user_id)
    old = {(e.type, e.id): e for e in previous.entries}
    entries: list[IndexEntry] = []
    to_fetch: list[str] = []
    for key in await store.list_keys(entity_prefix(user_id)):
        _, _, entity_type, entity_id = key.name.split(":", 3)
        meta = key.metadata or {}
        known = old.get((entity_type, entity_id))
        if known is not None and known.updated_at == meta.get("updatedAt") and known.days:
            entries.append(known)
        else:
            to_fetch.append(key.name)
    fetched = await store.get_many(to_fetch)
    written = [(index_entry_for(e), e) for e in fetched.values() if e is not None]
    entries += [entry for entry, _ in written]
    link_entries(entries, written)
    entries.sort(key=lambda e: (e.updated_at, e.type, e.id))
    new_ids = {(e.type, e.id) for e in entries}
    rebuilt = previous.model_copy(update={"entries": entries})
    stats = {
        "entries": len(entries),
        "restored": len(new_ids - set(old)),
        "dropped": len(set(old) - new_ids),
        "refreshed": len(to_fetch) - len(new_ids - set(old)),
    }
    if store.embedder is not None:
        stats["embedded"] = await backfill_vectors(store, user_id, rebuilt)
    if any(count for name, count in stats.items() if name != "entries"):
        await store.write_index(user_id, rebuilt)
    return stats


async def backfill_vectors(store: EntityStore, user_id: str, index: EntityIndex) -> int:
    """Give every entry without a vector one (bulk reads of 100, one AI call each)."""
    if store.embedder is None:
        return 0
    if index.vector_model != store.embedder.model.name:
        drop_vectors(index)
    missing = [e for e in index.entries if e.vec is None]
    keys = [entity_key(user_id, e.type, e.id) for e in missing]
    given: dict[tuple[str, str], str] = {}
    for start in range(0, len(keys), MAX_BULK_GET_KEYS):
        chunk = keys[start : start + MAX_BULK_GET_KEYS]
        found = [e for e in (await store.get_many(chunk)).values() if e is not None]
        vectors = await store.vectors_for(index, found)
        if not vectors:
            break  # the model failed: the rest keep ranking lexically
        given.update(vectors)
    # New entries, not changed ones: entries may be shared with the writer's held copy.
    index.entries = [
        e.model_copy(update={"vec": given[(e.type, e.id)]}) if (e.type, e.id) in given else e
        for e in index.entries
    ]
    return len(given)
