"""Erasure: delete everything KV and the ledger hold of a user.

Keys are found by listing KV, not from the index (which may have lost entries). A Worker
invocation may make about 1,000 KV operations, so one call deletes at most `max_keys` keys
and says `complete: false` when the caller must call again.
"""

from __future__ import annotations

from typing import Any

from entity_memory.storage.store import EntityStore

#: KV deletes one call makes at most (a Worker invocation allows about 1,000 operations).
MAX_KEYS_PER_CALL = 900


async def forget_user(
    store: EntityStore, user_id: str, max_keys: int = MAX_KEYS_PER_CALL
) -> dict[str, Any]:
    """Delete the user's KV keys and, once none is left, the index and the ledger rows."""
    keys = await store.entity_keys(user_id)
    batch, complete = keys[:max_keys], len(keys) <= max_keys
    await store.delete_keys(batch)
    result: dict[str, Any] = {"kvKeysDeleted": len(batch), "complete": complete}
    if complete:
        if await store.delete_index(user_id):
            result["kvKeysDeleted"] += 1
        if store.ledger is not None:
            result["ledgerRowsDeleted"] = await store.ledger.forget_user(user_id)
    return result
