"""Repairs a user can ask for (the cron does the same for recently written users)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from entity_memory.http.deps import StoreDep, UserId
from entity_memory.http.schemas import ExpiredBody, ExpiredDropped, Reindexed
from entity_memory.service import expiry
from entity_memory.service import reindex as reindexing

router = APIRouter(tags=["maintenance"])


@router.post("/v1/users/{user_id}/reindex", response_model=Reindexed)
async def reindex(user_id: UserId, store: StoreDep) -> dict[str, Any]:
    """Rebuild the user's index from the entity keys KV holds."""
    return await reindexing.reindex(store, user_id)


@router.post("/v1/users/{user_id}/expired", response_model=ExpiredDropped)
async def drop_expired(user_id: UserId, body: ExpiredBody, store: StoreDep) -> dict[str, Any]:
    """Forget index entries whose entities expired. Context requests send what they find
    here, to the user's writer, which owns the index; each entity is checked again."""
    refs = [(e.type, e.id) for e in body.entities]
    return {"dropped": await expiry.drop_expired(store, user_id, refs)}
