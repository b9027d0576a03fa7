"""Deleting one entity: its document, a `deleted` version in the ledger, its index entry.

A retry after a failed ledger write finds KV's document already gone while the ledger still
has the entity live: the deletion is recorded then, and counts as done.
"""

from __future__ import annotations

from entity_memory.domain.keys import entity_key
from entity_memory.storage.store import EntityStore


async def remove_entity(store: EntityStore, user_id: str, entity_type: str, entity_id: str) -> bool:
    """Delete the entity and its index entry; False if neither existed."""
    key = entity_key(user_id, entity_type, entity_id)
    existed, held = await store.delete_document(key)
    ledger = store.ledger
    if existed and ledger is not None:
        version = held.version if held is not None else 0  # (one that no longer validates)
        await ledger.write(
            [
                ledger.removal_statement(
                    user_id, entity_type, entity_id, version, "deleted", store.clock()
                )
            ]
        )
    elif ledger is not None:
        # A retry after a failed ledger write: KV already lost the entity, the ledger not.
        last = (await ledger.latest(user_id, [(entity_type, entity_id)])).get(
            (entity_type, entity_id)
        )
        if last is not None and last[1] not in ("deleted", "expired"):
            await ledger.write(
                [
                    ledger.removal_statement(
                        user_id, entity_type, entity_id, last[0], "deleted", store.clock()
                    )
                ]
            )
            existed = True
    index = await store.read_index(user_id)
    kept = [e for e in index.entries if not (e.type == entity_type and e.id == entity_id)]
    if len(kept) != len(index.entries):
        await store.write_index(user_id, index.model_copy(update={"entries": kept}))
        return True
    return existed
